"""The parts an :class:`~embodmem.memory.episodic.AgentMemory` is made of, and its counters.

A memory is a long-term store, a short-term FIFO, a topological map and a few counters, all built
from one :class:`~embodmem.memory.config.MemoryConfig`. :class:`MemoryParts` is that bundle: the
memory holds one, and :mod:`embodmem.memory.snapshot` saves and restores one, so the snapshot never
needs to know the memory class (and the two modules import each other in one direction only).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from embodmem.memory.config import MemoryConfig
from embodmem.memory.fifo import ShortTermFIFO
from embodmem.memory.store import LongTermStore
from embodmem.memory.topomap import TopologicalMap


class MemoryCounters(BaseModel):
    """What a memory has done so far; a snapshot saves them in ``manifest.json`` field ``state``.

    Example:
        >>> c = MemoryCounters()
        >>> c.next_id += 1
        >>> c.next_id, c.segment
        (1, None)
    """

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

    frames_written: int = Field(default=0, ge=0)
    """Frames written by ``observe`` (equals ``next_id``: every frame gets the next id)."""
    next_id: int = Field(default=0, ge=0)
    """Id of the next frame written."""
    consolidations: int = Field(default=0, ge=0)
    """FIFO consolidations that moved records into the long-term store."""
    sleeps: int = Field(default=0, ge=0)
    """Offline consolidation passes."""
    queries: int = Field(default=0, ge=0)
    """Query vectors answered."""
    segment: tuple[str, str, int] | None = None
    """(run_id, task, episode) of the latest frame written (a new segment breaks the map's trajectory)."""


@dataclass
class MemoryParts:
    """Store, FIFO, map and counters of one memory, built from (and agreeing with) ``config``."""

    config: MemoryConfig
    store: LongTermStore
    fifo: ShortTermFIFO
    map: TopologicalMap
    counters: MemoryCounters

    @classmethod
    def fresh(cls, config: MemoryConfig) -> MemoryParts:
        """Empty parts as ``config`` describes them (the cold start)."""
        return cls(
            config=config,
            store=LongTermStore(config),
            fifo=ShortTermFIFO(config.dim, config.short_term_capacity, config.consolidate_to),
            map=TopologicalMap(config.dim, config.node_distance, config.node_similarity, config.node_rule),
            counters=MemoryCounters(),
        )
