"""Benchmark of the long-term memory store at 10k, 100k and 1M frames.

For each size and FAISS index factory it measures: insert rate (batches of 16, one FIFO
consolidation, through ``LongTermStore.add`` with metadata; the one insert that trains the
quantiser and migrates the flat cold-start store is timed apart), single-query latency p50/p99
(``LongTermStore.search``, k=10, metadata materialised; also with a task filter), bytes per frame
(vector code as FAISS stores it; ids, id map and metadata separately; and the serialised index
size), 1-recall@10 (the query's exact nearest neighbour is among the ten returned) and 10-recall@10
(overlap of the ten returned with the exact ten), before and, where sleep would retrain (drift),
after retraining, and the time of a sleep pass (dedup within map nodes at cosine >= 0.95).

Vectors are synthetic clustered 128-d unit vectors by default (places with noisy views; said in the
output), or real embeddings from ``--vectors FILE.npy``; reaching a size larger than that file needs
``--tile``, which repeats the real vectors with Gaussian jitter and labels the rows as such.
``--order visit`` (default) inserts place after place, as an exploring agent does, so the cold-start
quantiser sees only the first places; ``--order shuffled`` is FAISS's usual i.i.d. setting.

Disk rows (``--disk-factories``, default the ``memory=disk`` config, ``configs/memory/disk.yaml``): the
store keeps every raw vector in a memory-mapped file on disk (``raw_vectors="disk"``), re-ranks
``--rerank`` candidates exactly from it, and is fed like an agent that sleeps ``--sleeps`` times
(evenly spread): each sleep runs sleep's retraining step, which retrains from a uniform sample of all
raw vectors and re-encodes every record when drift exceeds ``--disk-drift-factor``. Those pauses are
timed as the cost of keeping the quantiser current. They get their own table, printed under
today's rows: RAM code bytes, disk bytes, retrain seconds, recall before and after the last sleep,
warm and cold-page-cache latency.

Usage:
    python benchmarks/bench_memory.py --quick                      # 10k, about 2 minutes here
    python benchmarks/bench_memory.py --out /tmp/bench_memory      # 10k, 100k, 1M: about 25 minutes
    python benchmarks/bench_memory.py --sizes 1M --order shuffled --factories "IVF4096,PQ64" --nprobe 16
    python benchmarks/bench_memory.py --vectors frames.npy --tile --out /tmp/bench_memory
    python benchmarks/bench_memory.py --sizes 1M --order visit     # all rows at 1M: 17 minutes here
    python benchmarks/bench_memory.py --sizes 100k --factories "" --disk-factories "IVF1024,SQ4;IVF1024,PQ32"

At 1M on this 2-core machine (synthetic vectors, shuffled order) IVF4096,PQ64 at nprobe 16 met the
targets: 64 bytes of code per frame, 1-recall@10 0.98, p50 0.8 ms. IVF1024,PQ64 reached 0.92: with
10k places, 1024 lists leave residuals too large for PQ64. In visiting order the same quantisers fall
to 0.47-0.71; the disk row (``memory=disk``: IVF4096,PQ64 with raw float16 vectors on disk, 128
re-ranked, 10 sleeps) reached 1-recall@10 1.000 (0.984 just before the last sleep), p50 0.75 ms, 64 B
of code per frame in RAM and 256 B on disk, for 9 retrains taking 524 s in all (65 s at most)
(``benchmarks/results/memory_1m_visit_order_disk.md``); on a million real explorer frames
(``agent_embeddings.py --frames 1002000``) 1-recall@10 0.967, p50 0.80 ms, one retrain of 54 s
(``memory_real_1m_visit_order_disk.md``).

FAISS runs on one thread (``--threads``) by default: latencies are stabler, and on a shared 2-core
machine OpenMP spin-waiting made multi-threaded FAISS calls far slower.
"""

from __future__ import annotations

import os
import sys


