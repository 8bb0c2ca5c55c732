"""Offline "sleep-time" consolidation of long-term memory, as in LightMem (Fang et al., 2025).

Online writes are cheap and local (the short-term FIFO only merges neighbours in time). Between
tasks, when the whole history is visible, this pass finds near-duplicate records anywhere in time
(same map node, optionally within a distance), merges them, retrains the quantiser if the data has
drifted away from what it was trained on, and re-indexes.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from embodmem.memory.records import NO_NODE
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


def _leader_clusters(sims: np.ndarray, close: np.ndarray | None, threshold: float) -> np.ndarray:
    """Greedy leader clustering in time order: a record joins the earliest earlier leader it is
    similar to, so every member is within ``threshold`` of its leader (no chaining drift)."""
    g = len(sims)
    label = np.full(g, -1, dtype=np.int64)
    ok = sims >= threshold
    if close is not None:
        ok &= close
    for i in range(g):
        if label[i] >= 0:
            continue
        label[i] = i
        join = ok[i].copy()
        join[: i + 1] = False
        join &= label < 0
        label[join] = i
    return label


def sleep(
    store: LongTermStore,
    *,
    dedup_threshold: float = 0.95,
    dedup_distance: float | None = None,
    same_task: bool = False,
    cell: float = 3.0,
    drift_factor: float = 1.5,
    retrain: bool | None = None,
    max_group: int = 2048,
) -> dict[str, Any]:
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
        whether (and why) the quantiser was retrained, and the seconds taken.
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
                v = store.reconstruct(ids[rows])
                close = None
                if dedup_distance is not None:
                    d2 = ((xy[rows, None, :] - xy[None, rows, :]) ** 2).sum(-1)
                    close = d2 <= dedup_distance**2
                label = _leader_clusters(v @ v.T, close, dedup_threshold)
                for lead in np.unique(label):
                    members = np.flatnonzero(label == lead)
                    if len(members) < 2:
                        continue
                    w = counts[rows[members]].astype(np.float64)
                    mean = (w[:, None] * v[members]).sum(axis=0)
                    groups.append(ids[rows[members]].copy())
                    vectors.append(mean / max(np.linalg.norm(mean), 1e-12))
    t_dedup = time.perf_counter() - t0
    if groups:
        store.merge(groups, np.asarray(vectors, dtype=np.float32))
    drift = store.drift()
    reason = None
    if store.needs_training and len(store):
        if retrain:
            reason = "asked"
        elif retrain is None and drift is not None and drift > drift_factor:
            reason = f"drift {drift:.2f} > {drift_factor}"
    if reason is not None:
        store.retrain()
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
        "seconds": time.perf_counter() - t0,
    }
