"""The lockstep driver writes each lane's actions when asked (``EMBODMEM_LANE_ACTIONS``): what
benchmarks/floor.py replays to step the same worlds in the same batches without the agents."""

from __future__ import annotations

from pathlib import Path

import pytest

from embodmem.envs.underwater import UnderwaterEnv
from embodmem.lockstep import ACTIONS_DIR_VARIABLE, EnvStep, Lane, LaneActions, Lockstep, run_lanes
from embodmem.runner import Steps


def walk(env: UnderwaterEnv, actions: list[int]) -> Steps[None]:
    obs, _ = env.reset(seed=1)
    for action in actions:
        yield obs
        stepped = yield EnvStep(env, action)
        assert stepped is not None
        obs = stepped[0]


def lanes(plans: list[tuple[int, list[int]]]) -> list[Lane]:
    return [Lane(walk(UnderwaterEnv(task="wreck", image_size=16, world_seed=w), a), embeds=False) for w, a in plans]


def test_each_lanes_actions_are_written_in_the_order_the_lanes_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plans = [(3, [2, 2, 1]), (4, [1]), (5, [0, 2])]
    monkeypatch.setenv(ACTIONS_DIR_VARIABLE, str(tmp_path))
    run_lanes(lanes(plans), Lockstep(2))
    (written,) = tmp_path.glob("lanes-*.json")
    recorded = LaneActions.read(written)
    assert recorded.lanes == 2
    assert recorded.world_seeds == [3, 4, 5]
    assert recorded.actions == [a for _, a in plans]
    assert recorded.embeds == [False, False, False]


def test_nothing_is_written_unless_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ACTIONS_DIR_VARIABLE, raising=False)
    monkeypatch.chdir(tmp_path)
    run_lanes(lanes([(3, [2])]), Lockstep(1))
    assert list(tmp_path.iterdir()) == []