def _early_threads(argv: list[str]) -> str:
    """``--threads`` value, read before numpy and FAISS load their BLAS (which reads it only then)."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


# FAISS's bundled OpenBLAS sizes its thread pool from these at load time only; faiss.omp_set_num_threads
# alone left small BLAS calls ~30x slower on a busy 2-core machine (spin-waiting threads).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, _early_threads(sys.argv[1:]))

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import faiss  # noqa: E402
import numpy as np  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

import embodmem.configs  # noqa: E402
from embodmem.memory.codec import build_index, codec_of  # noqa: E402
from embodmem.memory.config import MemoryConfig  # noqa: E402
from embodmem.memory.records import NO_NODE, QueryFilter  # noqa: E402
from embodmem.memory.sleep import keep_quantiser_current, sleep  # noqa: E402
from embodmem.memory.store import LongTermStore  # noqa: E402

DEFAULT_FACTORIES = ["Flat", "SQ8", "IVF1024,SQ8", "IVF1024,PQ64", "IVF4096,PQ64"]
DISK_CONFIG = OmegaConf.to_container(OmegaConf.load(Path(embodmem.configs.__file__).parent / "memory" / "disk.yaml"))
"""``memory=disk``: the disk rows' defaults (factory, nprobe, rerank, drift factor, training sample, dtype)."""
assert isinstance(DISK_CONFIG, dict)
DEFAULT_DISK_FACTORIES = [str(DISK_CONFIG["index_factory"])]
DRIFT_FACTOR = 3.0  # MemoryConfig.drift_factor's default: sleep retrains above it
BATCH = 16  # records per insert: what one FIFO consolidation hands to long-term memory
K = 10


def parse_size(s: str) -> int:
    """'10k' -> 10000, '1M' -> 1000000."""
    s = s.strip()
    mult = {"k": 1_000, "K": 1_000, "m": 1_000_000, "M": 1_000_000}.get(s[-1], 1)
    return int(float(s[:-1] if mult > 1 else s) * mult)


