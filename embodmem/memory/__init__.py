"""Episodic memory for embodied agents: FIFO with consolidation, a compressed FAISS store, a
topological map, sleep-time consolidation and crash-safe persistence.

Example:
    >>> import numpy as np
    >>> from embodmem.memory import AgentMemory, FrameMeta, MemoryConfig
    >>> mem = AgentMemory(MemoryConfig(dim=8))
    >>> v = np.ones(8, dtype=np.float32) / np.sqrt(8)
    >>> mem.observe(v, FrameMeta(run_id="r", task="task1", episode=0, step=0, x=1.0, y=2.0))
    0
    >>> mem.query(v, k=1)[0].meta.x
    1.0
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from embodmem.lazy import lazy_attributes

# Eager: ``sleep`` names both a submodule and its function, and importing the submodule rebinds the
# package's attribute to the module, so a lazily resolved function could be replaced by the module.
from embodmem.memory.sleep import sleep

if TYPE_CHECKING:
    from embodmem.memory.config import MemoryConfig
    from embodmem.memory.episodic import AgentMemory, MemoryStats, WriteContext
    from embodmem.memory.fifo import ShortTermFIFO, merge_adjacent
    from embodmem.memory.persistence import MemoryLoadError
    from embodmem.memory.records import ANY_RECORD, FrameMeta, Hit, QueryFilter
    from embodmem.memory.store import LongTermStore
    from embodmem.memory.topomap import TopologicalMap

_HOMES = {
    "ANY_RECORD": "embodmem.memory.records",
    "AgentMemory": "embodmem.memory.episodic",
    "FrameMeta": "embodmem.memory.records",
    "Hit": "embodmem.memory.records",
    "LongTermStore": "embodmem.memory.store",
    "MemoryConfig": "embodmem.memory.config",
    "MemoryLoadError": "embodmem.memory.persistence",
    "MemoryStats": "embodmem.memory.episodic",
    "QueryFilter": "embodmem.memory.records",
    "ShortTermFIFO": "embodmem.memory.fifo",
    "TopologicalMap": "embodmem.memory.topomap",
    "WriteContext": "embodmem.memory.episodic",
    "merge_adjacent": "embodmem.memory.fifo",
}
"""Where each name lives: imported when first asked for, so that the config checks, which read
``embodmem.memory.config`` alone, do not import FAISS and the store."""

__getattr__ = lazy_attributes(__name__, _HOMES)

__all__ = [
    "ANY_RECORD",
    "AgentMemory",
    "FrameMeta",
    "Hit",
    "LongTermStore",
    "MemoryConfig",
    "MemoryLoadError",
    "MemoryStats",
    "QueryFilter",
    "ShortTermFIFO",
    "TopologicalMap",
    "WriteContext",
    "merge_adjacent",
    "sleep",
]
