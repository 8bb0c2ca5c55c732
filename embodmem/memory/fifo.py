"""Short-term memory: a FIFO of raw frames, consolidated MovieChat-style when full.

MovieChat (Song et al., CVPR 2024) keeps recent frames raw and, when the short-term buffer is full,
repeatedly merges the most similar pair of *adjacent* frames until a target number is left; those
consolidated frames move to long-term memory. Merging only neighbours keeps each record a contiguous
stretch of time, so its step span and pose stay meaningful.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from embodmem.memory.records import ANY_RECORD, FrameMeta, Hit, QueryFilter, copy_meta, merge_metas


def merge_adjacent(
    vectors: np.ndarray,
    counts: Sequence[int] | np.ndarray,
    target: int,
    barriers: Sequence[bool] | np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, list[list[int]]]:
    """Merge the most similar adjacent pair, repeatedly, until ``target`` vectors are left.

    Similarity is the cosine of the (unit) vectors. A merge replaces two neighbours by their
    count-weighted mean, renormalised to unit length, whose count is the sum. Ties go to the earliest
    pair, so the result is deterministic.

    Args:
        vectors: ``(n, d)`` unit vectors in time order.
        counts: ``n`` positive frame counts (1 for raw frames).
        target: Number of vectors to keep (``>= 1``).
        barriers: Optional ``n - 1`` booleans; ``barriers[i]`` forbids merging ``i`` with ``i + 1``
            (e.g. an episode boundary). Merging stops early when only forbidden pairs remain.

    Returns:
        ``(vectors, counts, groups)``: the merged unit vectors (float32), their counts, and for each
        the list of input indices merged into it (contiguous, ascending).

    Example:
        >>> v = np.array([[1, 0], [1, 0], [0, 1]], dtype=np.float32)
        >>> out, c, g = merge_adjacent(v, [1, 1, 1], 2)
        >>> g, c.tolist()
        ([[0, 1], [2]], [2, 1])
    """
    v = np.array(vectors, dtype=np.float64, copy=True)
    if v.ndim != 2:
        raise ValueError(f"vectors must be 2-D (n, d), got shape {v.shape}")
    n = len(v)
    c = np.array(counts, dtype=np.int64, copy=True)
    if c.shape != (n,) or (n and c.min() < 1):
        raise ValueError(f"counts must be {n} positive integers, got {c.tolist()}")
    if target < 1:
        raise ValueError(f"target must be >= 1, got {target}")
    blocked = np.zeros(n, dtype=bool)  # blocked[i]: i may not merge with its right neighbour
    if barriers is not None:
        b = np.asarray(barriers, dtype=bool)
        if b.shape != (max(n - 1, 0),):
            raise ValueError(f"barriers must have {max(n - 1, 0)} entries, got {b.shape}")
        blocked[: n - 1] = b
    # Linked list over the survivors; sims[i] is the cosine of i and its right neighbour (-inf: none).
    # A full buffer is merged every few steps: counts and flags are Python lists and each merge is
    # worked in place on rows of ``v`` (the same arithmetic as whole-array expressions, bit for bit).
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    sims = np.full(n, -np.inf)
    if n > 1:
        sims[:-1] = np.einsum("ij,ij->i", v[:-1], v[1:])
    sims[blocked] = -np.inf
    block = blocked.tolist()
    count = c.tolist()
    groups: list[list[int] | None] = [[i] for i in range(n)]
    alive = n
    merged = np.empty(v.shape[1:], dtype=np.float64)
    other = np.empty_like(merged)
    minus_inf = -math.inf
    while alive > target:
        i = int(sims.argmax())  # earliest pair on ties
        if sims[i] == minus_inf:
            break
        j = nxt[i]
        vi, vj = v[i], v[j]
        ci, cj = count[i], count[j]
        # The count-weighted sum; a count of 1 leaves its row as it is (x * 1 is x exactly), so a
        # raw frame is added without its multiplication: the same sum, bit for bit.
        if ci == 1:
            np.add(vi, vj if cj == 1 else np.multiply(vj, cj, out=other), out=merged)
        else:
            np.multiply(vi, ci, out=merged)
            merged += vj if cj == 1 else np.multiply(vj, cj, out=other)
        norm = math.sqrt(merged @ merged)
        if norm > 1e-12:
            np.divide(merged, norm, out=vi)
        else:
            vi[:] = vj
        count[i] += count[j]
        gi, gj = groups[i], groups[j]
        assert gi is not None and gj is not None  # both alive: linked-list neighbours
        gi.extend(gj)
        groups[j] = None
        k = nxt[i] = nxt[j]
        if k < n:
            prv[k] = i
        block[i] = block[j]
        sims[j] = minus_inf
        sims[i] = minus_inf if (k >= n or block[i]) else float(vi @ v[k])
        p = prv[i]
        if p >= 0 and not block[p]:
            sims[p] = float(v[p] @ vi)
        alive -= 1
    keep = [i for i in range(n) if groups[i] is not None]
    v, c = v[keep], np.asarray([count[i] for i in keep], dtype=np.int64)
    groups = [groups[i] for i in keep]
    return v.astype(np.float32), c, groups  # type: ignore[return-value]


class Consolidated(NamedTuple):
    """Records handed from short-term to long-term memory."""

    vectors: np.ndarray
    metas: list[FrameMeta]
    ids: np.ndarray


def _segment(meta: FrameMeta) -> tuple[str, str, int]:
    return (meta.run_id, meta.task, meta.episode)


class ShortTermFIFO:
    """Raw recent frames; consolidates itself into long-term records when full.

    Frames from different (run, task, episode) segments are never merged together, so task and
    episode filters stay exact after consolidation.

    Args:
        dim: Embedding dimension.
        capacity: Frames held before consolidation.
        consolidate_to: Records produced by one consolidation of a full buffer.
    """

    def __init__(self, dim: int, capacity: int, consolidate_to: int) -> None:
        if not 1 <= consolidate_to <= capacity:
            raise ValueError(f"need 1 <= consolidate_to ({consolidate_to}) <= capacity ({capacity})")
        self.dim = dim
        self.capacity = capacity
        self.consolidate_to = consolidate_to
        self._vecs = np.zeros((capacity, dim), dtype=np.float32)
        self.metas: list[FrameMeta] = []
        self.ids: list[int] = []

    def __len__(self) -> int:
        return len(self.metas)

    @property
    def vectors(self) -> np.ndarray:
        """``(len, dim)`` view of the held frames, oldest first."""
        return self._vecs[: len(self.metas)]

    def push(self, vector: np.ndarray, meta: FrameMeta, record_id: int) -> Consolidated | None:
        """Append a frame; when that fills the buffer, consolidate and return the records."""
        n = len(self.metas)
        self._vecs[n] = vector
        self.metas.append(meta)
        self.ids.append(int(record_id))
        if n + 1 >= self.capacity:
            return self.consolidate(self.consolidate_to)
        return None

    def consolidate(self, target: int | None = None) -> Consolidated:
        """Merge held frames down to ``target`` records (default: the same ratio as a full buffer),
        empty the buffer and return the records, oldest first.

        Each record's id is its latest frame's id; its metadata follows :func:`merge_metas`.
        """
        n = len(self.metas)
        if n == 0:
            return Consolidated(np.zeros((0, self.dim), np.float32), [], np.zeros(0, np.int64))
        if target is None:
            target = max(1, -(-n * self.consolidate_to // self.capacity))
        barriers = [_segment(a) != _segment(b) for a, b in zip(self.metas[:-1], self.metas[1:])]
        counts = [m.count for m in self.metas]
        vecs, _, groups = merge_adjacent(self.vectors, counts, target, barriers)
        metas = [merge_metas([self.metas[i] for i in g]) for g in groups]
        ids = np.asarray([self.ids[g[-1]] for g in groups], dtype=np.int64)
        self.clear()
        return Consolidated(vecs, metas, ids)

    def restore(self, vectors: np.ndarray, metas: list[FrameMeta], ids: list[int]) -> None:
        """Replace the held frames by saved ones (oldest first; fewer than ``capacity``)."""
        if not len(vectors) == len(metas) == len(ids) < self.capacity:
            raise ValueError(f"restore needs as many vectors, metas and ids, fewer than {self.capacity}")
        self._vecs[: len(vectors)] = vectors
        self.metas = list(metas)
        self.ids = [int(i) for i in ids]

    def clear(self) -> None:
        """Drop all held frames."""
        self.metas = []
        self.ids = []

    def _matching(self, where: QueryFilter) -> list[int]:
        """Positions of the held frames passing ``where`` (the long-term store's rules:
        :meth:`QueryFilter.matches <embodmem.memory.records.QueryFilter.matches>`)."""
        if where.is_empty():
            return list(range(len(self.metas)))
        return [i for i, meta in enumerate(self.metas) if where.matches(meta)]

    def search(self, queries: np.ndarray, k: int, where: QueryFilter = ANY_RECORD) -> list[list[Hit]]:
        """Exact top-``k`` over the held frames for each query row, restricted to ``where``. Each hit
        holds its own copy of the frame's metadata (as the long-term store's hits do)."""
        return [[self.hit(s, p) for s, p in zip(*found)] for found in self.search_positions(queries, k, where)]

    def search_positions(
        self, queries: np.ndarray, k: int, where: QueryFilter = ANY_RECORD
    ) -> list[tuple[list[float], list[int]]]:
        """:meth:`search` as ``(scores, positions in the buffer)`` per query row, best first (ties
        oldest first): a caller that keeps only some builds those hits alone (:meth:`hit`)."""
        out: list[tuple[list[float], list[int]]] = [([], []) for _ in range(len(queries))]
        if not self.metas:
            return out
        keep = self._matching(where)
        if not keep:
            return out
        sims = queries @ self.vectors[keep].T
        for qi, row in enumerate(sims):
            order = np.argsort(-row, kind="stable")[:k]
            out[qi] = (row[order].tolist(), [keep[j] for j in order.tolist()])
        return out

    def hit(self, score: float, position: int) -> Hit:
        """The hit of the held frame at ``position`` (a copy of its metadata) with ``score``."""
        return Hit(score, self.ids[position], copy_meta(self.metas[position]), "short_term")