def unit(x: np.ndarray) -> np.ndarray:
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def synthetic(
    n: int, nq: int, dim: int, seed: int, per_place: int = 100, sigma: float = 0.5, dup_rate: float = 0.1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Clustered unit vectors: ``n / per_place`` places, each view = place centre + noise of norm
    ~``sigma`` (cosine ~0.8 between views of one place); a ``dup_rate`` fraction of views are near
    copies (cosine ~0.999) of the previous view, the kind of redundancy sleep removes. Queries are
    fresh views of random places.

    Returns:
        (base, queries, place id of each base vector)
    """
    rng = np.random.default_rng(seed)
    places = max(1, n // per_place)
    centres = unit(rng.standard_normal((places, dim), dtype=np.float32))
    place = np.repeat(np.arange(places), per_place)[:n]
    if len(place) < n:
        place = np.concatenate([place, rng.integers(0, places, n - len(place))])
    base = np.empty((n, dim), np.float32)
    for s in range(0, n, 200_000):
        p = place[s : s + 200_000]
        base[s : s + len(p)] = unit(
            centres[p] + sigma / np.sqrt(dim) * rng.standard_normal((len(p), dim), dtype=np.float32)
        )
    dup = np.flatnonzero(rng.random(n) < dup_rate)
    dup = dup[(dup > 0) & (place[dup] == place[dup - 1])]
    base[dup] = unit(base[dup - 1] + 0.05 / np.sqrt(dim) * rng.standard_normal((len(dup), dim), dtype=np.float32))
    qp = rng.integers(0, places, nq)
    queries = unit(centres[qp] + sigma / np.sqrt(dim) * rng.standard_normal((nq, dim), dtype=np.float32))
    return base, queries, place


def real(
    path: str, n: int, nq: int, seed: int, tile: bool, jitter: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """Real embeddings: queries are held out of the file; the rest is the base, tiled with jitter
    when ``n`` exceeds it (only with ``tile``)."""
    rng = np.random.default_rng(seed)
    x = unit(np.load(path).astype(np.float32))
    nq = min(nq, max(1, len(x) // 10))
    perm = rng.permutation(len(x))
    queries, pool = x[perm[:nq]], x[np.sort(perm[nq:])]
    if n <= len(pool):
        return np.ascontiguousarray(pool[:n]), queries, np.arange(n) // 100, f"real ({path})"
    if not tile:
        raise SystemExit(
            f"--vectors {path} has {len(pool)} base vectors (after {nq} held-out queries), "
            f"fewer than {n}: pass --tile to repeat them with jitter, or use smaller --sizes"
        )
    idx = np.arange(n) % len(pool)
    base = np.empty((n, x.shape[1]), np.float32)
    for s in range(0, n, 200_000):
        i = idx[s : s + 200_000]
        base[s : s + len(i)] = unit(
            pool[i] + jitter / np.sqrt(x.shape[1]) * rng.standard_normal((len(i), x.shape[1]), dtype=np.float32)
        )
    return (
        base,
        queries,
        np.arange(n) // 100,
        f"real ({path}), tiled x{n / len(pool):.1f} with jitter {jitter}",
    )


def train_min_for(factory: str, dim: int, n: int) -> int:
    """Vectors collected before training: 39 per centroid (FAISS's advice; 256 centroids for 8-bit
    PQ/SQ codebooks, nlist for IVF), but at most half the data so small sizes do train."""
    ivf = faiss.try_extract_index_ivf(build_index(dim, factory))
    want = 39 * max(256, ivf.nlist if ivf is not None else 0)
    return max(1_000, min(want, n // 2))


def columns(store: LongTermStore, place: np.ndarray, lo: int, hi: int) -> dict[str, np.ndarray]:
    """Synthetic metadata for records ``lo:hi``: node = place, four tasks, 500-step episodes."""
    i = np.arange(lo, hi)
    p = place[lo:hi]
    codes = np.asarray([store.meta.code(f"task{t}") for t in range(4)], np.int32)
    run = store.meta.code("bench")
    return {
        "ids": i.astype(np.int64),
        "run": np.full(len(i), run, np.int32),
        "task": codes[(i * 4) // len(place)],
        "episode": (i // 500).astype(np.int32),
        "step": (i % 500).astype(np.int64),
        "step_min": (i % 500).astype(np.int64),
        "step_max": (i % 500).astype(np.int64),
        "x": (p % 1000).astype(np.float64),
        "y": (p // 1000).astype(np.float64),
        "heading": (i % 4).astype(np.int32),
        "node": np.where(p >= 0, p, NO_NODE).astype(np.int64),
        "count": np.ones(len(i), np.int32),
        "hits": np.zeros(len(i), np.int32),
        "label": np.full(len(i), store.meta.code(""), np.int32),
        "salience": np.zeros(len(i), np.float32),
    }


def query_latencies(store: LongTermStore, queries: np.ndarray) -> tuple[list[float], list[float]]:
    """Seconds of one ``LongTermStore.search`` per query (k=K), unfiltered and with a task filter
    matching a quarter of the records."""
    lat, filtered = [], []
    for i in range(len(queries)):
        q = queries[i : i + 1]
        t = time.perf_counter()
        store.search(q, K)
        lat.append(time.perf_counter() - t)
        t = time.perf_counter()
        store.search(q, K, QueryFilter(task="task1"))
        filtered.append(time.perf_counter() - t)
    return lat, filtered


def insert_in_batches(
    store: LongTermStore,
    base: np.ndarray,
    place: np.ndarray,
    n: int,
    after_batch: Callable[[int], None] | None = None,
) -> float:
    """Insert ``base[:n]`` in batches of BATCH, as an agent would; returns the seconds of the one insert
    that trained the quantiser and migrated the flat store (reported apart from the insert rate).
    ``after_batch(end)`` runs after each batch (the disk rows' sleeps)."""
    train_s = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in range(0, n, BATCH):
            was, t, hi = store.trained, time.perf_counter(), min(n, s + BATCH)
            store.add(base[s:hi], columns(store, place, s, hi), np.arange(s, hi))
            if store.trained != was:
                train_s = time.perf_counter() - t
            if after_batch is not None:
                after_batch(hi)
    return train_s


def run_one(
    factory: str,
    nprobes: list[int],
    base: np.ndarray,
    queries: np.ndarray,
    place: np.ndarray,
    gt: np.ndarray,
    args: argparse.Namespace,
) -> list[dict[str, Any]]:
    n, dim = base.shape
    tm = train_min_for(factory, dim, n)
    store = LongTermStore(
        MemoryConfig(
            dim=dim,
            index_factory=factory,
            train_min=tm,
            train_sample=tm,
            nprobe=nprobes[0],
            pq_train_points=args.pq_train_points,
            seed=args.seed,
        )
    )
    t0 = time.perf_counter()
    train_s = insert_in_batches(store, base, place, n)
    insert_s = time.perf_counter() - t0 - train_s
    exhaustive = "IVF" not in factory
    big = exhaustive and n >= 1_000_000
    nq_recall = min(len(queries), args.queries_exhaustive_1m) if big else len(queries)
    nq_lat = min(args.latency_queries, 50) if big else args.latency_queries
    probes = nprobes if not exhaustive else nprobes[:1]
    g = gt[:nq_recall]

    def recall(store: LongTermStore, nprobe: int) -> tuple[float, float]:
        params = faiss.SearchParametersIVF(nprobe=nprobe) if not exhaustive else None
        if params is not None and isinstance(store.index, faiss.IndexPreTransform):
            params = faiss.SearchParametersPreTransform(index_params=params)
        _, ids = store.index.search(queries[:nq_recall], K, params=params)
        r1 = float(np.mean([g[i, 0] in ids[i] for i in range(len(g))]))
        r10 = float(np.mean([len(set(g[i]) & set(ids[i])) / K for i in range(len(g))]))
        return r1, r10

    # Cold-start quantiser (trained on the first train_min frames); retrained only where sleep would
    # retrain it (drift > DRIFT_FACTOR): half recent raw frames, half decoded frames from the store.
    drift = store.drift()
    cold = {p: recall(store, p) for p in probes} if store.needs_training else {}
    retrain_s = None
    if drift is not None and drift > DRIFT_FACTOR:
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            store.retrain()
        retrain_s = round(time.perf_counter() - t, 2)
    st = store.stats()
    index_file = len(faiss.serialize_index(store.index))
    rows = []
    for nprobe in probes:
        store.config = dataclasses.replace(store.config, nprobe=nprobe)  # what filtered searches probe
        r1, r10 = recall(store, nprobe)
        lat, flat = query_latencies(store, queries[:nq_lat])
        rows.append(
            {
                "frames": n,
                "index": st["index"],
                "nprobe": nprobe if not exhaustive else None,
                "train_min": tm if store.needs_training else None,
                "train_s": round(train_s, 2),
                "drift": None if drift is None else round(drift, 2),
                "retrain_s": retrain_s,
                "code_B": st["code_bytes_per_frame"],
                "sa_code_B": int(codec_of(store.index).sa_code_size()),
                "ids_map_B": round(st["index_id_bytes"] / n, 1),
                "meta_B": round(st["metadata_bytes"] / n, 1),
                "index_file_B": round(index_file / n, 1),
                "insert_per_s": round(n / insert_s),
                "p50_ms": round(1e3 * float(np.percentile(lat, 50)), 3),
                "p99_ms": round(1e3 * float(np.percentile(lat, 99)), 3),
                "p50_filtered_ms": round(1e3 * float(np.percentile(flat, 50)), 3),
                "recall1@10_cold": round(cold[nprobe][0], 4) if cold else None,
                "recall1@10": round(r1, 4),
                "recall10@10": round(r10, 4),
                "recall_queries": nq_recall,
                "latency_queries": nq_lat,
            }
        )
    if not args.no_sleep:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rep = sleep(store, dedup_threshold=0.95, retrain=False)
        for r in rows:
            r["sleep_s"] = round(rep["seconds"], 2)
            r["sleep_merged"] = rep["merged_away"]
    del store
    gc.collect()
    return rows


def recall_at_10(found: list[list[int]], gt: np.ndarray) -> tuple[float, float]:
    """1-recall@10 (the exact nearest neighbour is among the ten found) and 10-recall@10."""
    r1 = float(np.mean([gt[i, 0] in found[i] for i in range(len(gt))]))
    r10 = float(np.mean([len(set(gt[i]) & set(found[i])) / K for i in range(len(gt))]))
    return r1, r10


def run_disk(
    factory: str,
    base: np.ndarray,
    queries: np.ndarray,
    place: np.ndarray,
    gt: np.ndarray,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """One store with its raw vectors on disk, fed in order with ``args.sleeps`` sleeps spread evenly.

    Each sleep runs sleep's retraining step (:func:`keep_quantiser_current`: retrain from a uniform
    sample of all raw vectors when drift > ``args.disk_drift_factor``), timed: that is the cost of keeping the
    quantiser current. Recall is measured through ``LongTermStore.search`` (re-ranking included)
    just before the last sleep (the quantiser is then as stale as it gets: it has not seen the last
    ``n / sleeps`` frames) and after it; latency and sizes after it; then the dedup sleep pass as
    for the other rows.
    """
    n, dim = base.shape
    tm = train_min_for(factory, dim, n)
    store = LongTermStore(
        MemoryConfig(
            dim=dim,
            index_factory=factory,
            train_min=tm,
            train_sample=min(n, max(tm, args.disk_train_sample)),
            nprobe=args.disk_nprobe,
            pq_train_points=args.pq_train_points,
            seed=args.seed,
            raw_vectors="disk",
            raw_dtype=args.raw_dtype,
            raw_dir=args.raw_dir,
            rerank=args.rerank,
        )
    )
    assert store.raw_file is not None
    every = max(BATCH, n // max(1, args.sleeps))
    retrains: list[float] = []
    checks: list[float] = []
    drifts: list[float | None] = []

    def keep_current() -> None:
        t = time.perf_counter()
        drift, reason = keep_quantiser_current(store, drift_factor=args.disk_drift_factor)
        checks.append(time.perf_counter() - t)
        drifts.append(None if drift is None else round(drift, 2))
        if reason is not None:
            retrains.append(checks[-1])

    def search_recall() -> tuple[float, float]:
        hits = store.search(queries, K)
        return recall_at_10([[h.id for h in row] for row in hits], gt)

    def sleep_between_tasks(hi: int) -> None:
        if hi % every < BATCH and hi < n:  # the last sleep comes after the recall below
            keep_current()

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train_s = insert_in_batches(store, base, place, n, after_batch=sleep_between_tasks)
        insert_s = time.perf_counter() - t0 - train_s - sum(checks)
        stale = search_recall()
        keep_current()
    r1, r10 = search_recall()
    st = store.stats()
    cached = store.raw_file.cached_bytes()  # page cache the raw file holds while warm latency is measured
    lat, flat = query_latencies(store, queries[: args.latency_queries])
    cold: list[float] = []
    for i in range(args.cold_queries):
        store.raw_file.drop_page_cache()
        q = queries[i : i + 1]
        t = time.perf_counter()
        store.search(q, K)
        cold.append(time.perf_counter() - t)
    row = {
        "frames": n,
        "index": factory,
        "nprobe": args.disk_nprobe,
        "rerank": args.rerank,
        "raw_dtype": args.raw_dtype,
        "train_min": tm,
        "train_sample": store.config.train_sample,
        "train_s": round(train_s, 2),
        "sleeps": len(checks),
        "retrains": len(retrains),
        "retrain_s_total": round(sum(retrains), 1),
        "retrain_s_max": round(max(retrains), 1) if retrains else None,
        "drift_last": drifts[-1],
        "drifts": drifts,
        "drift_factor": args.disk_drift_factor,
        "code_B": st["code_bytes_per_frame"],
        "ids_map_B": round((st["index_id_bytes"] + st["raw_map_bytes"]) / n, 1),
        "meta_B": round(st["metadata_bytes"] / n, 1),
        "raw_disk_B": round(st["raw_disk_bytes"] / n, 1),
        "raw_file_B": round(store.raw_file.file_bytes() / n, 1),
        "raw_cached_B": round(cached / n, 1),
        "insert_per_s": round(n / insert_s),
        "p50_ms": round(1e3 * float(np.percentile(lat, 50)), 3),
        "p99_ms": round(1e3 * float(np.percentile(lat, 99)), 3),
        "p50_filtered_ms": round(1e3 * float(np.percentile(flat, 50)), 3),
        "p50_cold_ms": round(1e3 * float(np.percentile(cold, 50)), 3) if cold else None,
        "recall1@10_stale": round(stale[0], 4),
        "recall1@10": round(r1, 4),
        "recall10@10": round(r10, 4),
        "recall_queries": len(queries),
        "latency_queries": args.latency_queries,
        "cold_queries": args.cold_queries,
    }
    if not args.no_sleep:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rep = sleep(store, dedup_threshold=0.95, retrain=False)
        row["sleep_s"] = round(rep["seconds"], 2)
        row["sleep_merged"] = rep["merged_away"]
    store.raw_file.close()
    return row


def observe_cost(dim: int, seed: int, n: int = 20_000) -> str:
    """Amortised ``AgentMemory.observe`` cost (FIFO, consolidation, store insert and map), and
    ``TopologicalMap.observe`` at 1,000 nodes."""
    from embodmem.memory import AgentMemory, FrameMeta, MemoryConfig, TopologicalMap

    rng = np.random.default_rng(seed)
    e = unit(rng.standard_normal((n, dim), dtype=np.float32))
    metas = [FrameMeta("r", "t", i // 500, i % 500, float(i % 97), float(i // 97 % 89)) for i in range(n)]
    mem = AgentMemory(MemoryConfig(dim=dim, faiss_threads=None))
    t = time.perf_counter()
    for v, m in zip(e, metas):
        mem.observe(v, m)
    per = (time.perf_counter() - t) / n
    tm = TopologicalMap(dim=dim, node_distance=1.0)
    grid = np.stack(np.meshgrid(np.arange(0, 64, 2.0), np.arange(0, 64, 2.0)), -1).reshape(-1, 2)[:1000]
    for (x, y), v in zip(grid, e):
        tm.observe(x, y, v)
    walk = grid[rng.integers(0, 1000, 5000)] + rng.uniform(-0.4, 0.4, (5000, 2))
    times = []
    for (x, y), v in zip(walk, e[:5000]):
        t = time.perf_counter()
        tm.observe(x, y, v)
        times.append(time.perf_counter() - t)
    return (
        f"AgentMemory.observe: {per * 1e6:.0f} us amortised over {n:,} frames (dim {dim}, Flat, FIFO "
        f"32->16, {mem.stats()['nodes']} map nodes); TopologicalMap.observe at 1,000 nodes: "
        f"p50 {np.median(times) * 1e6:.0f} us, p99 {np.percentile(times, 99) * 1e6:.0f} us"
    )


COLS = [
    ("frames", "frames"),
    ("index", "index"),
    ("nprobe", "nprobe"),
    ("train_min", "trained on"),
    ("train_s", "train+migrate s"),
    ("drift", "drift"),
    ("retrain_s", "retrain s"),
    ("code_B", "code B/frame"),
    ("ids_map_B", "ids+map B"),
    ("meta_B", "meta B"),
    ("index_file_B", "index file B/frame"),
    ("insert_per_s", "insert/s"),
    ("p50_ms", "p50 ms"),
    ("p99_ms", "p99 ms"),
    ("p50_filtered_ms", "p50 filtered ms"),
    ("recall1@10_cold", "1-R@10 cold start"),
    ("recall1@10", "1-R@10"),
    ("recall10@10", "10-R@10"),
    ("sleep_s", "sleep s"),
    ("sleep_merged", "merged"),
]


DISK_COLS = [
    ("frames", "frames"),
    ("index", "index"),
    ("nprobe", "nprobe"),
    ("rerank", "rerank"),
    ("raw_dtype", "raw"),
    ("train_min", "trained on"),
    ("train_s", "train+migrate s"),
    ("sleeps", "sleeps"),
    ("retrains", "retrains"),
    ("retrain_s_total", "retrain s total"),
    ("retrain_s_max", "retrain s max"),
    ("drift_last", "drift at last sleep"),
    ("code_B", "code B/frame (RAM)"),
    ("ids_map_B", "ids+maps B"),
    ("meta_B", "meta B"),
    ("raw_disk_B", "raw on disk B/frame"),
    ("raw_file_B", "raw file B/frame"),
    ("raw_cached_B", "raw in page cache B/frame"),
    ("insert_per_s", "insert/s"),
    ("p50_ms", "p50 ms"),
    ("p99_ms", "p99 ms"),
    ("p50_filtered_ms", "p50 filtered ms"),
    ("p50_cold_ms", "p50 cold cache ms"),
    ("recall1@10_stale", "1-R@10 before last sleep"),
    ("recall1@10", "1-R@10"),
    ("recall10@10", "10-R@10"),
    ("sleep_s", "sleep s"),
    ("sleep_merged", "merged"),
]


def markdown(rows: list[dict[str, Any]], header: str, cols: list[tuple[str, str]] = COLS) -> str:
    lines = [header, "", "| " + " | ".join(h for _, h in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = []
        for k, _ in cols:
            v = r.get(k)
            cells.append(
                "" if v is None else (f"{v:,}" if isinstance(v, int) and k in ("frames", "insert_per_s") else str(v))
            )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10k,100k,1M", help="comma-separated sizes (default 10k,100k,1M)")
    ap.add_argument("--quick", action="store_true", help="10k only")
    ap.add_argument(
        "--factories",
        default=";".join(DEFAULT_FACTORIES),
        help="semicolon-separated FAISS factory strings (default: %(default)s)",
    )
    ap.add_argument("--nprobe", default="16", help="comma-separated nprobe values for IVF factories")
    ap.add_argument("--queries", type=int, default=1000, help="recall queries")
    ap.add_argument(
        "--queries-exhaustive-1m",
        type=int,
        default=200,
        help="recall queries for exhaustive (non-IVF) indexes at >= 1M frames",
    )
    ap.add_argument("--latency-queries", type=int, default=300, help="single queries timed (50 for exhaustive at 1M)")
    ap.add_argument("--vectors", help="real embeddings (.npy, n x d) instead of synthetic vectors")
    ap.add_argument("--tile", action="store_true", help="with --vectors: repeat them with jitter to reach a size")
    ap.add_argument("--jitter", type=float, default=0.05, help="noise norm added to tiled real vectors")
    ap.add_argument("--dim", type=int, default=128, help="dimension of synthetic vectors")
    ap.add_argument("--threads", type=int, default=1, help="FAISS OpenMP threads")
    ap.add_argument(
        "--pq-train-points",
        type=int,
        default=39,
        help="training points per PQ centroid (MemoryConfig.pq_train_points; FAISS's default is 256)",
    )
    ap.add_argument("--no-sleep", action="store_true", help="skip the sleep-pass timing")
    ap.add_argument("--observe-frames", type=int, default=20_000, help="frames for the observe-cost line")
    ap.add_argument(
        "--order",
        choices=["visit", "shuffled"],
        default="visit",
        help="insertion order: 'visit' = place after place, as an agent explores (the cold-start "
        "quantiser sees only the first places); 'shuffled' = i.i.d. stream (FAISS's usual setting)",
    )
    ap.add_argument(
        "--disk-factories",
        default=";".join(DEFAULT_DISK_FACTORIES),
        help="semicolon-separated factories run with raw vectors on disk, re-ranking and sleeps "
        "('' for none; default: %(default)s)",
    )
    ap.add_argument("--disk-nprobe", type=int, default=DISK_CONFIG["nprobe"], help="nprobe of the disk rows")
    ap.add_argument(
        "--rerank", type=int, default=DISK_CONFIG["rerank"], help="candidates re-ranked from disk (disk rows)"
    )
    ap.add_argument(
        "--raw-dtype", choices=["float16", "float32"], default=DISK_CONFIG["raw_dtype"], help="raw file element type"
    )
    ap.add_argument("--raw-dir", help="directory of the raw-vector file (default: the system temp directory)")
    ap.add_argument("--sleeps", type=int, default=10, help="sleeps spread evenly over the insertion (disk rows)")
    ap.add_argument(
        "--disk-drift-factor",
        type=float,
        default=DISK_CONFIG["drift_factor"],
        help="drift above which a sleep retrains (disk rows)",
    )
    ap.add_argument(
        "--disk-train-sample",
        type=int,
        default=DISK_CONFIG["train_sample"],
        help="training sample of the disk rows (train_sample)",
    )
    ap.add_argument(
        "--cold-queries", type=int, default=50, help="queries timed after dropping the raw file's page cache"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="write OUT.md and OUT.json")
    args = ap.parse_args(argv)
    faiss.omp_set_num_threads(args.threads)
    sizes = [10_000] if args.quick else [parse_size(s) for s in args.sizes.split(",")]
    factories = [f.strip() for f in args.factories.split(";") if f.strip()]
    disk_factories = [f.strip() for f in args.disk_factories.split(";") if f.strip()]
    nprobes = [int(x) for x in args.nprobe.split(",")]
    rows: list[dict[str, Any]] = []
    disk_rows: list[dict[str, Any]] = []
    source = ""
    cost = observe_cost(args.dim, args.seed, args.observe_frames)
    print(cost, flush=True)
    for n in sizes:
        if args.vectors:
            base, queries, place, source = real(args.vectors, n, args.queries, args.seed, args.tile, args.jitter)
        else:
            base, queries, place = synthetic(n, args.queries, args.dim, args.seed)
            source = (
                "synthetic clustered unit vectors (100 noisy views per place, view-view cosine ~0.8, "
                "10% near-duplicate views)"
            )
        if args.order == "shuffled":
            perm = np.random.default_rng(args.seed + 1).permutation(len(base))
            base, place = base[perm], place[perm]
            source += ", shuffled order"
        else:
            source += ", visiting order"
        t = time.perf_counter()
        _, gt = faiss.knn(queries, base, K, metric=faiss.METRIC_INNER_PRODUCT)
        print(
            f"# {n:,} frames, {base.shape[1]}-d, {source}; exact top-{K} in {time.perf_counter() - t:.1f} s",
            flush=True,
        )
        for f in factories:
            t = time.perf_counter()
            new = run_one(f, nprobes, base, queries, place, gt, args)
            rows.extend(new)
            for r in new:
                print(json.dumps(r), f"({time.perf_counter() - t:.0f} s)", flush=True)
        for f in disk_factories:
            t = time.perf_counter()
            disk_rows.append(run_disk(f, base, queries, place, gt, args))
            print(json.dumps(disk_rows[-1]), f"({time.perf_counter() - t:.0f} s)", flush=True)
        del base, queries, place, gt
        gc.collect()
    header = (
        f"Memory store benchmark: {source}; {platform.processor() or platform.machine()}, "
        f"FAISS {faiss.__version__}, {args.threads} FAISS/BLAS thread(s); k={K}; "
        f"PQ trained on <= {args.pq_train_points} points per centroid; "
        f"inserts in batches of {BATCH} "
        f"(insert/s excludes the one-off train+migrate); "
        f"latency = LongTermStore.search of one query incl. metadata; filtered = task filter matching 1/4. "
        f"'1-R@10 cold start' uses the quantiser "
        f"trained on the first 'trained on' frames; 'drift' is the recent frames' reconstruction error "
        f"over that at training; where drift > {DRIFT_FACTOR} sleep retrains (half recent raw frames, half "
        f"decoded frames from the whole store, all records re-encoded): 'retrain s' is set and the other "
        f"recall and latency columns are after it, otherwise they are the cold-start quantiser's."
    )
    md = markdown(rows, header) + "\n" + cost + "\n"
    if disk_rows:
        disk_header = (
            f"Raw vectors on disk (memory.raw_vectors=disk): RAM holds the codes ('code B/frame (RAM)'), ids, "
            f"the id maps (FAISS's 24 B plus the raw file's row map, 8 B) and metadata; every record's raw "
            f"vector ({args.raw_dtype}) lives in a memory-mapped file ('raw on disk' = live rows, what a "
            f"snapshot writes; 'raw file' = the working file's blocks on disk, with reserved space and dead "
            f"rows). A search asks the index for 'rerank' candidates and re-scores them exactly from the file. "
            f"{args.sleeps} sleeps spread evenly over the insertion each run sleep's retraining step: retrain "
            f"from a uniform sample of all raw vectors (train_sample = {args.disk_train_sample} or the "
            f"cold-start size) and re-encode every record, when drift > {args.disk_drift_factor}; 'retrain s' are those "
            f"pauses (the cost of keeping the quantiser current; insert/s excludes them). '1-R@10 before last "
            f"sleep' is measured just before the last sleep, with a quantiser that has not seen the last "
            f"1/{args.sleeps} of the frames; the other columns after it. Recall through LongTermStore.search "
            f"({disk_rows[-1]['recall_queries']} queries). Latency: 'p50 ms' with the raw file in the OS page cache "
            f"('raw in page cache': RAM the kernel lends it and may reclaim; measured with mincore); 'cold cache' "
            f"unmaps the file and drops its pages (fsync + posix_fadvise DONTNEED) before each of "
            f"{args.cold_queries} queries, so every re-ranked candidate is read from disk (random 4 KB reads, "
            f"read-ahead off)."
        )
        md += "\n" + markdown(disk_rows, disk_header, DISK_COLS)
    print()
    print(md)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        from embodmem.atomic import atomic_write_json
        from embodmem.provenance import Provenance, write_results_markdown

        facts = Provenance.collect(None if argv is None else ["python", "benchmarks/bench_memory.py", *argv])
        write_results_markdown(out.with_suffix(".md"), "Long-term memory store: speed, size and recall", md, facts)
        atomic_write_json(
            out.with_suffix(".json"),
            {
                "provenance": facts.as_dict(),
                "source": source,
                "threads": args.threads,
                "observe": cost,
                "rows": rows,
                "disk_rows": disk_rows,
            },
        )


if __name__ == "__main__":
    main()
