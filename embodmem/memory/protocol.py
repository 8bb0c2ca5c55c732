"""What the agents and the runner ask of a memory: the protocol a plug-in memory implements.

These are exactly the calls the memory agent (agents/memory_agent.py), naive retrieval, the VLM
agent, the EQA frame-memory answerer and the runner make on ``agent.memory``; nothing else is ever
called on a plug-in (tests/test_api.py runs experiments through a proxy that refuses anything else).
:class:`~embodmem.memory.AgentMemory` is the stock implementation; ``embodmem.api`` re-exports both.

Example:
    >>> from embodmem.memory import AgentMemory
    >>> missing_memory_members(AgentMemory)
    []
    >>> missing_memory_members(dict)[:3]
    ['reset', 'observe', 'flush']
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from embodmem.memory.records import ANY_RECORD, FrameMeta, Hit, QueryFilter


class MemorySettings(Protocol):
    """The two settings the agents read from ``memory.config`` (:class:`~embodmem.memory.MemoryConfig` has them)."""

    dim: int
    """Embedding size: a loaded snapshot must have it."""
    keep_thumbnails: bool
    """Whether the agent hands a thumbnail with every frame (videos and VLM prompts show them)."""


class PlaceMap(Protocol):
    """``memory.map``: where each place id that :meth:`Memory.observe` returned lies (the VLM's
    "go to node 7" skill reads it). A memory without places keeps an empty list."""

    @property
    def positions(self) -> Sequence[Sequence[float]] | np.ndarray:
        """``positions[node] = (x, y)`` in grid cells."""
        ...


@runtime_checkable
class Memory(Protocol):
    """The memory protocol: every method the agents and the runner call, and nothing more.

    A plug-in class is built as ``MyMemory(config)`` with the run's
    :class:`~embodmem.memory.MemoryConfig` (``config.dim`` is the embedder's size) and may declare a
    class attribute ``version`` (a string saved with its snapshots: a snapshot of another version is
    refused on loading).

    Example:
        >>> from embodmem.memory import AgentMemory, MemoryConfig
        >>> isinstance(AgentMemory(MemoryConfig(dim=4)), Memory), isinstance(object(), Memory)
        (True, False)
    """

    @property
    def config(self) -> MemorySettings:
        """The settings it was built with."""
        ...

    @property
    def map(self) -> PlaceMap:
        """Its places."""
        ...

    def reset(self) -> None:
        """Forget everything (the cold condition, before each task)."""
        ...

    def observe(self, embedding: np.ndarray, meta: FrameMeta) -> int | None:
        """Write one frame (a unit vector of ``config.dim``) and its metadata; return its place id
        (an index into ``map.positions``) or ``None``."""
        ...

    def flush(self) -> object:
        """End of a task: settle what is pending (the stock memory consolidates its short-term frames)."""
        ...

    def query(
        self, vec_or_vecs: np.ndarray, k: int = 5, where: QueryFilter = ANY_RECORD, *, count_hits: bool = True
    ) -> Sequence[Hit] | Sequence[Sequence[Hit]]:
        """For one query vector, the best ``k`` records passing ``where`` (:meth:`QueryFilter.matches`),
        best first, as :class:`~embodmem.memory.Hit`; ``count_hits=False`` for look-ups that must not
        count as use."""
        ...

    def hit_vectors(self, hits: Sequence[Hit]) -> np.ndarray:
        """The stored vectors of ``hits``, ``(len(hits), config.dim)`` float32 (the recogniser re-scores them)."""
        ...

    def stats(self) -> Mapping[str, Any]:
        """Counters; ``frames_kept`` and ``code_bytes`` (bytes of what is kept) are required, ``nodes`` optional."""
        ...

    def sleep(self) -> object:
        """Offline consolidation between tasks (``experiment.sleep_between_tasks``); may do nothing."""
        ...

    def save(self, directory: str | os.PathLike[str]) -> object:
        """Write everything into ``directory`` (created if missing), atomically."""
        ...

    @classmethod
    def load(cls, directory: str | os.PathLike[str], expect_dim: int | None = None) -> Memory:
        """The memory :meth:`save` wrote; refuse one of another ``expect_dim``."""
        ...


MEMORY_METHODS: tuple[str, ...] = (
    "reset",
    "observe",
    "flush",
    "query",
    "hit_vectors",
    "stats",
    "sleep",
    "save",
    "load",
)
"""The methods of :class:`Memory` (a plug-in class lacking one is refused by name)."""
MEMORY_ATTRIBUTES: dict[str, tuple[str, ...]] = {"config": ("dim", "keep_thumbnails"), "map": ("positions",)}
"""The attributes of a built :class:`Memory` and what the agents read from each."""
MEMORY_OPTIONAL_SETTINGS: tuple[str, ...] = ("update_policy",)
"""Settings of ``memory.config`` the memory agent reads when a memory has them: ``update_policy``
(:data:`~embodmem.memory.updates.UPDATE_POLICIES`) chooses what a contradicted place does to the
memory; a memory without it is ``keep_first`` (nothing it holds is changed)."""
MEMORY_STATS: tuple[str, ...] = ("frames_kept", "code_bytes")
"""The keys of :meth:`Memory.stats` the runner writes into every record."""


def missing_memory_members(cls: type) -> list[str]:
    """The :data:`MEMORY_METHODS` a class lacks (``load`` must be a classmethod)."""
    missing = [name for name in MEMORY_METHODS if not callable(getattr(cls, name, None))]
    load = inspect.getattr_static(cls, "load", None)
    if "load" not in missing and not isinstance(load, classmethod | staticmethod):
        missing.append("load (a classmethod)")
    return missing


def memory_instance_problem(memory: object) -> str | None:
    """What a built memory lacks of :data:`MEMORY_ATTRIBUTES` (one phrase), or ``None``."""
    for attribute, fields in MEMORY_ATTRIBUTES.items():
        if not hasattr(memory, attribute):
            return f"has no attribute {attribute!r}"
        owner = getattr(memory, attribute)
        for name in fields:
            if not hasattr(owner, name):
                return f"has no {attribute}.{name}"
    dim = getattr(memory.config, "dim", None)  # type: ignore[attr-defined]
    if not isinstance(dim, int | np.integer):
        return f"has config.dim={dim!r}, not an integer"
    stats = memory.stats() if callable(getattr(memory, "stats", None)) else {}  # type: ignore[attr-defined]
    lacking = [key for key in MEMORY_STATS if not isinstance(stats, Mapping) or key not in stats]
    if lacking:
        return f"reports no {', '.join(lacking)} in stats()"
    return None
