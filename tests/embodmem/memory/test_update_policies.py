"""The stock memory's update policies on contradictions, duplicates and re-observations (the cases
Mem0's users hit: a contradicting fact must replace the old one, never delete it without adding)."""

from __future__ import annotations

import numpy as np
import pytest

from embodmem.memory import AgentMemory, MemoryConfig
from embodmem.memory.records import FrameMeta

DIM = 8
WRECK, WATER, OTHER = (np.eye(DIM, dtype=np.float32)[i] for i in range(3))


def memory(policy: str, **settings: object) -> AgentMemory:
    config = MemoryConfig(dim=DIM, short_term_capacity=2, consolidate_to=2, update_policy=policy, **settings)  # type: ignore[arg-type]
    return AgentMemory(config)


def see(mem: AgentMemory, vector: np.ndarray, task: int, step: int, x: float = 5.0, heading: int = 0) -> None:
    mem.observe(vector, FrameMeta("run", f"task{task}", task, step, x, 3.0, heading))


def end_task(mem: AgentMemory) -> None:
    mem.flush()


def episodes_holding(mem: AgentMemory, vector: np.ndarray) -> list[int]:
    return sorted(h.meta.episode for h in mem.query(vector, k=10, count_hits=False) if h.score > 0.99)


@pytest.mark.parametrize("policy", ["overwrite", "consolidate"])
def test_a_contradicting_view_replaces_the_old_one_and_is_kept_itself(policy: str) -> None:
    mem = memory(policy)
    see(mem, WRECK, 0, 1)
    see(mem, WRECK, 0, 2)
    end_task(mem)
    see(mem, WATER, 1, 1)  # the same view a task later: the wreck is gone
    see(mem, WATER, 1, 2)
    end_task(mem)
    assert episodes_holding(mem, WRECK) == []
    assert episodes_holding(mem, WATER) == [1, 1]  # the new fact is there (not deleted with the old)
    assert mem.updates.removed == 2 and mem.updates.compared >= 2 and mem.updates.passes >= 1
    assert mem.updates.bytes_freed > 0 and mem.updates.seconds >= 0


@pytest.mark.parametrize("policy", ["overwrite", "consolidate"])
def test_duplicates_and_reobservations_are_not_contradictions(policy: str) -> None:
    mem = memory(policy)
    see(mem, WRECK, 0, 1)
    see(mem, WRECK, 0, 2)  # a duplicate within the task
    end_task(mem)
    see(mem, WRECK, 1, 1)  # the same view again, a task later: still there
    see(mem, OTHER, 1, 2, x=20.0)  # another place altogether
    end_task(mem)
    assert episodes_holding(mem, WRECK) == [0, 0, 1]
    assert mem.updates.removed == 0


def test_keep_first_keeps_the_stale_view() -> None:
    mem = memory("keep_first")
    see(mem, WRECK, 0, 1)
    see(mem, WRECK, 0, 2)
    end_task(mem)
    see(mem, WATER, 1, 1)
    see(mem, WATER, 1, 2)
    end_task(mem)
    assert episodes_holding(mem, WRECK) == [0, 0] and mem.updates.removed == 0


def test_recency_ranks_newer_sightings_first_and_decay_forgets_old_ones() -> None:
    near = (WRECK * 0.9 + OTHER * 0.1) / np.linalg.norm(WRECK * 0.9 + OTHER * 0.1)
    for policy, expect_old in (("keep_first", True), ("recency", True), ("decay", False)):
        mem = memory(policy, recency_half_life=1.0, decay_floor=0.25)
        see(mem, WRECK, 0, 1, x=2.0)
        see(mem, WRECK, 0, 2, x=2.0)
        end_task(mem)
        for task in (1, 2, 3):
            see(mem, near, task, 1, x=20.0)
            see(mem, OTHER, task, 2, x=25.0)
            end_task(mem)
        hits = mem.query(WRECK, k=5, count_hits=False)
        first = hits[0].meta.episode
        assert (first == 0) == (policy == "keep_first")
        assert any(h.meta.episode == 0 for h in hits) == expect_old


def test_an_unknown_policy_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="MemoryConfig.update_policy must be 'keep_first' or 'overwrite'"):
        MemoryConfig(update_policy="forget_everything")
