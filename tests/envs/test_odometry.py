"""Dead-reckoning drift that accumulates over a world visit, and sonar dropouts (envs/odometry.py)."""

from __future__ import annotations

import numpy as np

from embodmem.envs.odometry import DeadReckoning, degrade_sonar
from embodmem.envs.spec import Action
from embodmem.envs.underwater import UnderwaterEnv


def _walk(env: UnderwaterEnv, steps: int) -> None:
    for i in range(steps):
        env.step(int(Action.FORWARD) if i % 5 else int(Action.TURN_RIGHT))


def _pose_error(env: UnderwaterEnv, obs: dict) -> np.ndarray:
    return np.array([float(obs["pose"][0]) - env.agent_pos[0], float(obs["pose"][1]) - env.agent_pos[1]])


def test_drift_grows_with_distance_and_is_bounded_by_the_rate() -> None:
    rng = np.random.default_rng(1)
    finals = []
    for _ in range(50):
        dr = DeadReckoning(drift_pct=1.0, carry=True)
        dr.start_visit(rng)
        for _ in range(1000):
            dr.move(rng)
        finals.append(float(np.hypot(*dr.error)))
    # 1% of 1000 cells is 10 cells at most (a straight leg); the wandering bias gives a bit less.
    assert max(finals) <= 10.0 + 1e-9
    assert 5.0 < float(np.median(finals)) < 10.0


def test_error_carries_across_tasks_of_a_visit_only() -> None:
    kw = dict(tasks=("wreck", "barrel", "wreck"), world_seed=3, odometry_drift_pct=5.0, odometry_carry=True)
    env = UnderwaterEnv(**kw, max_steps=60)
    obs, _ = env.reset(seed=1, options={"task_index": 0, "new_visit": True})
    assert np.allclose(_pose_error(env, obs), 0.0)
    _walk(env, 60)
    carried = env.dead_reckoning.error.copy()
    assert np.hypot(*carried) > 0.3  # 5% of a few dozen cells
    obs, info = env.reset(seed=2, options={"task_index": 1, "start": "random"})
    assert np.allclose(_pose_error(env, obs), carried, atol=1e-4)  # the belief is off from the start
    assert info["agent_pos"] == tuple(env.agent_pos)  # the truth stays privileged in info
    obs, _ = env.reset(seed=3, options={"task_index": 0, "new_visit": True})
    assert np.allclose(_pose_error(env, obs), 0.0)
    # without carry every task starts exact (the old behaviour)
    env = UnderwaterEnv(**{**kw, "odometry_carry": False}, max_steps=60)
    env.reset(seed=1, options={"task_index": 0})
    _walk(env, 60)
    obs, _ = env.reset(seed=2, options={"task_index": 1})
    assert np.allclose(_pose_error(env, obs), 0.0)


def test_same_seeds_same_drift_different_seeds_differ() -> None:
    def run(seed: int) -> np.ndarray:
        env = UnderwaterEnv(
            tasks=("wreck", "barrel"),
            world_seed=4,
            odometry_drift_pct=2.0,
            odometry_carry=True,
            sonar_dropout=0.2,
            max_steps=40,
        )
        env.reset(seed=seed, options={"task_index": 0, "new_visit": True})
        _walk(env, 40)
        obs, _ = env.reset(seed=seed + 1, options={"task_index": 1})
        _walk(env, 10)
        return np.concatenate([env.dead_reckoning.error, obs["sonar"]])

    assert np.array_equal(run(5), run(5))
    assert not np.array_equal(run(5), run(6))


def test_sonar_dropouts_read_max_range() -> None:
    env = UnderwaterEnv(world_seed=0, sonar_dropout=0.5, sonar_beams=64, sonar_range_m=40.0)
    obs, _ = env.reset(seed=0)
    clean = UnderwaterEnv(world_seed=0, sonar_beams=64, sonar_range_m=40.0).reset(seed=0)[0]["sonar"]
    dropped = obs["sonar"] != clean
    assert dropped.any() and np.all(obs["sonar"][dropped] == 40.0)
    r = degrade_sonar(np.full(10, 12.0), np.random.default_rng(0), 0.0, 0.0, 40.0)
    assert np.array_equal(r, np.full(10, 12.0))
