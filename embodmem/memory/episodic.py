"""The agent-facing memory: short-term FIFO + long-term FAISS store + topological map.

:class:`AgentMemory` is what an agent holds. ``observe`` is the cheap online write (FIFO and map);
``query`` reads both the long-term store and the frames not consolidated yet; ``sleep`` is the
offline pass the runner calls between tasks; ``save``/``load`` move the memory between runs.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from pydantic import Field

from embodmem.memory.fifo import ShortTermFIFO
from embodmem.memory.persistence import (
    MemoryLoadError,
    Strict,
    Writer,
    read_files,
    read_manifest,
    validated,
    write_snapshot,
)
from embodmem.memory.rawfile import RAW_DTYPES, read_npy_rows
from embodmem.memory.records import NO_NODE, FrameMeta, Hit, MetaTable, fit_thumbnail
from embodmem.memory.sleep import sleep as sleep_pass
from embodmem.memory.store import (
    EVICTIONS,
    RAW_MODES,
    LongTermStore,
    RawFileMismatch,
    StoreState,
    build_index,
    code_bytes_per_vector,
)
from embodmem.memory.topomap import NODE_RULES, TopologicalMap

_FILES = ("index.faiss", "arrays.npz", "map.json")
_RAW_FILE = "raw.npy"
"""The snapshot's raw vectors (``raw_vectors="disk"`` only): one row per long-term record, id order."""


class MemoryState(Strict):
    """The JSON state of a saved :class:`AgentMemory` (``manifest.json`` field ``state``)."""

    store: StoreState
    frames_written: int = Field(ge=0)
    next_id: int = Field(ge=0)
    consolidations: int = Field(ge=0)
    sleeps: int = Field(ge=0)
    queries: int = Field(ge=0)
    segment: tuple[str, str, int] | None


