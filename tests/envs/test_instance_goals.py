"""Instance variants and goals: looks, worlds, goal modalities, success and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from embodmem.envs.camera import Camera, WaterLook, pad_kinds
from embodmem.envs.goals import goal_instance, instance_pixels
from embodmem.envs.objects import KIND_VARIANTS, LOOK_KIND, TARGET_KINDS, VARIANTS, get_variant
from embodmem.envs.spec import Action
from embodmem.envs.tasks import INSTANCE_GOALS, SEQUENCES, get_task
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.envs.world import generate_world

WORLD = 1003  # dev split


def test_every_target_kind_has_three_named_variants() -> None:
    for kind in TARGET_KINDS:
        variants = KIND_VARIANTS[kind]
        assert len(variants) >= 3
        assert len({v.phrase for v in variants}) == len(variants) and all(v.phrase.startswith("the ") for v in variants)
        assert variants[0].look == LOOK_KIND[variants[0].look]  # variant 0 is the kind's standard look
        assert all(LOOK_KIND[v.look] == LOOK_KIND[variants[0].look] for v in variants)
    assert len({v.look for v in VARIANTS}) == len(VARIANTS)


def _scene(look_id: int, dist: int) -> np.ndarray:
    kinds = np.zeros((13, 13), np.uint8)
    kinds[0, :] = kinds[-1, :] = kinds[:, 0] = kinds[:, -1] = 1
    if look_id:
        kinds[5:8, 2 + dist] = look_id
    return kinds


@pytest.mark.parametrize(
    ("deep", "distances", "min_grey"),
    [(False, (2, 3, 4), 8.0), (True, (2,), 5.0)],
    ids=["shallow-working-range", "deep-within-visibility"],
)
def test_variants_render_apart(deep: bool, distances: tuple[int, ...], min_grey: float) -> None:
    """Over the pixels an instance covers, every two variants of a kind differ on average by at least
    ``min_grey`` grey levels (max over channels), seen head-on from ``distances`` cells."""
    cam = Camera(64, 75.0)
    look = WaterLook.for_light(1.5 if deep else 10.0, 5.0 if deep else 8.0)
    for dist in distances:
        empty = cam.render(pad_kinds(_scene(0, dist), 12), 12, 2, 6, 0, look)[0].astype(float)
        for kind, variants in KIND_VARIANTS.items():
            imgs = [
                cam.render(pad_kinds(_scene(v.look, dist), 12), 12, 2, 6, 0, look)[0].astype(float) for v in variants
            ]
            for i in range(len(imgs)):
                for j in range(i + 1, len(imgs)):
                    covered = (np.abs(imgs[i] - empty).max(2) > 2) | (np.abs(imgs[j] - empty).max(2) > 2)
                    apart = float(np.abs(imgs[i] - imgs[j]).max(2)[covered].mean())
                    assert apart >= min_grey, (kind, variants[i].name, variants[j].name, dist, apart)


def test_variant_world_places_every_variant_and_keeps_category_worlds() -> None:
    plain = generate_world(WORLD)
    assert plain.looks is None and not plain.has_variants
    assert generate_world(WORLD).digest() == plain.digest()
    world = generate_world(WORLD, variants=True)
    assert world.has_variants and world.digest() != plain.digest()
    for kind in TARGET_KINDS:
        cells = world.instance_cells(kind)
        assert len(cells) >= 3
        names = [world.variant_of(kind, i).name for i in range(len(cells))]
        assert sorted(names) == sorted(v.name for v in KIND_VARIANTS[kind])
        for i, xy in enumerate(cells):
            assert set(world.looks[xy[:, 1], xy[:, 0]].tolist()) == {world.variant_of(kind, i).look}
    assert generate_world(WORLD, variants=True).digest() == world.digest()
    assert generate_world(WORLD + 1, variants=True).digest() != world.digest()


def _stand_beside(env: UnderwaterEnv, cells: np.ndarray) -> tuple[int, int]:
    free = env.world.free()
    for cx, cy in cells.tolist():
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            if free[cy + dy, cx + dx]:
                return cx + dx, cy + dy
    raise AssertionError("no free cell beside the instance")


def test_success_only_at_the_named_instance_and_wrong_instance_at_a_sibling() -> None:
    env = UnderwaterEnv(tasks=("description.barrel.yellow_band",), world_seed=WORLD)
    env.reset(seed=0)
    goal = goal_instance(env.world, env.task)
    cells = env.world.instance_cells("barrel")
    for inst, expect_success in [(i, i == goal) for i in range(len(cells))]:
        env.reset(seed=0, options={"start_pose": (*_stand_beside(env, cells[inst]), 0)})
        nearest = min(
            float(np.hypot(c[:, 0] - env.agent_pos[0], c[:, 1] - env.agent_pos[1]).min())
            for i, c in enumerate(cells)
            if i != inst
        )
        _, reward, terminated, _, info = env.step(Action.STOP)
        assert terminated and info["success"] == expect_success
        if nearest * env.cell_size_m > env.success_distance_m:  # only this instance within range
            assert info["wrong_instance"] == (not expect_success)
    env.reset(seed=0, options={"task": "barrel", "start_pose": (*_stand_beside(env, cells[goal - 1]), 0)})
    _, _, _, _, info = env.step(Action.STOP)
    assert info["success"] and not info["wrong_instance"]  # a category goal: any barrel will do


def test_goal_image_shows_the_goal_instance_and_is_declared() -> None:
    env = UnderwaterEnv(tasks=("wreck", "image.wreck.capsized", "description.wreck.upright"), world_seed=WORLD)
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert env.observation_space["goal_image"].shape == obs["image"].shape
    assert not obs["goal_image"].any()  # a category goal: zeros
    obs, _ = env.reset(seed=0, options={"task_index": 1})
    assert obs["mission"] == "find what the goal image shows" and obs["goal_image"].any()
    assert env.observation_space.contains(obs)
    camera, look = env.camera, WaterLook.for_light(10.0, env.view_range_cells)
    from embodmem.envs.goals import render_goal_view

    view = render_goal_view(env.world, env.task, camera, env._padded, env._pad, look)
    assert np.array_equal(view.image, obs["goal_image"])
    _, vis = camera.render(env._padded, env._pad, *view.pose, look)
    pixels = instance_pixels(env.world, vis, "wreck")
    assert pixels[goal_instance(env.world, env.task)] == pixels.max() > 0.05 * 64 * 64
    obs, _ = env.reset(seed=0, options={"task_index": 2})
    assert obs["mission"] == "find the upright sunken ship" and not obs["goal_image"].any()


def test_category_envs_are_unchanged_in_shape() -> None:
    env = UnderwaterEnv(tasks=("wreck",), world_seed=WORLD)
    obs, info = env.reset(seed=0)
    assert "goal_image" not in obs and "goal_image" not in env.observation_space.spaces
    assert env.world.looks is None and info["wrong_instance"] is False


def test_goat_sequences_mix_modalities() -> None:
    for name in ("goat_wreck_barrel", "goat_shallow8", "goat_mixed10"):
        tasks = [get_task(t) for t in SEQUENCES[name]]
        assert 5 <= len(tasks) <= 10
        assert {t.modality for t in tasks} == {"category", "description", "image"}
    assert len(INSTANCE_GOALS) == 72


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: get_task("video.barrel.red"), "goal modality 'video' is unknown; allowed: description, image"),
        (
            lambda: get_task("description.barrel.blue"),
            "variant 'blue' of 'barrel' is unknown; allowed: red, yellow_band, toppled",
        ),
        (lambda: get_variant("rock", "red"), "variant 'red' of 'rock' is unknown"),
        (
            lambda: UnderwaterEnv(tasks=("wreck",), world_seed=WORLD).reset(options={"task": "image.wreck.capsized"}),
            "task='image.wreck.capsized': an instance goal needs a world with variants",
        ),
        (lambda: generate_world(WORLD).instance_of("barrel", "yellow_band"), "no barrel wears variant 'yellow_band'"),
    ],
    ids=["modality", "variant", "not-a-target", "category-world", "variant-absent"],
)
def test_bad_goals_are_refused_in_one_line(make, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        make()
    assert "\n" not in str(err.value)
