"""How the stock memory updates what it holds when the world changes (``MemoryConfig.update_policy``).

A memory that only appends keeps every view it ever had, so after an object moves it still holds
the old sightings beside the new ones; the field's anchors (LongMemEval's knowledge updates,
MemoryAgentBench's fact consolidation, Mem0's add-only memory with decay) each resolve that
differently. The policies, each a named setting of :class:`~embodmem.memory.episodic.AgentMemory`:

- ``keep_first``: never update (the stock memory as it always was);
- ``overwrite``: on contradiction, online: when frames move into long-term memory, an older record
  of an earlier task taken from the same view (within ``update_view_cells`` cells, same heading)
  whose vector disagrees with the new one (cosine below ``contradiction_similarity``) is removed.
  The new record is written first and never removed by its own check (Mem0's bug, mem0 #4536,
  deleted the old fact without adding the new one);
- ``recency``: recency-weighted retrieval: a query fetches ``RECENCY_OVERFETCH`` times more
  candidates and ranks them by similarity x 0.5 ** (tasks ago / ``recency_half_life``);
- ``decay``: time-decayed confidence: a record's weight halves every ``recency_half_life`` tasks,
  and records weighing less than ``decay_floor`` are no longer returned (forgotten, not deleted);
- ``consolidate``: the ``overwrite`` check run offline, over the whole store, once at the end of
  every task (``AgentMemory.flush`` from the agent's ``end_task``), its compute counted
  (:class:`UpdateStats`: records compared and removed, bytes freed, seconds).

Example:
    >>> recency_weights(np.array([0, 2, 3]), latest=3, half_life=1.0).tolist()
    [0.125, 0.5, 1.0]
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from embodmem.memory.config import UPDATE_POLICIES as UPDATE_POLICIES  # defined with the settings
from embodmem.memory.records import Hit
from embodmem.memory.store import LongTermStore

RECENCY_OVERFETCH = 4
"""``recency`` and ``decay`` fetch this many times ``k`` candidates before weighing them by age."""


@dataclass
class UpdateStats:
    """What the update policy did and cost since the memory was built or reset."""

    compared: int = 0
    """Pairs of records checked for a contradiction."""
    removed: int = 0
    """Records removed as contradicted."""
    bytes_freed: int = 0
    """Vector-code bytes those records held."""
    seconds: float = 0.0
    """Wall time spent in the checks."""
    passes: int = 0
    """Checks run (online: per move into long-term memory; offline: per task)."""


@dataclass
class PlaceUpdate:
    """A place memory said a kind was at, contradicted by the robot's own looks (the memory agent's
    place-level check): when that was first observed and when memory was updated."""

    kind: str
    cell: tuple[int, int]
    first_step: int
    """Step of the first observation that contradicted it."""
    updated_step: int | None = None
    """Step at which memory was updated (None: not yet; ``consolidate`` waits for the task's end)."""
    views: frozenset[tuple[int, int, int]] = frozenset()
    """Poses of the remembered frames that sent the robot there (empty: a place only passed by)."""


CONTRADICTED_WEIGHT = {"overwrite": 0.0, "consolidate": 0.0, "decay": 0.0, "recency": 0.5}
"""What a remembered frame behind a contradicted place still weighs as a sighting, per policy:
``overwrite`` and ``consolidate`` remove it (now, or at the task's end), ``decay`` forgets it
(kept, never returned as a sighting again), ``recency`` counts it as one half-life older."""


def forget_records(store: LongTermStore, stats: UpdateStats, ids: Sequence[int]) -> int:
    """Remove the long-term records ``ids`` (those still held) as contradicted, counting the work in
    ``stats``; the number removed.

    Example:
        >>> from embodmem.memory.config import MemoryConfig
        >>> from embodmem.memory.records import FrameMeta
        >>> store = LongTermStore(MemoryConfig(dim=4))
        >>> metas = [FrameMeta("r", "t", 0, i, float(i), 0.0, 0) for i in range(3)]
        >>> _ = store.add(np.eye(4, dtype=np.float32)[:3], metas, np.arange(3))
        >>> stats = UpdateStats()
        >>> forget_records(store, stats, [1, 7]), len(store), stats.removed
        (1, 2, 1)
    """
    started = time.perf_counter()
    held = set(store.meta.ids.tolist())
    gone = np.array(sorted({int(i) for i in ids} & held), dtype=np.int64)
    before = store.stats()["code_bytes"]
    if len(gone):
        store.remove(gone)
    stats.removed += len(gone)
    stats.bytes_freed += before - store.stats()["code_bytes"]
    stats.seconds += time.perf_counter() - started
    stats.passes += 1
    return len(gone)


def recency_weights(episodes: np.ndarray, latest: int, half_life: float) -> np.ndarray:
    """0.5 ** (tasks ago / ``half_life``) for records written in ``episodes`` (task positions)."""
    age = np.maximum(latest - np.asarray(episodes, dtype=np.float64), 0.0)
    return np.power(0.5, age / half_life)


def weigh_by_age(hits: Sequence[Hit], k: int, latest: int, half_life: float, floor: float | None) -> list[Hit]:
    """The best ``k`` of ``hits`` by similarity x age weight (``floor``: drop those weighing less)."""
    if not hits:
        return []
    weights = recency_weights(np.array([h.meta.episode for h in hits]), latest, half_life)
    keep = [(h.score * float(w), i, h) for i, (h, w) in enumerate(zip(hits, weights)) if floor is None or w >= floor]
    keep.sort(key=lambda item: (-item[0], item[1]))
    return [h for _, _, h in keep[:k]]


def contradicted(
    store: LongTermStore, new_ids: np.ndarray | None, view_cells: float, min_similarity: float
) -> tuple[np.ndarray, int]:
    """Ids of long-term records that a later record from the same view contradicts, and the number
    of pairs compared. ``new_ids``: only those records speak (online); None: every record (offline).
    A record is contradicted by a record of a *later* task taken within ``view_cells`` cells with
    the same heading whose vector's cosine to it is below ``min_similarity``; the newest view of a
    place is never the one removed."""
    meta = store.meta
    if len(store) < 2:
        return np.zeros(0, dtype=np.int64), 0
    ids = meta.ids
    x, y, heading, episode = meta.col("x"), meta.col("y"), meta.col("heading"), meta.col("episode")
    speakers = np.arange(len(ids)) if new_ids is None else meta.rows_of(np.asarray(new_ids, dtype=np.int64))
    removed: set[int] = set()
    compared = 0
    for row in speakers.tolist():
        same_view = (
            (np.abs(x - x[row]) <= view_cells)
            & (np.abs(y - y[row]) <= view_cells)
            & (heading == heading[row])
            & (episode < episode[row])
        )
        older = np.flatnonzero(same_view)
        if len(older) == 0:
            continue
        vectors = store.vectors(ids[np.concatenate([[row], older])])
        sims = vectors[1:] @ vectors[0]
        compared += len(older)
        removed.update(int(i) for i in ids[older[sims < min_similarity]])
    return np.array(sorted(removed), dtype=np.int64), compared


def remove_contradicted(
    store: LongTermStore, stats: UpdateStats, new_ids: np.ndarray | None, view_cells: float, min_similarity: float
) -> int:
    """Remove what :func:`contradicted` finds, counting the work in ``stats``; the number removed."""
    started = time.perf_counter()
    before = store.stats()["code_bytes"]
    gone, compared = contradicted(store, new_ids, view_cells, min_similarity)
    if len(gone):
        store.remove(gone)
    stats.compared += compared
    stats.removed += len(gone)
    stats.bytes_freed += before - store.stats()["code_bytes"]
    stats.seconds += time.perf_counter() - started
    stats.passes += 1
    return len(gone)
