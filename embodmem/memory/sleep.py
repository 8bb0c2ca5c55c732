"""Offline "sleep-time" consolidation of long-term memory, as in LightMem (Fang et al., 2025).

Online writes are cheap and local (the short-term FIFO only merges neighbours in time). Between
tasks, when the whole history is visible, this pass finds near-duplicate records anywhere in time
(same map node, optionally within a distance), merges them, retrains the quantiser if the data has
drifted away from what it was trained on, and re-indexes.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from embodmem.memory.records import NO_NODE

if TYPE_CHECKING:  # the store imports FAISS; the package imports this module eagerly (see its __init__)
    from embodmem.memory.store import LongTermStore


def _group_keys(store: LongTermStore, cell: float, same_task: bool) -> np.ndarray:
    """Per-record group key: the map node, or a pose cell of side ``cell`` when there is none."""
    m = store.meta
    node = m.col("node")
    cx = np.floor(m.col("x") / cell).astype(np.int64) + (1 << 20)
    cy = np.floor(m.col("y") / cell).astype(np.int64) + (1 << 20)
    key = np.where(node != NO_NODE, node, -1 - ((cx << 21) + cy))
    if same_task:
        key = key * 4096 + m.col("task")  # task codes are small (one per task name)
    return key


def _leader_clusters(sims: np.ndarray, close: np.ndarray | None, threshold: float) -> list[np.ndarray]:
    """Greedy leader clustering in time order: a record joins the earliest earlier leader it is
    similar to, so every member is within ``threshold`` of its leader (no chaining drift).

    Returns:
        The clusters with at least two members, as arrays of positions.
    """
    ok = sims >= threshold
    if close is not None:
        ok &= close
    np.fill_diagonal(ok, False)
    cand = np.flatnonzero(ok.any(axis=1))  # records with no near-duplicate stay alone: skip them
    if len(cand) == 0:
        return []
    free = np.zeros(len(sims), dtype=bool)
    free[cand] = True
    out = []
    for i in cand:
        if not free[i]:
            continue
        free[i] = False
        join = ok[i] & free
        join[:i] = False
        if join.any():
            free[join] = False
            out.append(np.concatenate([[i], np.flatnonzero(join)]))
    return out


class SleepReport(TypedDict):
    """What one :func:`sleep` did: records and bytes before/after, merges, drift, retraining, seconds."""

    records_before: int
    records_after: int
    merged_away: int
    """Records merged into others (a cluster of n records loses n - 1)."""
    clusters: int
    code_bytes_before: int
    code_bytes_after: int
    metadata_bytes_before: int
    metadata_bytes_after: int
    drift: float | None
    """Reconstruction error of the recent raw vectors over the error at training (None: not trained)."""
    retrained: bool
    retrain_reason: str | None
    dedup_seconds: float
    retrain_seconds: float
    seconds: float


def sleep(
    store: LongTermStore,
    *,
    dedup_threshold: float = 0.95,
    dedup_distance: float | None = None,
    same_task: bool = False,
    cell: float = 3.0,
    drift_factor: float = 3.0,
    retrain: bool | None = None,
    max_group: int = 2048,
) -> SleepReport:
    """Deduplicate, merge, maybe retrain, and report.

    Args:
        store: The long-term store, changed in place.
        dedup_threshold: Cosine at or above which two records of one group are near-duplicates.
        dedup_distance: If set, near-duplicates must also lie within this many cells of each other.
        same_task: Only merge records of the same task (keeps task filters exact).
        cell: Pose-cell side used to group records that have no map node.
        drift_factor: Retrain when the recent raw vectors' reconstruction error exceeds the error at
            training time by this factor.
        retrain: ``True`` always retrains (trainable quantisers), ``False`` never, ``None`` on drift.
        max_group: Larger groups are split into chunks of this many records (in time order), which
            bounds the quadratic similarity matrix.

    Returns:
        A report: records and bytes before/after, records merged away, clusters formed, drift,
        whether (and why) the quantiser was retrained, and the seconds taken (in all, for the
        dedup and for the retraining check).
    """
    t0 = time.perf_counter()
    before = store.stats()
    groups: list[np.ndarray] = []
    vectors: list[np.ndarray] = []
    if len(store) > 1:
        keys = _group_keys(store, cell, same_task)
        ids = store.meta.ids
        order = np.lexsort((ids, keys))
        bounds = np.flatnonzero(np.diff(keys[order])) + 1
        counts = store.meta.col("count")
        xy = np.stack([store.meta.col("x"), store.meta.col("y")], axis=1)
        for part in np.split(order, bounds):
            for s in range(0, len(part), max_group):
                rows = part[s : s + max_group]
                if len(rows) < 2:
                    continue
                v = store.vectors(ids[rows])
                close = None
                if dedup_distance is not None:
                    d2 = ((xy[rows, None, :] - xy[None, rows, :]) ** 2).sum(-1)
                    close = d2 <= dedup_distance**2
                # einsum, not BLAS: on a busy 2-core machine multi-threaded OpenBLAS spin-waits on
                # small products (8 ms instead of 30 us for 100 x 100 x 128, measured here)
                sims = np.einsum("ik,jk->ij", v, v)
                for members in _leader_clusters(sims, close, dedup_threshold):
                    w = counts[rows[members]].astype(np.float64)
                    mean = (w[:, None] * v[members]).sum(axis=0)
                    groups.append(ids[rows[members]].copy())
                    vectors.append(mean / max(np.linalg.norm(mean), 1e-12))
    t_dedup = time.perf_counter() - t0
    if groups:
        store.merge(groups, np.asarray(vectors, dtype=np.float32))
    t_retrain = time.perf_counter()
    drift, reason = keep_quantiser_current(store, drift_factor=drift_factor, retrain=retrain)
    t_retrain = time.perf_counter() - t_retrain
    after = store.stats()
    return {
        "records_before": before["records"],
        "records_after": after["records"],
        "merged_away": int(sum(len(g) - 1 for g in groups)),
        "clusters": len(groups),
        "code_bytes_before": before["code_bytes"],
        "code_bytes_after": after["code_bytes"],
        "metadata_bytes_before": before["metadata_bytes"],
        "metadata_bytes_after": after["metadata_bytes"],
        "drift": drift,
        "retrained": reason is not None,
        "retrain_reason": reason,
        "dedup_seconds": t_dedup,
        "retrain_seconds": t_retrain,
        "seconds": time.perf_counter() - t0,
    }


def keep_quantiser_current(
    store: LongTermStore, *, drift_factor: float = 3.0, retrain: bool | None = None
) -> tuple[float | None, str | None]:
    """Sleep's retraining step on its own: retrain the store's quantiser if asked or if it drifted.

    Args:
        store: The long-term store, changed in place.
        drift_factor: Retrain when the recent raw vectors reconstruct this many times worse than
            at training time.
        retrain: ``True`` always retrains (trainable quantisers), ``False`` never, ``None`` on drift.

    Returns:
        ``(drift before retraining, why it retrained or None)``.
    """
    drift = store.drift()
    reason = None
    if store.needs_training and store.trained and len(store):
        if retrain:
            reason = "asked"
        elif retrain is None and drift is not None and drift > drift_factor:
            reason = f"drift {drift:.2f} > {drift_factor}"
    if reason is not None and not store.retrain():
        reason = None  # too little data left to retrain honestly
    return drift, reason