@dataclass
class MemoryConfig:
    """Settings of :class:`AgentMemory`; validated at construction.

    Example:
        >>> MemoryConfig(index_factory="SQ8").bytes_hint
        128
    """

    dim: int = 128
    """Embedding dimension (the embedder's output size)."""
    short_term_capacity: int = 32
    """Raw frames held in the short-term FIFO before it is consolidated."""
    consolidate_to: int = 16
    """Records a full FIFO is merged down to (MovieChat: most similar adjacent pair first)."""
    index_factory: str = "Flat"
    """FAISS index-factory string of the long-term quantiser, e.g. "Flat", "SQfp16", "SQ8",
    "PQ32", "IVF1024,PQ64" (inner product; no IDMap prefix)."""
    nprobe: int = 16
    """Inverted lists searched per query (IVF factories only): higher is slower and more exact."""
    byte_budget: int | None = None
    """Maximum bytes of long-term vector code (None: unlimited); ids and metadata not counted."""
    eviction: str = "fifo"
    """Which records go when the budget is hit: "fifo" (oldest), "least_used" (fewest query
    hits, then fewest merged frames, then oldest) or "places" (least used, but each map node's
    most used record last: a view of every place is kept while the budget allows)."""
    train_min: int = 10_000
    """Vectors kept in a flat index before a trainable quantiser (PQ, IVF, SQ8) is trained.
    Rule of thumb: at least 39 x the number of centroids (IVF nlist, or 256 for 8-bit PQ)."""
    pq_train_points: int = 39
    """Training points per centroid for each PQ sub-quantizer (FAISS's max_points_per_centroid).
    39 (FAISS's recommended minimum) trains IVF1024,PQ64 about 4x faster than FAISS's default 256
    (33 s vs 120 s here) for 0.973 vs 0.986 1-recall@10 at 200k frames (no difference at 1M).
    Training runs inside the observe call that reaches train_min, so it stalls that step."""
    train_sample: int = 16_384
    """Most vectors used to train; also the size of the recent raw-vector buffer used for drift
    checks and retraining (reported separately from the budget)."""
    drift_factor: float = 3.0
    """Sleep retrains when recent vectors reconstruct this many times worse than at training.
    Retraining re-encodes every record whose raw vector is gone from its decoded code, which
    costs accuracy, so it only pays when the old quantiser is badly off (measured here: PQ64 at
    drift ~2 lost recall by retraining; IVF at drift 25-10,000 gained up to 0.3)."""
    keep_thumbnails: bool = False
    """Keep a small RGB thumbnail per record (for video panels and VLM prompts)."""
    thumbnail_size: int = 32
    """Side in pixels of kept thumbnails."""
    node_rule: str = "pose"
    """When the map creates a node: "pose", "embedding", "pose_or_embedding" or
    "pose_and_embedding" (see TopologicalMap)."""
    node_distance: float = 3.0
    """Grid cells from every node beyond which a pose is a new place."""
    node_similarity: float = 0.8
    """Cosine to a node's aggregate embedding below which a view is a new place."""
    dedup_threshold: float = 0.95
    """Cosine at or above which sleep merges two records of the same place."""
    dedup_distance: float | None = None
    """If set, sleep also requires merged records to lie within this many cells."""
    dedup_same_task: bool = False
    """Sleep merges only records of the same task (keeps task filters exact)."""
    seed: int = 0
    """Seed for training-set sampling."""
    faiss_threads: int | None = 1
    """FAISS OpenMP threads, set process-wide when the memory is built. 1 by default: the agent's
    small searches gain nothing from threads, and on a busy 2-core machine OpenMP spin-waiting made
    FAISS calls up to 1000x slower. None leaves FAISS's setting alone."""
    raw_vectors: str = "recent"
    """Where raw vectors are kept: "recent" (the latest train_sample in RAM, for drift checks;
    retraining mixes them with decoded codes) or "disk" (every long-term record's, in a
    memory-mapped file outside the byte budget: training and sleep-time retraining sample all of
    them and re-encode every record exactly; snapshots carry them as raw.npy)."""
    raw_dtype: str = "float16"
    """Element type of the raw vectors on disk: "float16" (2 bytes a dimension) or "float32"."""
    raw_dir: str | None = None
    """Directory of the working raw-vector file (an unlinked temporary file); None: the system
    temp directory. Put it on a real disk: on a tmpfs the "disk" is RAM."""
    rerank: int = 0
    """Candidates fetched from the index per query and re-scored exactly from the raw vectors on
    disk (0: off; needs raw_vectors="disk"). Lifts a lossy code's recall to its coarse recall."""

    def __post_init__(self) -> None:
        def need(ok: bool, name: str, what: str) -> None:
            if not ok:
                raise ValueError(f"MemoryConfig.{name} must be {what}, got {getattr(self, name)!r}")

        def is_int(v: Any) -> bool:
            return isinstance(v, (int, np.integer)) and not isinstance(v, bool)

        def is_num(v: Any) -> bool:
            return isinstance(v, (int, float, np.number)) and not isinstance(v, bool)

        need(is_int(self.dim) and self.dim > 0, "dim", "a positive int")
        need(
            is_int(self.short_term_capacity) and 1 <= self.short_term_capacity <= 1 << 16,
            "short_term_capacity",
            "an int in [1, 65536]",
        )
        need(
            is_int(self.consolidate_to) and 1 <= self.consolidate_to <= self.short_term_capacity,
            "consolidate_to",
            f"an int in [1, short_term_capacity={self.short_term_capacity}]",
        )
        need(is_int(self.nprobe) and self.nprobe >= 1, "nprobe", "an int >= 1")
        need(
            self.byte_budget is None or (is_int(self.byte_budget) and self.byte_budget > 0),
            "byte_budget",
            "None or a positive int",
        )
        need(self.eviction in EVICTIONS, "eviction", " or ".join(repr(e) for e in EVICTIONS))
        need(is_int(self.train_min) and self.train_min >= 1, "train_min", "an int >= 1")
        need(is_int(self.pq_train_points) and self.pq_train_points >= 1, "pq_train_points", "an int >= 1")
        need(
            is_int(self.train_sample) and self.train_min <= self.train_sample <= 1 << 22,
            "train_sample",
            f"an int in [train_min={self.train_min}, 4194304]",
        )
        need(is_num(self.drift_factor) and self.drift_factor >= 1.0, "drift_factor", "a number >= 1")
        need(isinstance(self.keep_thumbnails, bool), "keep_thumbnails", "a bool")
        need(
            is_int(self.thumbnail_size) and 4 <= self.thumbnail_size <= 256,
            "thumbnail_size",
            "an int in [4, 256]",
        )
        need(self.node_rule in NODE_RULES, "node_rule", f"one of {NODE_RULES}")
        need(is_num(self.node_distance) and self.node_distance > 0, "node_distance", "a number > 0")
        need(is_num(self.node_similarity) and -1 <= self.node_similarity <= 1, "node_similarity", "in [-1, 1]")
        need(is_num(self.dedup_threshold) and -1 <= self.dedup_threshold <= 1, "dedup_threshold", "in [-1, 1]")
        need(
            self.dedup_distance is None or (is_num(self.dedup_distance) and self.dedup_distance > 0),
            "dedup_distance",
            "None or a number > 0",
        )
        need(isinstance(self.dedup_same_task, bool), "dedup_same_task", "a bool")
        need(is_int(self.seed), "seed", "an int")
        need(
            self.faiss_threads is None or (is_int(self.faiss_threads) and 1 <= self.faiss_threads <= 1024),
            "faiss_threads",
            "None or an int in [1, 1024]",
        )
        need(self.raw_vectors in RAW_MODES, "raw_vectors", " or ".join(repr(m) for m in RAW_MODES))
        need(self.raw_dtype in RAW_DTYPES, "raw_dtype", " or ".join(repr(d) for d in RAW_DTYPES))
        need(
            self.raw_dir is None or (isinstance(self.raw_dir, str) and os.path.isdir(self.raw_dir)),
            "raw_dir",
            "None or an existing directory",
        )
        need(is_int(self.rerank) and 0 <= self.rerank <= 1 << 16, "rerank", "an int in [0, 65536]")
        need(
            self.rerank == 0 or self.raw_vectors == "disk",
            "rerank",
            "0 unless raw_vectors='disk' (exact scores come from the raw vectors on disk)",
        )
        try:
            probe = build_index(self.dim, self.index_factory)
        except ValueError as e:
            raise ValueError(f"MemoryConfig.{e}") from None
        if self.byte_budget is not None:
            trainable = not probe.is_trained
            need_bytes = self.train_min * 4 * self.dim if trainable else code_bytes_per_vector(probe)
            if self.byte_budget < need_bytes:
                why = (
                    f"train_min={self.train_min} raw vectors during the flat cold start of {self.index_factory!r}"
                    if trainable
                    else "one vector code"
                )
                raise ValueError(
                    f"MemoryConfig.byte_budget={self.byte_budget} cannot hold {why} "
                    f"(needs >= {need_bytes}); raise it or lower train_min"
                )

    @property
    def bytes_hint(self) -> int:
        """Bytes of vector code per record once trained (what the byte budget counts)."""
        return code_bytes_per_vector(build_index(self.dim, self.index_factory))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-serialisable)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MemoryConfig:
        """Build from a mapping (e.g. a Hydra ``DictConfig``), refusing unknown keys by name."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"MemoryConfig has no field(s) {unknown}; known: {sorted(names)}")
        return cls(**{k: d[k] for k in d})


class AgentMemory:
    """Episodic memory of an embodied agent.

    Args:
        config: Settings (defaults when ``None``).

    Example:
        >>> mem = AgentMemory(MemoryConfig(dim=4, short_term_capacity=4, consolidate_to=2))
        >>> for t in range(6):
        ...     e = np.eye(4, dtype=np.float32)[t % 4]
        ...     node = mem.observe(e, FrameMeta("run0", "task1", 0, t, float(t), 0.0))
        >>> hits = mem.query(np.eye(4, dtype=np.float32)[1], k=1)
        >>> hits[0].meta.step, hits[0].source
        (5, 'short_term')
    """

    def __init__(self, config: MemoryConfig | None = None) -> None:
        self.config = config if config is not None else MemoryConfig()
        self.reset()

    # ----------------------------------------------------------------------------- lifecycle
    def reset(self) -> None:
        """Forget everything (store, FIFO, map, counters); keep the config."""
        c = self.config
        if c.faiss_threads is not None:
            faiss.omp_set_num_threads(c.faiss_threads)
        self.store = LongTermStore(
            c.dim,
            c.index_factory,
            byte_budget=c.byte_budget,
            eviction=c.eviction,
            train_min=c.train_min,
            train_sample=c.train_sample,
            nprobe=c.nprobe,
            pq_train_points=c.pq_train_points,
            thumbnail_size=c.thumbnail_size if c.keep_thumbnails else None,
            seed=c.seed,
            raw_vectors=c.raw_vectors,
            raw_dtype=c.raw_dtype,
            raw_dir=c.raw_dir,
            rerank=int(c.rerank),
        )
        self.fifo = ShortTermFIFO(c.dim, c.short_term_capacity, c.consolidate_to)
        self.map = TopologicalMap(c.dim, c.node_distance, c.node_similarity, c.node_rule)
        self.frames_written = 0
        self.next_id = 0
        self.consolidations = 0
        self.sleeps = 0
        self.queries = 0
        self._segment: tuple[str, str, int] | None = None

    # ----------------------------------------------------------------------------- writes
    def _unit(self, embedding: np.ndarray) -> np.ndarray:
        e = embedding
        if not (isinstance(e, np.ndarray) and e.dtype == np.float32 and e.ndim == 1):
            e = np.asarray(embedding, dtype=np.float32).reshape(-1)
        if e.shape[0] != self.config.dim:
            raise ValueError(f"embedding has {e.shape[0]} values, memory dim is {self.config.dim}")
        n2 = float(e @ e)
        if not math.isfinite(n2) or n2 == 0.0:
            raise ValueError(f"embedding must be finite and non-zero (squared norm {n2})")
        return e if abs(n2 - 1.0) < 1e-4 else e / math.sqrt(n2)

    def observe(self, embedding: np.ndarray, meta: FrameMeta) -> int:
        """Write one frame: short-term FIFO (consolidating into long-term when full) and map.

        The stored record is a copy of ``meta`` with ``node`` set to the map node (and the thumbnail
        resized, or dropped unless ``keep_thumbnails``); the caller's object is not modified.

        Returns:
            The map node the frame was localised to.

        Raises:
            ValueError: naming the bad field of ``meta`` or the bad embedding; the memory is then
                exactly as before the call.
        """
        if not isinstance(meta, FrameMeta):
            raise ValueError(f"observe needs a FrameMeta, got {type(meta).__name__}")
        e = self._unit(embedding)  # every check comes before the first write
        meta.validate()
        thumb = meta.thumbnail
        if thumb is not None:
            thumb = fit_thumbnail(thumb, self.config.thumbnail_size) if self.config.keep_thumbnails else None
        seg = (meta.run_id, meta.task, meta.episode)
        if seg != self._segment:
            self.map.break_trajectory()
            self._segment = seg
        node = self.map.observe(meta.x, meta.y, e)
        rec = copy.copy(meta)  # dataclasses.replace costs ~15 us; this runs on every step
        rec.node, rec.thumbnail, rec.hits = node, thumb, 0
        out = self.fifo.push(e, rec, self.next_id)
        self.next_id += 1
        self.frames_written += 1
        if out is not None:
            self._store(out)
        return node

    def _store(self, out: Any) -> None:
        if len(out.ids):
            self.store.add(out.vectors, out.metas, out.ids)
            self.consolidations += 1

    def flush(self) -> int:
        """Consolidate the short-term frames (at the full-buffer ratio) into long-term memory.

        Returns:
            The number of records moved.
        """
        out = self.fifo.consolidate()
        self._store(out)
        return len(out.ids)

    def sleep(self, retrain: bool | None = None) -> dict[str, Any]:
        """Flush, then run the offline consolidation (:func:`embodmem.memory.sleep.sleep`)."""
        flushed = self.flush()
        c = self.config
        report = sleep_pass(
            self.store,
            dedup_threshold=c.dedup_threshold,
            dedup_distance=c.dedup_distance,
            same_task=c.dedup_same_task,
            cell=c.node_distance,
            drift_factor=c.drift_factor,
            retrain=retrain,
        )
        self.sleeps += 1
        return {"flushed": flushed, **report}

    # ----------------------------------------------------------------------------- reads
    def query(
        self,
        vec_or_vecs: np.ndarray,
        k: int = 5,
        *,
        task: str | Sequence[str] | None = None,
        step_range: tuple[int, int] | None = None,
        run_id: str | Sequence[str] | None = None,
        episode: int | Sequence[int] | None = None,
        include_short_term: bool = True,
        count_hits: bool = True,
    ) -> list[Hit] | list[list[Hit]]:
        """Top-``k`` records by cosine over long-term memory and the unconsolidated frames.

        Args:
            vec_or_vecs: One query embedding ``(dim,)`` (text or image), or ``(n, dim)``.
            k: Results per query.
            task, step_range, run_id, episode: Metadata filters (``step_range`` inclusive,
                matching a record whose merged step span overlaps it).
            include_short_term: Also search the frames still in the FIFO.
            count_hits: Count returned records as used (for ``least_used`` eviction).

        Returns:
            For one query a list of :class:`Hit`, best first; for several, one list per query.
        """
        q = np.asarray(vec_or_vecs, dtype=np.float32)
        single = q.ndim == 1
        q = np.atleast_2d(q)
        norms = np.linalg.norm(q, axis=1, keepdims=True)
        if q.shape[1] != self.config.dim or not np.all(norms > 0):
            raise ValueError(f"queries must be non-zero vectors of dim {self.config.dim}, got shape {q.shape}")
        q = np.ascontiguousarray(q / norms)
        filters = {"task": task, "step_range": step_range, "run_id": run_id, "episode": episode}
        lt = self.store.search(q, k, **filters)
        st = self.fifo.search(q, k, **filters) if include_short_term else [[] for _ in q]
        results = []
        for a, b in zip(lt, st):
            hits = sorted(
                a + [dataclasses.replace(h, meta=dataclasses.replace(h.meta)) for h in b],
                key=lambda h: -h.score,
            )[:k]
            results.append(hits)
            if count_hits:
                lt_ids = [h.id for h in hits if h.source == "long_term"]
                if lt_ids:
                    self.store.meta.add_hits(self.store.meta.rows_of(np.asarray(lt_ids)))
                st_ids = {h.id for h in hits if h.source == "short_term"}
                for m, rid in zip(self.fifo.metas, self.fifo.ids):
                    if rid in st_ids:
                        m.hits += 1
        self.queries += len(q)
        return results[0] if single else results

    def hit_vectors(self, hits: Sequence[Hit]) -> np.ndarray:
        """Stored vectors of ``hits`` (decoded for quantised stores, raw when kept on disk), e.g. to
        re-score them."""
        if not hits:
            return np.zeros((0, self.config.dim), np.float32)
        short = {rid: i for i, rid in enumerate(self.fifo.ids)}
        vecs = self.fifo.vectors if short else None
        long_ids = [h.id for h in hits if h.source != "short_term"]
        long = dict(zip(long_ids, self.store.vectors(long_ids))) if long_ids else {}
        return np.stack([vecs[short[h.id]] if h.source == "short_term" else long[h.id] for h in hits]).astype(
            np.float32
        )

    def search_by_id(self, record_id: int, k: int = 5, **filters: Any) -> list[Hit]:
        """Long-term records most similar to a long-term record's own stored vector (itself excluded)."""
        return self.store.search_by_id(record_id, k, **filters)

    def stats(self) -> dict[str, Any]:
        """Counters and sizes: frames written/kept, bytes per frame (vector code), metadata and id
        bytes, map size, evictions, consolidations, sleeps, queries."""
        s = self.store.stats()
        lt_frames = int(self.store.meta.col("count").sum())
        return {
            "frames_written": self.frames_written,
            "frames_kept": len(self.store) + len(self.fifo),
            "long_term_records": len(self.store),
            "short_term_frames": len(self.fifo),
            "frames_represented": lt_frames + len(self.fifo),
            "bytes_per_frame": s["code_bytes_per_frame"],
            "code_bytes": s["code_bytes"],
            "byte_budget": s["byte_budget"],
            "metadata_bytes": s["metadata_bytes"],
            "index_id_bytes": s["index_id_bytes"],
            "fixed_bytes": s["fixed_bytes"],
            "raw_buffer_bytes": s["raw_buffer_bytes"],
            "raw_disk_bytes": s["raw_disk_bytes"],
            "short_term_bytes": len(self.fifo) * self.config.dim * 4,
            "index": s["index"],
            "trained": s["trained"],
            "trainings": s["trainings"],
            "evicted": s["evicted"],
            "consolidations": self.consolidations,
            "sleeps": self.sleeps,
            "queries": self.queries,
            "nodes": len(self.map),
            "edges": self.map.graph.number_of_edges(),
        }

    # ----------------------------------------------------------------------------- persistence
    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Save atomically into ``directory`` (see :mod:`embodmem.memory.persistence`).

        Returns:
            The manifest path.
        """
        index_bytes, arrays, store_js = self.store.state()
        fifo_meta = MetaTable(self.store.thumbnail_size)
        fifo_meta.append(fifo_meta.columns_from_metas(np.asarray(self.fifo.ids, np.int64), self.fifo.metas))
        arrays.update(fifo_meta.to_arrays("fifo_"))
        arrays["fifo_vecs"] = np.ascontiguousarray(self.fifo.vectors)
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        state = {
            "store": store_js,
            "frames_written": self.frames_written,
            "next_id": self.next_id,
            "consolidations": self.consolidations,
            "sleeps": self.sleeps,
            "queries": self.queries,
            "segment": list(self._segment) if self._segment else None,
        }
        files: dict[str, bytes | Writer] = {
            "index.faiss": index_bytes,
            "arrays.npz": buf.getvalue(),
            "map.json": self.map.to_json().encode(),
        }
        if self.store.raw_file is not None:
            files[_RAW_FILE] = self.store.raw_file.write_npy
        return write_snapshot(
            directory, files, {"dim": self.config.dim, "config": self.config.to_dict(), "state": state}
        )

    @classmethod
    def load(cls, directory: str | os.PathLike[str], expect_dim: int | None = None) -> AgentMemory:
        """Load a memory saved by :meth:`save`, checking every manifest field against the arrays,
        the index and the map.

        Args:
            directory: The save directory.
            expect_dim: If given, refuse a memory of another dimension.

        Raises:
            MemoryLoadError: naming the file (and the manifest field) that is missing, truncated,
                corrupted, foreign or inconsistent.
        """
        directory = Path(directory)
        manifest = read_manifest(directory)
        mpath = directory / "manifest.json"
        streamed = (_RAW_FILE,) if _RAW_FILE in manifest.files else ()  # checked against the config below
        files, streamed_paths = read_files(directory, manifest, _FILES, streamed)
        path = {k: directory / manifest.files[k].path for k in _FILES + streamed}
        dim = manifest.dim
        if expect_dim is not None and dim != expect_dim:
            raise MemoryLoadError(mpath, f"field dim: foreign memory of dim {dim}, expected {expect_dim}")
        try:
            config = MemoryConfig.from_dict(manifest.config)
        except (TypeError, ValueError) as e:
            raise MemoryLoadError(mpath, f"field config: {e}") from None
        if config.dim != dim:
            raise MemoryLoadError(mpath, f"field config.dim: {config.dim} != manifest dim {dim}")
        if (config.raw_vectors == "disk") != bool(streamed):
            raise MemoryLoadError(
                mpath,
                f"field files: lists {sorted(manifest.files)}, but config raw_vectors={config.raw_vectors!r} "
                f"{'needs' if config.raw_vectors == 'disk' else 'keeps no'} {_RAW_FILE}",
            )
        st = validated(MemoryState, manifest.state, mpath, "state")
        if st.frames_written != st.next_id:
            raise MemoryLoadError(
                mpath, f"field state.frames_written: {st.frames_written} != state.next_id {st.next_id}"
            )
        mem = cls(config)
        try:
            index = faiss.deserialize_index(np.frombuffer(files["index.faiss"], dtype=np.uint8))
        except RuntimeError as e:
            raise MemoryLoadError(
                path["index.faiss"], f"not a FAISS index ({str(e).strip().splitlines()[-1]})"
            ) from None
        if index.d != dim or index.metric_type != faiss.METRIC_INNER_PRODUCT:
            raise MemoryLoadError(
                path["index.faiss"],
                f"foreign index: dim {index.d}, metric {index.metric_type}; expected dim {dim}, inner product",
            )
        expected_arrays = set(mem.store.state()[1]) | set(MetaTable(mem.store.thumbnail_size).to_arrays("fifo_"))
        expected_arrays.add("fifo_vecs")
        try:
            arrays = np.load(io.BytesIO(files["arrays.npz"]), allow_pickle=False)
            if set(arrays.files) != expected_arrays:
                raise ValueError(
                    f"holds arrays {sorted(arrays.files)}, config (keep_thumbnails={config.keep_thumbnails}) "
                    f"expects {sorted(expected_arrays)}"
                )
            fifo_meta = MetaTable.from_arrays(arrays, mem.store.thumbnail_size, "fifo_")
            fifo_vecs = np.asarray(arrays["fifo_vecs"])
        except (ValueError, KeyError, OSError, EOFError) as e:
            raise MemoryLoadError(path["arrays.npz"], f"inconsistent arrays ({e})") from None
        raw_rows = None
        if streamed:
            try:
                raw_rows = read_npy_rows(streamed_paths[_RAW_FILE])
            except ValueError as e:
                raise MemoryLoadError(path[_RAW_FILE], f"field files.{_RAW_FILE}: {e}") from None
        try:
            mem.store.load_state(index, arrays, st.store, st.next_id, raw_rows)
        except RawFileMismatch as e:
            raise MemoryLoadError(path[_RAW_FILE], f"field files.{_RAW_FILE}: {e}") from None
        except (ValueError, KeyError, OSError) as e:
            problem = (
                str(e).strip("'") if str(e).startswith("field ") else f"field state.store: {str(e).strip(chr(39))}"
            )
            raise MemoryLoadError(
                mpath, f"{problem} (checked against {path['index.faiss'].name} and {path['arrays.npz'].name})"
            ) from None
        if fifo_vecs.dtype != np.float32 or fifo_vecs.shape != (len(fifo_meta), dim):
            raise MemoryLoadError(
                path["arrays.npz"],
                f"short-term vectors {fifo_vecs.shape} {fifo_vecs.dtype} != ({len(fifo_meta)}, {dim}) float32",
            )
        if len(fifo_meta) >= config.short_term_capacity:
            raise MemoryLoadError(
                mpath,
                f"field config.short_term_capacity: {config.short_term_capacity}, but {len(fifo_meta)} short-term frames were saved",
            )
        fifo_ids = fifo_meta.ids
        if len(fifo_ids):
            lt_last = int(mem.store.meta.ids[-1]) if len(mem.store) else -1
            if fifo_ids[0] <= lt_last or fifo_ids[-1] != st.next_id - 1:
                raise MemoryLoadError(
                    mpath, f"field state.next_id: {st.next_id} does not follow the short-term ids {fifo_ids.tolist()}"
                )
        fifo_metas = [fifo_meta.meta(i) for i in range(len(fifo_meta))]
        latest = (fifo_metas[-1].run_id, fifo_metas[-1].task, fifo_metas[-1].episode) if fifo_metas else None
        if latest is not None and st.segment != latest:
            raise MemoryLoadError(mpath, f"field state.segment: {st.segment!r}, but the latest frame is of {latest!r}")
        try:
            mem.map = TopologicalMap.from_json(files["map.json"].decode("utf-8"))
        except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as e:
            raise MemoryLoadError(path["map.json"], f"not a topological map ({e})") from None
        if mem.map.dim != dim:
            raise MemoryLoadError(path["map.json"], f"foreign map: dim {mem.map.dim}, expected {dim}")
        for name, value in (
            ("node_distance", mem.map.node_distance),
            ("node_similarity", mem.map.node_similarity),
            ("node_rule", mem.map.node_rule),
        ):
            if getattr(config, name) != value:
                raise MemoryLoadError(
                    mpath, f"field config.{name}: {getattr(config, name)!r}, the saved map has {value!r}"
                )
        nodes = np.concatenate([mem.store.meta.col("node"), fifo_meta.col("node")])
        if np.any((nodes < NO_NODE) | (nodes >= len(mem.map))):
            raise MemoryLoadError(path["arrays.npz"], f"records point at map nodes outside 0..{len(mem.map) - 1}")
        mem.fifo._vecs[: len(fifo_meta)] = fifo_vecs
        mem.fifo.metas = fifo_metas
        mem.fifo.ids = [int(i) for i in fifo_ids]
        mem.frames_written = st.frames_written
        mem.next_id = st.next_id
        mem.consolidations = st.consolidations
        mem.sleeps = st.sleeps
        mem.queries = st.queries
        mem._segment = st.segment
        return mem
