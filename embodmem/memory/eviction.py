"""Eviction policies of the long-term store: which records go first when the byte budget is hit.

Each policy reads the store's metadata (:class:`~embodmem.memory.records.MetaTable`) and returns every
row, first victim first. A new policy is one function here plus one line in :data:`EVICTION_POLICIES`;
``MemoryConfig.eviction`` accepts its name from then on.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from embodmem.memory.records import MetaTable


def fifo_order(meta: MetaTable) -> np.ndarray:
    """Oldest first (rows are in id order, which is age order)."""
    return np.arange(len(meta))


def least_used_order(meta: MetaTable) -> np.ndarray:
    """Fewest query hits first, then fewest merged frames, then oldest."""
    return np.lexsort((meta.ids, meta.col("count"), meta.col("hits")))


def places_order(meta: MetaTable) -> np.ndarray:
    """Least used, but each map node's most used (then newest) record last: a view of every place is
    kept while the budget allows."""
    ids, count, hits, node = meta.ids, meta.col("count"), meta.col("hits"), meta.col("node")
    by_node = np.lexsort((ids, count, hits, node))
    keeper = np.zeros(len(meta), dtype=bool)
    last_of_node = np.r_[node[by_node][1:] != node[by_node][:-1], True]
    keeper[by_node[last_of_node]] = True
    return np.lexsort((ids, count, hits, keeper))


def kinds_order(meta: MetaTable) -> np.ndarray:
    """Frames the writer labelled with a target kind last: a view of every kind seen is kept while the
    budget allows (:func:`kinds_eviction_order`)."""
    return kinds_eviction_order(
        meta.ids, meta.col("hits"), meta.col("node"), meta.col("label"), meta.col("salience"),
        meta.code("", create=False),
    )  # fmt: skip


def kinds_eviction_order(
    ids: np.ndarray, hits: np.ndarray, node: np.ndarray, label: np.ndarray, salience: np.ndarray, unlabelled: int
) -> np.ndarray:
    """Rows, first victim first, for the ``kinds`` policy (columns of a :class:`MetaTable`).

    Three tiers: unlabelled records (``label == unlabelled``; fewest hits, then oldest), labelled
    records that are not their (label, node) pair's keeper (lowest salience, then oldest), keepers.
    A pair's keeper is its most salient record (the newest on ties). Keepers are ranked within their
    label, best first; the worst-ranked go first, so the label with the most keepers loses one first
    and every label keeps its best view until only one view per label is left.

    Example:
        >>> order = kinds_eviction_order(
        ...     ids=np.arange(6), hits=np.zeros(6), node=np.array([0, 0, 0, 1, 2, 3]),
        ...     label=np.array([0, 1, 1, 1, 1, 2]), salience=np.array([0, 0.6, 0.5, 0.9, 0.8, 0.7]), unlabelled=0)
        >>> order.tolist()  # unlabelled; non-keeper; label 1's worst keepers; one view per label
        [0, 2, 1, 4, 5, 3]
    """
    n = len(ids)
    tier = np.where(label == unlabelled, 0, 1)
    labelled = np.flatnonzero(tier == 1)
    by_pair = labelled[np.lexsort((ids[labelled], salience[labelled], node[labelled], label[labelled]))]
    last = np.ones(len(by_pair), dtype=bool)  # the last row of each (label, node) run is its keeper
    last[:-1] = (label[by_pair][1:] != label[by_pair][:-1]) | (node[by_pair][1:] != node[by_pair][:-1])
    keepers = by_pair[last]
    tier[keepers] = 2
    # rank of each keeper within its label: 0 for the best (most salient, then newest)
    by_label = keepers[np.lexsort((ids[keepers], salience[keepers], label[keepers]))]
    ends = np.r_[np.flatnonzero(label[by_label][1:] != label[by_label][:-1]), len(by_label) - 1]
    group_end = ends[np.searchsorted(ends, np.arange(len(by_label)))]
    rank = np.zeros(n, dtype=np.int64)
    rank[by_label] = group_end - np.arange(len(by_label))
    hits_key = np.where(tier == 0, hits, 0)
    salience_key = np.where(tier == 0, 0.0, salience)
    return np.lexsort((ids, salience_key, hits_key, -rank, tier))


EVICTION_POLICIES: dict[str, Callable[[MetaTable], np.ndarray]] = {
    "fifo": fifo_order,
    "least_used": least_used_order,
    "places": places_order,
    "kinds": kinds_order,
}
"""Policy name -> rows of a :class:`MetaTable`, first victim first."""

EVICTIONS = tuple(EVICTION_POLICIES)
"""The names ``MemoryConfig.eviction`` accepts."""
