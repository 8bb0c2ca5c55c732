"""False memories: where the harness says they were seen, and that the runner implants them."""

from __future__ import annotations

import numpy as np
import pytest

from embodmem.agents.memory_agent import MemoryAgent
from embodmem.condition import Condition
from embodmem.embedding.embedder import ClipEmbedder
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.poison import MIN_DISTANCE_CELLS, false_memories
from embodmem.runner import SequenceSpec, run_sequence


@pytest.fixture(scope="module")
def embedder() -> ClipEmbedder:
    return ClipEmbedder(threads=1)


def _far_from_drums(env: UnderwaterEnv, poses: list[tuple[int, int, int]]) -> bool:
    cells = np.concatenate(env.world.instance_cells("barrel"))
    return all(np.min(np.hypot(cells[:, 0] - x, cells[:, 1] - y)) >= MIN_DISTANCE_CELLS for x, y, _ in poses)


def test_far_false_memories_lie_on_free_cells_far_from_every_instance() -> None:
    env = UnderwaterEnv(tasks=("wreck", "barrel"), world_seed=1003)
    env.reset(seed=0)
    images, poses = false_memories(env, "barrel", 12, seed=3)
    assert images.shape == (12, 64, 64, 3) and len(poses) == 12
    free = env.world.free()
    assert all(free[y, x] for x, y, _ in poses) and _far_from_drums(env, poses)
    again = false_memories(env, "barrel", 12, seed=3)
    other = false_memories(env, "barrel", 12, seed=4)
    assert again[1] == poses and np.array_equal(again[0], images) and other[1] != poses


def test_trail_false_memories_use_only_the_trail_when_it_has_far_cells() -> None:
    env = UnderwaterEnv(tasks=("wreck", "barrel"), world_seed=1003)
    env.reset(seed=0)
    free = env.world.free()
    ys, xs = np.nonzero(free)
    trail = {(int(x), int(y)) for x, y in zip(xs[::7], ys[::7])}
    _, poses = false_memories(env, "barrel", 20, seed=1, trail=trail)
    assert {(x, y) for x, y, _ in poses} <= trail and _far_from_drums(env, poses)
    near = {c for c in trail if not _far_from_drums(env, [(*c, 0)])}
    _, fallback = false_memories(env, "barrel", 5, seed=1, trail=near)  # no far trail cell: any free cell
    assert _far_from_drums(env, fallback)


class _Spy(MemoryAgent):
    implanted: list[list[tuple[int, int, int]]]

    def implant(self, images, poses):
        self.implanted.append(list(poses))
        super().implant(images, poses)


@pytest.mark.parametrize("place", ["far", "trail"])
def test_runner_implants_before_later_warm_tasks_where_asked(embedder: ClipEmbedder, place: str) -> None:
    env = UnderwaterEnv(tasks=("wreck", "barrel"), world_seed=1003, max_steps=40)
    agent = _Spy(embedder)
    agent.implanted = []
    spec = SequenceSpec("s", ("wreck", "barrel"), 1003, 0, Condition.warm, poison_k=6, poison_place=place)
    results = run_sequence(env, agent, spec, "r")
    assert len(agent.implanted) == 1 and len(agent.implanted[0]) == 6  # before task 2 only
    cells = {(x, y) for x, y, _ in agent.implanted[0]}
    on_trail = cells <= results[0].outcome.visited_cells
    assert on_trail if place == "trail" else not on_trail
    assert {r.record.poison_place for r in results} == {place}
    cold = _Spy(embedder)
    cold.implanted = []
    run_sequence(env, cold, SequenceSpec("s", ("wreck", "barrel"), 1003, 0, Condition.cold, poison_k=6), "r")
    assert cold.implanted == []  # cold is the no-memory reference
