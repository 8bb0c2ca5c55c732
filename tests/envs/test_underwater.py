"""Tests for the underwater environments (envs/)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import embodmem.envs
from embodmem.envs.camera import Camera, Sonar, WaterLook, cast_rays, pad_kinds
from embodmem.envs.objects import KIND_INDEX, TARGET_KINDS
from embodmem.envs.spec import Action
from embodmem.envs.tasks import TASKS
from embodmem.envs.underwater import UnderwaterEnv, task_maps

ALL_IDS = [t.env_id for t in TASKS.values()] + ["EmbodMem/Sequence-v0"]


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_check_env_passes_on_every_registered_id(env_id: str) -> None:
    env = gym.make(env_id, world_seed=1)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_make_with_module_prefix() -> None:
    env = gym.make("embodmem:EmbodMem/Barrel-v0")
    obs, _ = env.reset(seed=0)
    assert obs["mission"] == "find oil drums"
    assert set(obs) == {"image", "sonar", "pose", "mission"}


def _rollout(env: gym.Env, seed: int, n: int = 60) -> list[dict]:
    obs, _ = env.reset(seed=seed, options={"start": "random"})
    rng = np.random.default_rng(7)
    out = [obs]
    for _ in range(n):
        obs, _, term, trunc, _ = env.step(int(rng.choice([0, 1, 2, 2, 2, 4, 5, 6])))
        out.append(obs)
        if term or trunc:
            break
    return out


def test_same_seeds_give_identical_observations() -> None:
    kwargs = dict(world_seed=3, sonar_noise_m=0.5, odometry_noise=0.1, extra_views=("image_back",))
    a = _rollout(gym.make("EmbodMem/Wreck-v0", **kwargs), seed=11)
    b = _rollout(gym.make("EmbodMem/Wreck-v0", **kwargs), seed=11)
    assert len(a) == len(b)
    for oa, ob in zip(a, b):
        for key in oa:
            if key == "mission":
                assert oa[key] == ob[key]
            else:
                np.testing.assert_array_equal(oa[key], ob[key])
    c = _rollout(gym.make("EmbodMem/Wreck-v0", **kwargs), seed=12)
    assert any(not np.array_equal(x["image"], y["image"]) for x, y in zip(a, c))


def test_world_depends_on_world_seed_only() -> None:
    e1 = UnderwaterEnv(world_seed=4)
    e2 = UnderwaterEnv(world_seed=4, task="barrel")
    e3 = UnderwaterEnv(world_seed=5)
    assert e1.world.digest() == e2.world.digest() != e3.world.digest()


def test_world_persists_across_tasks_of_a_sequence() -> None:
    env = gym.make("EmbodMem/Sequence-v0", world_seed=2).unwrapped
    obs, info = env.reset(seed=0)
    assert info["task"] == "wreck" and obs["mission"] == "find a sunken ship"
    digest = env.world.digest()
    for a in [2, 2, 1, 2, 2, 2, 0, 2]:
        env.step(a)
    env.step(Action.STOP)
    end = (*env.agent_pos, env.agent_dir)
    obs, info = env.reset(seed=1, options={"next_task": True})
    assert info["task"] == "barrel" and obs["mission"] == "find oil drums"
    assert env.world.digest() == digest
    assert info["start_pose"] == end  # continues where the previous task ended
    obs, info = env.reset(seed=1, options={"task_index": 1, "start": "fixed1"})
    assert info["start_pose"] == env.world.fixed_starts[1]


def test_every_world_is_connected_and_holds_all_targets() -> None:
    for seed in range(5):
        for size in (32, 128):
            env = UnderwaterEnv(world_seed=seed, size=size)
            for kind in TARGET_KINDS:
                n = embodmem.envs.objects.KINDS[KIND_INDEX[kind]].instances
                assert len(env.world.instance_cells(kind)) == n
                task = next(t for t in TASKS.values() if t.target == kind)
                maps = env._task_maps(task)
                start = env.world.fixed_starts[0]
                assert np.isfinite(maps["geodesic"][start[1], start[0]])


def test_envs_of_one_world_share_its_task_maps_read_only_and_a_changed_world_has_its_own() -> None:
    """The lockstep runner starts each task of a world in several envs: they share one read-only copy
    of the task's distance maps, the same numbers each would compute; a world changed during the
    visit (embodmem.envs.changes) gets maps of its own."""
    from embodmem.envs.changes import WorldChange, WorldChanges

    a, b = UnderwaterEnv(tasks=("wreck", "barrel"), world_seed=11), UnderwaterEnv(tasks=("barrel",), world_seed=11)
    task = TASKS["wreck"]
    shared = a._task_maps(task)
    assert b._task_maps(task) is shared
    fresh = task_maps(a.world, task, a.cell_size_m, a.success_distance_m)
    for name, array in shared.items():
        assert not array.flags.writeable and np.array_equal(array, fresh[name])
    moved = WorldChanges("m", [WorldChange("move", "wreck", task=2, to="far")])
    changing = UnderwaterEnv(tasks=("barrel", "wreck"), world_seed=11, changes=moved)
    changing.reset(seed=0, options={"task": "barrel", "new_visit": True})
    assert changing._task_maps(task) is shared  # the first task: the world as generated
    changing.reset(seed=1, options={"task": "wreck"})
    own = changing._task_maps(task)
    assert own is not shared and changing.world is not a.world
    assert not np.array_equal(own["success"], shared["success"])


def test_each_target_kind_draws_distinct_pixels() -> None:
    cam = Camera(size=64, fov_deg=75.0)
    look = WaterLook.for_light(10.0, 8.0)
    images = {}
    for kind in TARGET_KINDS:
        kinds = np.zeros((12, 12), np.uint8)
        kinds[4:8, 7] = KIND_INDEX[kind]  # a face 2 cells in front of the camera
        img, vis = cam.render(pad_kinds(kinds, 12), 12, 5, 5, 0, look)
        assert vis["pixels"][vis["kind"] == KIND_INDEX[kind]].sum() > 100
        images[kind] = img.astype(np.int32)
    names = list(images)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            diff = np.abs(images[a] - images[b]).mean()
            assert diff > 3.0, f"{a} and {b} look alike (mean abs diff {diff:.2f})"


def test_deep_water_is_darker_and_shorter_sighted() -> None:
    shallow = UnderwaterEnv(task="wreck", world_seed=0)
    deep = UnderwaterEnv(task="deep_wreck", world_seed=0)
    o1, _ = shallow.reset(seed=0)
    o2, _ = deep.reset(seed=0)
    assert o2["image"].mean() < 0.7 * o1["image"].mean()
    assert deep._look().view_range < shallow._look().view_range


def test_success_and_termination_rules() -> None:
    env = UnderwaterEnv(task="barrel", world_seed=0, max_steps=5)
    cell = env.world.instance_cells("barrel")[0][0]
    free = env.world.free()
    near = next(
        (int(cell[0] + dx), int(cell[1] + dy))
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))
        if free[cell[1] + dy, cell[0] + dx]
    )
    _, info = env.reset(seed=0, options={"start_pose": (*near, 0)})
    assert info["distance_m"] == pytest.approx(5.0) and info["geodesic_m"] == 0.0
    _, reward, term, trunc, info = env.step(Action.STOP)
    assert term and not trunc and info["success"] and reward == 1.0

    far = env.world.fixed_starts[0]
    _, info = env.reset(seed=0, options={"start_pose": far})
    assert info["distance_m"] > env.success_distance_m
    _, reward, term, trunc, info = env.step(Action.STOP)
    assert term and not info["success"] and reward == 0.0

    env.reset(seed=0, options={"start_pose": far})
    for _i in range(5):
        _, _, term, trunc, info = env.step(Action.TURN_LEFT)
    assert trunc and not term and info["success"] is False


def test_collisions_and_path_length_are_counted() -> None:
    env = UnderwaterEnv(world_seed=0)
    _, info = env.reset(seed=0, options={"start_pose": (1, 1, 2)})  # facing the west border
    _, _, _, _, info = env.step(Action.FORWARD)
    assert info["collisions"] == 1 and info["path_length_m"] == 0.0
    assert info["agent_pos"] == (1, 1)


def test_sonar_on_a_hand_built_layout() -> None:
    kinds = np.zeros((16, 16), np.uint8)
    kinds[:, 8] = KIND_INDEX["rock"]  # wall 6 cells east of the robot's cell
    sonar = Sonar(np.array([0.0, math.radians(45.0)]), max_range=20.0)
    padded = pad_kinds(kinds, sonar.reach)
    ranges = sonar.scan(padded, sonar.reach, 2, 8, heading=0)
    assert ranges[0] == pytest.approx(5.5)  # from the cell centre x=2.5 to the face x=8
    assert ranges[1] == pytest.approx(5.5 * math.sqrt(2), rel=1e-5)
    # Facing north (heading 3): the map's edge is 8.5 cells away, beyond it the solid padding
    ranges = sonar.scan(padded, sonar.reach, 2, 8, heading=3)
    assert ranges[0] == pytest.approx(8.5)
    far = Sonar(np.array([0.0]), max_range=3.0).scan(pad_kinds(kinds, 5), 5, 2, 8, heading=0)
    assert far[0] == pytest.approx(3.0)  # nothing within range: max range is reported
    hits = cast_rays(kinds, 2, 8, np.array([math.pi]), 1.0)  # nothing within 1 cell westwards
    assert not np.isfinite(hits.dist[0]) and hits.kind[0] == 0


def test_sonar_in_env_reports_metres_and_noise_is_clipped() -> None:
    env = UnderwaterEnv(world_seed=0, sonar_noise_m=3.0, sonar_beams=9, sonar_range_m=40.0)
    obs, _ = env.reset(seed=0)
    assert obs["sonar"].shape == (9,)
    assert (obs["sonar"] >= 0).all() and (obs["sonar"] <= 40.0).all()
    assert env.observation_space["sonar"].contains(obs["sonar"])


def test_observation_has_no_privileged_state() -> None:
    env = UnderwaterEnv(world_seed=0, extra_views=("image_left", "image_right", "image_back"), topdown=True)
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"image", "image_left", "image_right", "image_back", "topdown", "sonar", "pose", "mission"}
    assert obs["topdown"].shape == (56, 56, 3)


def test_render_rgb_array_composite_and_fps() -> None:
    env = gym.make("EmbodMem/Wreck-v0", render_mode="rgb_array", render_size=128)
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (128, 256, 3) and frame.dtype == np.uint8
    assert env.metadata["render_fps"] > 0


def test_large_world_and_large_camera() -> None:
    env = UnderwaterEnv(world_seed=0, size=128, image_size=224)
    obs, info = env.reset(seed=0)
    assert obs["image"].shape == (224, 224, 3)
    obs, *_ = env.step(Action.FORWARD)


def test_unknown_task_lists_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown task 'submarine'.*wreck.*deep_wind_station"):
        gym.make("EmbodMem/Sequence-v0", tasks=["wreck", "submarine"])
    env = UnderwaterEnv()
    with pytest.raises(ValueError, match="unknown task 'kraken'"):
        env.reset(options={"task": "kraken"})


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"size": 8}, "size"),
        ({"success_distance_m": 1.0}, "success_distance_m"),
        ({"image_size": 4}, "image_size"),
        ({"sonar_beams": -1}, "sonar_beams"),
        ({"extra_views": ("image_up",)}, "extra_views"),
        ({"max_steps": 0}, "max_steps"),
        ({"fov_deg": 200.0}, "fov_deg"),
        ({"obstacle_density": 0.9}, "obstacle_density"),
    ],
)
def test_bad_parameters_are_refused_with_their_name(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        UnderwaterEnv(**kwargs)


def test_bad_reset_options_and_actions() -> None:
    env = UnderwaterEnv()
    with pytest.raises(ValueError, match="start"):
        env.reset(options={"start": "teleport"})
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"speed": 3})
    with pytest.raises(ValueError, match="start_pose"):
        env.reset(options={"start_pose": (0, 0, 0)})  # a border rock
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action=9"):
        env.step(9)


def test_path_via_seen_cells_bounds_an_agent_that_knows_only_where_it_saw_the_target() -> None:
    """Told every cell of the target, the oracle walks the geodesic; told only the far end of it,
    it walks at least as far."""
    env = UnderwaterEnv(world_seed=1001)
    _, info = env.reset(seed=0, options={"task": "pipeline", "start": "random"})
    start = info["start_pose"][:2]
    cells = [tuple(int(v) for v in c) for c in np.concatenate(env.world.instance_cells("pipeline"))]
    everything = env.path_via_cells_m(start, set(cells))
    assert everything == pytest.approx(info["geodesic_m"])
    far_end = max(cells, key=lambda c: np.hypot(c[0] - start[0], c[1] - start[1]))
    assert env.path_via_cells_m(start, {far_end}) >= everything
    assert env.path_via_cells_m(start, set()) == float("inf")
