"""Living with drift: scan matching against the carried map keeps the pose estimate on the robot's
cell when dead reckoning is off (agents/mapping.py scan_fit, FrontierExplorer.localise)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from embodmem.agents.explorer import FrontierExplorer
from embodmem.agents.mapping import OccupancyGrid
from embodmem.embedding.embedder import ClipEmbedder
from embodmem.envs.spec import Action
from embodmem.envs.underwater import UnderwaterEnv


@pytest.fixture(scope="module")
def embedder() -> ClipEmbedder:
    return ClipEmbedder(threads=1)


def _explore(env: UnderwaterEnv, grid: OccupancyGrid, steps: int, seed: int) -> dict:
    """Random walk with the map built at the true pose; returns the last observation."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    for _ in range(steps):
        grid.update((env.agent_pos[0], env.agent_pos[1], env.agent_dir), obs["sonar"])
        obs, *_ = env.step(int(rng.choice([0, 1, 2, 2, 2, 2])))
    return obs


def test_the_scan_fits_the_true_cell_best() -> None:
    env = UnderwaterEnv(tasks=("wreck",), world_seed=1101, max_steps=500, sonar_noise_m=1.0, sonar_dropout=0.05)
    grid = OccupancyGrid(env.sensor_spec)
    obs = _explore(env, grid, 200, seed=0)
    wins = 0
    for _ in range(40):
        x, y, h = env.agent_pos[0], env.agent_pos[1], env.agent_dir
        offsets = np.array([(dx, dy) for dy in range(-2, 3) for dx in range(-2, 3)])
        scores = grid.scan_fit(np.array([x, y]) + offsets, h, obs["sonar"])
        wins += int(np.argmax(scores) == 12)
        grid.update((x, y, h), obs["sonar"])
        obs, *_ = env.step(int(Action.FORWARD if wins % 3 else Action.TURN_LEFT))
    assert wins >= 30  # noisy scans: the true cell wins most, not every, scan


def _drift_in_mid_walk(embedder: ClipEmbedder, spec_drift_pct: float) -> tuple[FrontierExplorer, list[bool]]:
    """Map an area with an exact pose, then walk on with the pose observation off by (+1.4, -1.3)
    cells, the datasheet giving the odometry ``spec_drift_pct``; the agent and, per drifted step,
    whether its estimate was the robot's cell."""
    env = UnderwaterEnv(tasks=("wreck",), world_seed=1102, max_steps=600)
    agent = FrontierExplorer(embedder)
    obs, _ = env.reset(seed=0)
    agent.reset(obs, dataclasses.replace(env.sensor_spec, odometry_drift_pct=spec_drift_pct))
    rng = np.random.default_rng(1)
    for _ in range(150):  # map the area with an exact pose
        agent.update(obs)
        agent._last_action = int(rng.choice([0, 1, 2, 2, 2]))
        obs, *_ = env.step(agent._last_action)
    on_cell = []
    for _ in range(150):  # now dead reckoning is off by (+1.4, -1.3) cells
        drifted = dict(obs, pose=np.array([obs["pose"][0] + 1.4, obs["pose"][1] - 1.3, obs["pose"][2]], np.float32))
        agent.update(drifted)
        on_cell.append(agent.pose[:2] == tuple(env.agent_pos))
        agent._last_action = int(rng.choice([0, 1, 2, 2, 2]))
        obs, *_ = env.step(agent._last_action)
    return agent, on_cell


def test_a_drifted_estimate_comes_back_to_the_map(embedder: ClipEmbedder) -> None:
    agent, on_cell = _drift_in_mid_walk(embedder, spec_drift_pct=0.5)
    assert not on_cell[0] and agent.relocalisations >= 1
    assert np.mean(on_cell[-50:]) == 1.0, np.mean(on_cell)
    assert np.allclose(agent.pose_correction, [-1.4, 1.3], atol=1e-5)


def test_an_exact_pose_by_the_datasheet_is_not_matched(embedder: ClipEmbedder) -> None:
    """With no drift and no noise on the datasheet (``SensorSpec.exact_pose``) the scan match is
    skipped: the same walk is never corrected."""
    agent, on_cell = _drift_in_mid_walk(embedder, spec_drift_pct=0.0)
    assert agent.relocalisations == 0 and not any(on_cell) and not agent.pose_correction.any()


def test_clean_sensing_never_moves_the_estimate(embedder: ClipEmbedder) -> None:
    env = UnderwaterEnv(tasks=("barrel",), world_seed=1103, max_steps=300)
    agent = FrontierExplorer(embedder)
    obs, _ = env.reset(seed=0)
    agent.reset(obs, env.sensor_spec)
    done = False
    while not done:
        action = agent.act(obs)
        assert agent.pose[:2] == tuple(env.agent_pos)
        obs, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    assert agent.relocalisations == 0 and not agent.pose_correction.any()
