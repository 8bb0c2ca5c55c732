"""The memory agent's place-level contradiction check: a place memory says a kind is at, looked at
closely from two viewpoints by frames that do not show the kind, stops being recalled under an
updating policy (and its frames go, under ``overwrite``); keep-first never updates; a changing
world's record carries the agent's steps to correct, a static world's records none of it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from embodmem.agents.memory_agent import MemoryAgent
from embodmem.condition import Condition
from embodmem.embedding.embedder import ClipEmbedder
from embodmem.envs.changes import WorldChange, WorldChanges
from embodmem.envs.objects import TARGET_KINDS
from embodmem.envs.spec import DIR_TO_VEC
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.memory import AgentMemory, MemoryConfig
from embodmem.runner import SequenceSpec, run_sequence


@pytest.fixture(scope="module")
def embedder() -> ClipEmbedder:
    return ClipEmbedder(threads=1)


TASKS = ("barrel", "wreck", "barrel")
MOVED = WorldChanges("moved", [WorldChange("move", "barrel", task=3, to="far")])


def _agent(embedder: ClipEmbedder, policy: str) -> MemoryAgent:
    return MemoryAgent(embedder, AgentMemory(MemoryConfig(dim=embedder.dim, update_policy=policy)))


def test_two_close_looks_without_the_kind_contradict_where_the_map_recognised_it(embedder: ClipEmbedder) -> None:
    """The barrel's cell, recorded as where a barrel was recognised, looked at straight on from two
    cells away by frames that do not show a barrel, from two viewpoints: contradicted (one look is
    not enough); a frame that shows a barrel there again clears it."""
    env = UnderwaterEnv(world_seed=9002)
    agent = _agent(embedder, "overwrite")
    obs, _ = env.reset(seed=0, options={"task": "wreck"})
    agent.reset(obs, env.sensor_spec)
    assert agent.grid is not None and agent.contradicted is not None
    agent.grid.occupied[:] = env.world.kinds > 0
    agent.grid.free[:] = env.world.kinds == 0
    k = TARGET_KINDS.index("barrel")
    free = env.world.free()
    target, poses = None, []
    for cx, cy in map(tuple, env.world.instance_cells("barrel")[0]):
        poses = []
        for d, (dx, dy) in enumerate(DIR_TO_VEC):
            x, y = cx - 2 * dx, cy - 2 * dy
            between = (cx - dx, cy - dy)
            if 0 <= x < free.shape[1] and 0 <= y < free.shape[0] and free[y, x] and free[between[1], between[0]]:
                poses.append((x, y, d))
        if len(poses) >= 2:
            target = (int(cx), int(cy))
            break
    assert target is not None
    agent.grid.recognised_by_kind[k, target[1], target[0]] = True
    nothing = np.zeros(len(TARGET_KINDS), dtype=bool)
    agent.pose = poses[0]
    agent._check_remembered_places(nothing)
    assert not agent.contradicted[k].any()
    agent.pose = poses[1]
    agent._check_remembered_places(nothing)
    assert agent.contradicted[k, target[1], target[0]] and agent.contradicted[k].sum() == 1
    assert agent._ruled_out_by_map(votes=True)[target[1], target[0]] if agent.mission_kind == "barrel" else True
    seen = nothing.copy()
    seen[k] = True
    agent._check_remembered_places(seen)
    assert not agent.contradicted[k].any()


def _run(embedder: ClipEmbedder, policy: str, changes: WorldChanges | None, world: int) -> tuple[MemoryAgent, list]:
    env = UnderwaterEnv(tasks=TASKS, world_seed=world, changes=changes, max_steps=300)
    agent = _agent(embedder, policy)
    spec = SequenceSpec("revisit", TASKS, world, 0, Condition.warm)
    return agent, [r.record for r in run_sequence(env, agent, spec, "t")]


def test_an_updating_memory_corrects_itself_and_keep_first_never_updates(embedder: ClipEmbedder) -> None:
    """The barrel moved before the third task: keep-first goes to the old place, rejects it (its only
    update) and never marks a place contradicted; ``overwrite`` marks the old place contradicted for
    barrels, removes the frames that sent it there, and records the steps from the first
    contradicting look to that update."""
    keep_agent, keep = _run(embedder, "keep_first", MOVED, 1000)
    over_agent, over = _run(embedder, "overwrite", MOVED, 1000)
    assert keep_agent.contradicted is not None and not keep_agent.contradicted.any()
    assert keep[2].stat("goal_changed") is True and keep[2].stat("steps_to_correct") is not None
    assert over_agent.contradicted is not None and over_agent.contradicted[TARGET_KINDS.index("barrel")].any()
    first = over_agent.place_updates[0]
    assert first.kind == "barrel" and first.updated_step is not None and first.updated_step >= first.first_step
    assert over[2].stat("steps_to_correct") == first.updated_step - first.first_step + 1
    assert (over[2].stat("memory_update_removed") or 0) > 0
    assert [r.steps for r in keep[:2]] == [r.steps for r in over[:2]]  # nothing contradicted before the move


def test_a_static_world_keeps_its_records_and_a_snapshot_keeps_the_contradictions(
    embedder: ClipEmbedder, tmp_path: Path
) -> None:
    """No change: an updating policy takes keep-first's steps and writes no staleness fields;
    what it marked contradicted (cells where a recognition cone said a kind might be and close
    looks said it is not) comes back from a snapshot."""
    _, keep = _run(embedder, "keep_first", None, 1000)
    over_agent, over = _run(embedder, "overwrite", None, 1000)
    assert [r.steps for r in keep] == [r.steps for r in over]
    assert all("steps_to_correct" not in r.plain() for r in keep + over)
    assert over_agent.contradicted is not None
    over_agent.save_state(tmp_path / "snap")
    loaded = _agent(embedder, "overwrite")
    loaded.load_state(tmp_path / "snap")
    env = UnderwaterEnv(tasks=TASKS, world_seed=1000)
    obs, _ = env.reset(seed=0, options={"task": "barrel"})
    loaded.reset(obs, env.sensor_spec)
    assert loaded.contradicted is not None and np.array_equal(loaded.contradicted, over_agent.contradicted)
