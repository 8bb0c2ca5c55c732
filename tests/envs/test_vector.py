"""The batched env (envs/vector.py): each sub-env is the single env, bit for bit.

The reference is Gymnasium's own ``SyncVectorEnv`` over single ``UnderwaterEnv`` instances (and the
single envs stepped alone): same seeds and actions must give the same observations, rewards, ends and
infos, through autoresets, in shallow and deep water, with sonar noise, dropouts and pose drift.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import embodmem  # registers the ids; compose
from embodmem.envs import vector
from embodmem.envs.tasks import MISSIONS
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.envs.vector import SubEnvError, UnderwaterVectorEnv, batch_key, step_together
from embodmem.envs.wrappers import MissionToIndex

SEEDS = [0, 3, 5, 8, 13]
NOISY = dict(odometry_drift_pct=1.0, odometry_noise=0.05, sonar_noise_m=0.3, sonar_dropout=0.05)


def assert_same(a: Any, b: Any, path: str = "") -> None:
    """Equal bit for bit (arrays: dtype, shape and values), recursing through dicts and sequences."""
    if isinstance(a, dict):
        assert set(a) == set(b), (path, set(a) ^ set(b))
        for key in a:
            assert_same(a[key], b[key], f"{path}/{key}")
    elif isinstance(a, np.ndarray) and a.dtype != object:
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, (path, a, b)
        assert np.array_equal(a, b), path
    elif isinstance(a, (np.ndarray, tuple, list)):
        assert len(a) == len(b), path
        for x, y in zip(a, b):
            assert_same(x, y, f"{path}[]")
    else:
        assert a == b, (path, a, b)


def random_actions(rng: np.random.Generator, n: int) -> np.ndarray:
    """Mostly moves and turns, some stops (episode ends), every action kind."""
    return rng.choice(7, size=n, p=[0.15, 0.15, 0.35, 0.03, 0.1, 0.11, 0.11])


@pytest.mark.parametrize(
    ("mode", "settings"),
    [
        ("NextStep", dict(task="wreck", **NOISY)),
        ("SameStep", dict(task="deep_wreck", sonar_dropout=0.1)),
        ("NextStep", dict(tasks=("wreck", "barrel"), image_size=48, odometry_drift_pct=0.5, odometry_carry=True)),
    ],
)
def test_matches_gymnasiums_sync_vector_env_bit_for_bit(mode: str, settings: dict[str, Any]) -> None:
    """300 steps of 5 worlds with episodes of at most 40 steps (many autoresets)."""
    settings = {"image_size": 32, "max_steps": 40, **settings}
    ours = UnderwaterVectorEnv(num_envs=len(SEEDS), world_seeds=SEEDS, autoreset_mode=mode, **settings)
    ref = gym.vector.SyncVectorEnv(
        [lambda s=s: UnderwaterEnv(world_seed=s, **settings) for s in SEEDS], autoreset_mode=mode
    )
    assert ours.metadata["autoreset_mode"] == ref.metadata["autoreset_mode"] == AutoresetMode(mode)
    assert_same(ours.reset(seed=7), ref.reset(seed=7))
    rng = np.random.default_rng(1)
    ends = 0
    for _ in range(300):
        actions = random_actions(rng, len(SEEDS))
        mine, theirs = ours.step(actions), ref.step(actions)
        assert_same(mine, theirs)
        ends += int(mine[2].sum() + mine[3].sum())
        assert ours.observation_space.contains(mine[0])
    assert ends >= 20  # autoreset really happened, many times


def test_env_noisy_as_the_app_builds_it_matches_sync_vector_env() -> None:
    """``env=noisy`` (sonar noise and dropouts, drift carried across the tasks of a visit), with the
    keywords the app gives the env, over a two-task sequence."""
    import dataclasses

    from embodmem.app import env_config

    config = dataclasses.replace(env_config(embodmem.compose(["env=noisy"])), image_size=32, max_steps=30)
    assert config.odometry_carry and config.sonar_dropout > 0 and config.odometry_drift_pct > 0
    settings = {"config": config}
    seeds = [2, 6, 10]
    ours = UnderwaterVectorEnv(num_envs=3, world_seeds=seeds, tasks=("wreck", "barrel"), **settings)
    ref = gym.vector.SyncVectorEnv(
        [lambda s=s: UnderwaterEnv(world_seed=s, tasks=("wreck", "barrel"), **settings) for s in seeds]
    )
    assert_same(ours.reset(seed=1, options={"start": "random"}), ref.reset(seed=1, options={"start": "random"}))
    rng = np.random.default_rng(4)
    for _ in range(150):
        actions = random_actions(rng, 3)
        assert_same(ours.step(actions), ref.step(actions))


def test_each_sub_env_is_the_single_env_alone_with_per_world_options() -> None:
    """Disabled autoreset, the caller resets each world with its own options (new worlds, deep and
    shallow tasks side by side, random starts), extra views, instance-goal worlds: every row equals
    the single env driven the same way."""
    settings = dict(
        tasks=("wreck", "deep_barrel", "image.mining_robot.yellow"),
        image_size=32,
        extra_views=["image_left", "image_back"],
        **NOISY,
    )
    seeds = [4, 9, 21]
    ours = UnderwaterVectorEnv(num_envs=3, world_seeds=seeds, autoreset_mode="Disabled", **settings)
    alone = [UnderwaterEnv(world_seed=s, **settings) for s in seeds]
    ours.reset(seed=[0, 1, 2])
    for i, env in enumerate(alone):
        env.reset(seed=i)
    rng = np.random.default_rng(2)
    for t in range(240):
        if t % 60 == 30:
            for i in range(3):
                options = {"task_index": (i + t // 60) % 3, "start": "random"}
                if i == 1:
                    options["world_seed"] = 100 + t
                assert_same(ours.reset_one(i, seed=t + i, options=options), alone[i].reset(seed=t + i, options=options))
        actions = random_actions(rng, 3)
        actions[actions == 3] = 2  # no stops: Disabled mode leaves ended episodes to the caller
        obs, rewards, terminated, truncated, infos = ours.step(actions)
        for i, env in enumerate(alone):
            single = env.step(int(actions[i]))
            assert_same({key: value[i] for key, value in obs.items()}, single[0])
            assert rewards[i] == single[1] and terminated[i] == single[2] and truncated[i] == single[3]
            assert infos["visible_instances"][i] == single[4]["visible_instances"]
            assert infos["distance_m"][i] == single[4]["distance_m"]
    assert len({float(obs["image"][i].mean()) for i in range(3)}) == 3  # different worlds really differ


def test_worlds_stepped_together_are_each_world_stepped_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """``step_together`` (what the lockstep runner steps its lanes' worlds with): worlds of different
    seeds, tasks and episodes, in shallow and deep water with noise and extra views, each stepped by
    its own ``step`` beside it; every result equal bit for bit, and so the ground truth the measures
    read after it (the visible target cells come from the batch's frame columns), and each observation
    owns its arrays (a lane may keep a frame without holding the whole batch). Steps with many and
    with few frames showing a target kind both occur: the visible instances are then found in the
    batch and by each world alone (``vector.FEW_TARGET_FRAMES``)."""
    settings = dict(tasks=("wreck", "deep_barrel"), image_size=32, extra_views=["image_left"], max_steps=50, **NOISY)
    seeds = [4, 9, 21, 30, 41, 57]
    batched_steps = []
    real_visible_targets_of = vector.visible_targets_of

    def counting(*args: Any) -> Any:
        batched_steps.append(len(args[0]))
        return real_visible_targets_of(*args)

    monkeypatch.setattr(vector, "visible_targets_of", counting)
    together = [UnderwaterEnv(world_seed=s, **settings) for s in seeds]
    alone = [UnderwaterEnv(world_seed=s, **settings) for s in seeds]
    rng = np.random.default_rng(3)
    resets = 0
    targets_in_view = 0
    for i in range(len(seeds)):
        options = {"task_index": i % 2, "start": "random"}
        assert_same(together[i].reset(seed=i, options=options), alone[i].reset(seed=i, options=options))
    assert len({batch_key(env) for env in together}) == 1
    for t in range(200):
        actions = [int(a) for a in random_actions(rng, len(seeds))]
        results = step_together(together, actions)
        for i, env in enumerate(alone):
            single = env.step(actions[i])
            assert_same(results[i], single)
            cells = env.visible_target_cells()
            assert together[i].visible_target_cells() == cells
            assert together[i].ground_truth().visible_instances == env.ground_truth().visible_instances
            targets_in_view += bool(cells)
            assert results[i][0]["image"].flags.owndata and results[i][0]["image_left"].flags.owndata
            if single[2] or single[3]:
                options = {"task_index": (i + t) % 2, "start": "random"}
                assert_same(together[i].reset(seed=t, options=options), env.reset(seed=t, options=options))
                resets += 1
    assert resets >= 10 and targets_in_view >= 20
    assert 20 <= len(batched_steps) <= 180, len(batched_steps)  # found in the batch at some steps, not all
    with pytest.raises(SubEnvError, match=r"sub-env 1 \(world_seed=9\): ValueError: action=9 is not one of"):
        step_together(together[:2], [0, 9])


def test_changing_worlds_stepped_together_are_each_world_stepped_alone() -> None:
    """The stacked maps ``step_together`` keeps from one step to the next follow a world that
    changes during a task (a change at step 5) and from task to task: every step as its world's own."""
    from embodmem.envs.changes import WorldChange, WorldChanges

    changes = WorldChanges(
        "m", [WorldChange("move", "wreck", task=2, to="far"), WorldChange("move", "barrel", task=2, step=5)]
    )
    settings = dict(tasks=("barrel", "wreck"), image_size=16, max_steps=12, changes=changes)
    seeds = [4, 9, 21, 30]
    together = [UnderwaterEnv(world_seed=s, **settings) for s in seeds]
    alone = [UnderwaterEnv(world_seed=s, **settings) for s in seeds]
    rng = np.random.default_rng(7)
    for task in ("barrel", "wreck"):
        options = {"task": task, "start": "random", "new_visit": task == "barrel"}
        for i, (a, b) in enumerate(zip(together, alone)):
            assert_same(a.reset(seed=i, options=options), b.reset(seed=i, options=options))
        for _ in range(12):
            actions = [int(a) for a in rng.choice([0, 1, 2, 2], len(seeds))]  # never stop: every world changes
            for result, env, action in zip(step_together(together, actions, infos=False), alone, actions):
                assert_same(result[:4], env.step(action)[:4])
    assert all(len(env.change_events) == 2 for env in together)


def test_worlds_stepped_together_without_infos_step_as_with_them() -> None:
    """``step_together(infos=False)`` (the lockstep runner's: it reads the ground truth) gives None
    infos and otherwise the same steps, and the same ground truth after each."""
    settings = dict(tasks=("wreck", "barrel"), image_size=16, max_steps=40, **NOISY)
    seeds = [4, 9, 21, 30, 41]
    plain = [UnderwaterEnv(world_seed=s, **settings) for s in seeds]
    quiet = [UnderwaterEnv(world_seed=s, **settings) for s in seeds]
    for i, (a, b) in enumerate(zip(plain, quiet)):
        assert_same(a.reset(seed=i, options={"start": "random"}), b.reset(seed=i, options={"start": "random"}))
    rng = np.random.default_rng(5)
    for _ in range(30):
        actions = [int(a) for a in random_actions(rng, len(seeds))]
        for a, b, with_info, without in zip(
            plain, quiet, step_together(plain, actions), step_together(quiet, actions, infos=False)
        ):
            assert_same(with_info[:4], without[:4])
            assert without[4] is None
            assert a.ground_truth() == b.ground_truth()
            assert a.ground_truth().info() == with_info[4]
            if with_info[2] or with_info[3]:
                assert_same(a.reset(seed=1), b.reset(seed=1))


def test_make_vec_builds_it_with_mission_indices_like_the_wrapped_sync_env() -> None:
    envs = gym.make_vec("EmbodMem/Barrel-v0", num_envs=3, image_size=16, mission_encoding="index")
    assert isinstance(envs, UnderwaterVectorEnv)
    ref = gym.make_vec(
        "EmbodMem/Barrel-v0", num_envs=3, vectorization_mode="sync", wrappers=[MissionToIndex], image_size=16
    )
    assert_same(envs.reset(seed=3), ref.reset(seed=3))
    obs = envs.step(np.array([2, 1, 0]))[0]
    assert_same(obs, ref.step(np.array([2, 1, 0]))[0])
    assert obs["mission"].tolist() == [MISSIONS.index("find oil drums")] * 3
    assert envs.single_observation_space["image"].shape == (16, 16, 3)
    assert envs.observation_space["image"].shape == (3, 16, 16, 3)
    text = gym.make_vec("EmbodMem/Barrel-v0", num_envs=2, image_size=16)
    assert text.reset(seed=0)[0]["mission"] == ("find oil drums", "find oil drums")
    assert (
        "mission"
        not in gym.make_vec("EmbodMem/Barrel-v0", num_envs=2, image_size=16, mission_encoding="none").reset(seed=0)[0]
    )


def test_same_seeds_same_batches_different_seeds_differ() -> None:
    def run(seed: int) -> list[bytes]:
        envs = UnderwaterVectorEnv(num_envs=4, world_seeds=[1, 2, 3, 4], image_size=16)
        envs.reset(seed=seed)
        return [envs.step(np.array([2, 2, 1, 2]))[0]["image"].tobytes() for _ in range(20)]

    assert run(0) == run(0)
    assert run(0) != run(1)


def test_bad_input_and_sub_env_errors_name_the_sub_env_and_its_world() -> None:
    envs = UnderwaterVectorEnv(num_envs=3, world_seeds=[5, 6, 7], image_size=16)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions\[2\]=9 \(sub-env 2, world_seed=7\) is not allowed; allowed: "):
        envs.step(np.array([0, 1, 9]))
    with pytest.raises(ValueError, match=r"actions=.* is not allowed; allowed: 3 integer actions, one per sub-env"):
        envs.step(np.array([0, 1]))
    with pytest.raises(SubEnvError, match=r"sub-env 1 \(world_seed=6\): ValueError: unknown reset options") as error:
        envs.reset_one(1, options={"nonsense": 1})
    assert error.value.index == 1 and error.value.world_seed == 6
    with pytest.raises(ValueError, match=r"world_seeds=\[1, 2\] is not allowed; allowed: 3 seeds, one per sub-env"):
        UnderwaterVectorEnv(num_envs=3, world_seeds=[1, 2])
    with pytest.raises(ValueError, match=r"autoreset_mode='sometimes' is not allowed; allowed: NextStep, SameStep"):
        UnderwaterVectorEnv(num_envs=1, autoreset_mode="sometimes")
    with pytest.raises(SubEnvError, match=r"sub-env 0 \(world_seed=3\): ValueError: EnvConfig.size: 5"):
        UnderwaterVectorEnv(num_envs=1, world_seed=3, size=5)


def test_the_batched_camera_refuses_what_its_compiled_loop_would_read_outside_of() -> None:
    from embodmem.envs.camera import Camera, Sonar, WaterLook, pad_kinds

    kinds = np.zeros((8, 8), np.uint8)
    kinds[:, 6] = 1
    cam, look = Camera(16, 90.0), WaterLook.for_light(10.0, 8.0)
    padded = pad_kinds(kinds, 12)[None]
    with pytest.raises(ValueError, match=r"poses x=\[8\], y=\[4\]; allowed: cells inside the 8x8 map"):
        cam.render_batch(padded, 12, np.array([8]), np.array([4]), np.array([0]), [look])
    with pytest.raises(ValueError, match=r"pad=3 is too small; allowed: >= 10"):
        cam.render_batch(pad_kinds(kinds, 3)[None], 3, np.array([2]), np.array([4]), np.array([0]), [look])
    with pytest.raises(ValueError, match=r"heading=\[4\]; allowed: 0-3"):
        Sonar(np.linspace(-1, 1, 5), 8.0).scan_batch(padded, 12, np.array([2]), np.array([4]), np.array([4]))
    with pytest.raises(ValueError, match=r"poses x=\[2\], y=\[-1\]; allowed"):
        cam.render_batch(padded, 12, np.array([2]), np.array([-1]), np.array([0]), [look])
    two = np.concatenate([padded, padded])  # a batch takes the array checks: the same refusals
    with pytest.raises(ValueError, match=r"poses x=\[2, 2\], y=\[4, 8\]; allowed: cells inside the 8x8 map"):
        cam.render_batch(two, 12, np.array([2, 2]), np.array([4, 8]), np.array([0, 0]), [look, look])
    with pytest.raises(ValueError, match=r"heading=\[0, -1\]; allowed: 0-3"):
        Sonar(np.linspace(-1, 1, 5), 8.0).scan_batch(two, 12, np.array([2, 2]), np.array([4, 4]), np.array([0, -1]))
    images, _ = cam.render_batch(
        np.concatenate([padded, padded]), 12, np.array([2, 2]), np.array([4, 4]), np.array([0, 2]), [look, look]
    )
    assert np.array_equal(images[0], cam.render(padded[0], 12, 2, 4, 0, look)[0])
    assert not np.array_equal(images[0], images[1])  # facing the wall and facing away differ


def test_a_masked_reset_keeps_the_other_sub_envs_observations_like_sync_vector_env() -> None:
    settings = {"task": "wreck", "image_size": 16}
    ours = UnderwaterVectorEnv(num_envs=3, world_seeds=[1, 2, 3], autoreset_mode="Disabled", **settings)
    ref = gym.vector.SyncVectorEnv(
        [lambda s=s: UnderwaterEnv(world_seed=s, **settings) for s in (1, 2, 3)], autoreset_mode="Disabled"
    )
    assert_same(ours.reset(seed=0), ref.reset(seed=0))
    for _ in range(5):
        assert_same(ours.step(np.array([2, 2, 1])), ref.step(np.array([2, 2, 1])))
    mask = np.array([False, True, False])
    assert_same(
        ours.reset(seed=[None, 9, None], options={"reset_mask": mask, "start": "random"}),
        ref.reset(seed=[None, 9, None], options={"reset_mask": mask.copy(), "start": "random"}),
    )
