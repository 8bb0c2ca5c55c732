"""The agent-facing memory: short-term FIFO + long-term FAISS store + topological map.

:class:`AgentMemory` is what an agent holds. ``observe`` is the cheap online write (FIFO and map);
``query`` reads both the long-term store and the frames not consolidated yet; ``sleep`` is the
offline pass the runner calls between tasks; ``save``/``load`` move the memory between runs.
Its settings are :class:`~embodmem.memory.config.MemoryConfig`; what a snapshot holds and how it
is checked on loading is :mod:`embodmem.memory.snapshot`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

import faiss
import numpy as np

from embodmem.memory import snapshot
from embodmem.memory.config import MemoryConfig
from embodmem.memory.fifo import Consolidated
from embodmem.memory.parts import MemoryParts
from embodmem.memory.records import ANY_RECORD, FrameMeta, Hit, QueryFilter, copy_meta, fit_thumbnail
from embodmem.memory.sleep import SleepReport
from embodmem.memory.sleep import sleep as sleep_pass
from embodmem.memory.updates import RECENCY_OVERFETCH, UpdateStats, remove_contradicted, weigh_by_age

__all__ = ["AgentMemory", "MemoryConfig", "MemorySleepReport", "MemoryStats", "WriteContext"]


class WriteContext(TypedDict):
    """The labels an agent writes with every frame of a task (``FrameMeta.run_id``, ``task``, ``episode``)."""

    run_id: str
    task: str
    episode: int


class MemorySleepReport(SleepReport):
    """:meth:`AgentMemory.sleep`'s report: the records flushed from the FIFO, then the sleep pass's."""

    flushed: int


class MemoryStats(TypedDict):
    """:meth:`AgentMemory.stats`: counters, and sizes in bytes unless named (the run's metrics read
    ``frames_kept`` and ``code_bytes``, the memory agent ``nodes``)."""

    frames_written: int
    frames_kept: int
    long_term_records: int
    short_term_frames: int
    frames_represented: int
    """Frames the kept records stand for (a consolidated record counts the frames merged into it)."""
    bytes_per_frame: int
    """Vector code per long-term record (what the byte budget counts)."""
    code_bytes: int
    byte_budget: int | None
    metadata_bytes: int
    index_id_bytes: int
    fixed_bytes: int
    raw_buffer_bytes: int
    raw_disk_bytes: int
    short_term_bytes: int
    index: str
    trained: bool
    trainings: int
    evicted: int
    consolidations: int
    sleeps: int
    queries: int
    nodes: int
    edges: int


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
        if self.config.faiss_threads is not None:
            faiss.omp_set_num_threads(self.config.faiss_threads)
        self._adopt(MemoryParts.fresh(self.config))

    def _adopt(self, parts: MemoryParts) -> None:
        self.store, self.fifo, self.map, self.counters = parts.store, parts.fifo, parts.map, parts.counters
        self.updates = UpdateStats()
        """What the update policy did and cost (``MemoryConfig.update_policy``; not saved)."""

    def parts(self) -> MemoryParts:
        """The memory's parts (shared, not copied): what a snapshot saves."""
        return MemoryParts(self.config, self.store, self.fifo, self.map, self.counters)

    @property
    def segment(self) -> tuple[str, str, int] | None:
        """(run_id, task, episode) of the latest frame written (a new segment breaks the map's trajectory)."""
        return self.counters.segment

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
        counters = self.counters
        if seg != counters.segment:
            self.map.break_trajectory()
            counters.segment = seg
        node = self.map.observe(meta.x, meta.y, e)
        rec = copy_meta(meta)  # dataclasses.replace costs ~15 us, copy.copy ~3 us; this runs on every step
        rec.node, rec.thumbnail, rec.hits = node, thumb, 0
        salience = rec.salience
        if not (type(salience) is float and salience == 0.0):  # most frames show no target: kept as is
            rec.salience = float(np.float32(salience))  # the precision memory keeps: a snapshot restores it exactly
        out = self.fifo.push(e, rec, counters.next_id)
        counters.next_id += 1
        counters.frames_written += 1
        if out is not None:
            self._store(out)
        return node

    def _store(self, out: Consolidated) -> None:
        if len(out.ids):  # the FIFO's merged frames, each checked when it was written
            columns = self.store.meta.columns_from_metas(out.ids, out.metas, checked=True)
            self.store.add(out.vectors, columns, out.ids)
            self.counters.consolidations += 1
            if self.config.update_policy == "overwrite":
                c = self.config
                remove_contradicted(self.store, self.updates, out.ids, c.update_view_cells, c.contradiction_similarity)

    def flush(self) -> int:
        """Consolidate the short-term frames (at the full-buffer ratio) into long-term memory.

        Returns:
            The number of records moved.
        """
        out = self.fifo.consolidate()
        self._store(out)
        if self.config.update_policy == "consolidate":  # the offline pass: once a task, the whole store
            c = self.config
            remove_contradicted(self.store, self.updates, None, c.update_view_cells, c.contradiction_similarity)
        return len(out.ids)

    def sleep(self, retrain: bool | None = None) -> MemorySleepReport:
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
        self.counters.sleeps += 1
        return {"flushed": flushed, **report}

    # ----------------------------------------------------------------------------- reads
    def query(
        self,
        vec_or_vecs: np.ndarray,
        k: int = 5,
        where: QueryFilter = ANY_RECORD,
        *,
        include_short_term: bool = True,
        count_hits: bool = True,
    ) -> list[Hit] | list[list[Hit]]:
        """Top-``k`` records by cosine over long-term memory and the unconsolidated frames.

        Args:
            vec_or_vecs: One query embedding ``(dim,)`` (text or image), or ``(n, dim)``.
            k: Results per query.
            where: Which records may be returned (task, run, episode, step span, place, heading).
            include_short_term: Also search the frames still in the FIFO.
            count_hits: Count returned records as used (for ``least_used`` eviction).

        Returns:
            For one query a list of :class:`Hit`, best first; for several, one list per query.
        """
        q = np.asarray(vec_or_vecs, dtype=np.float32)
        single = q.ndim == 1
        q = self._unit_queries(np.atleast_2d(q))
        c = self.config
        by_age = c.update_policy in ("recency", "decay")
        fetch = k * RECENCY_OVERFETCH if by_age else k
        lt = self.store.search_rows(q, fetch, where)
        st = self.fifo.search_positions(q, fetch, where) if include_short_term else [([], []) for _ in q]
        results = []
        for (long_scores, long_rows), (short_scores, short_positions) in zip(lt, st):
            # The best ``fetch`` of both, long-term first on ties; only those become hits.
            scores = long_scores.tolist() + short_scores
            n_long = len(long_rows)
            best = sorted(range(len(scores)), key=lambda i: -scores[i])[:fetch]
            taken = [i for i in best if i < n_long]
            long_hits = self.store.hits(long_scores[taken], long_rows[taken])
            next_long = iter(long_hits).__next__
            hits = [next_long() if i < n_long else self.fifo.hit(scores[i], short_positions[i - n_long]) for i in best]
            if by_age:
                latest = self.counters.segment[2] if self.counters.segment is not None else 0
                floor = c.decay_floor if c.update_policy == "decay" else None
                hits = weigh_by_age(hits, k, latest, c.recency_half_life, floor)
            results.append(hits)
            if count_hits:
                row_of = dict(zip((h.id for h in long_hits), long_rows[taken].tolist()))
                lt_rows = [row_of[h.id] for h in hits if h.source == "long_term"]
                if lt_rows:
                    self.store.meta.add_hits(np.asarray(lt_rows, dtype=np.int64))
                st_ids = {h.id for h in hits if h.source == "short_term"}
                for m, rid in zip(self.fifo.metas, self.fifo.ids):
                    if rid in st_ids:
                        m.hits += 1
        self.counters.queries += len(q)
        return results[0] if single else results

    _last_queries: tuple[tuple[tuple[int, ...], bytes], np.ndarray] | None = None
    """The last queries :meth:`_unit_queries` normalised (shape and bytes) and the result."""

    def _unit_queries(self, q: np.ndarray) -> np.ndarray:
        """``(n, dim)`` float32 queries scaled to unit length; an agent asks with one mission
        vector for a whole task, so the last answer is kept for the same bytes."""
        key = (q.shape, q.tobytes())
        if self._last_queries is not None and self._last_queries[0] == key:
            return self._last_queries[1]
        norms = np.sqrt(np.add.reduce(q * q, axis=1, keepdims=True))  # np.linalg.norm's own sum, less its checks
        if q.shape[1] != self.config.dim or not np.all(norms > 0):
            raise ValueError(f"queries must be non-zero vectors of dim {self.config.dim}, got shape {q.shape}")
        unit = np.ascontiguousarray(q / norms)
        unit.flags.writeable = False  # shared by the queries that repeat it
        self._last_queries = (key, unit)
        return unit

    def hit_vectors(self, hits: Sequence[Hit]) -> np.ndarray:
        """Stored vectors of ``hits`` (decoded for quantised stores, raw when kept on disk), e.g. to
        re-score them."""
        out = np.empty((len(hits), self.config.dim), np.float32)
        long_at = [j for j, h in enumerate(hits) if h.source != "short_term"]
        if long_at:
            out[long_at] = self.store.vectors([hits[j].id for j in long_at])
        if len(long_at) < len(hits):
            short = {rid: i for i, rid in enumerate(self.fifo.ids)}
            short_at = [j for j, h in enumerate(hits) if h.source == "short_term"]
            out[short_at] = self.fifo.vectors[[short[hits[j].id] for j in short_at]]
        return out

    def search_by_id(self, record_id: int, k: int = 5, where: QueryFilter = ANY_RECORD) -> list[Hit]:
        """Long-term records most similar to a long-term record's own stored vector (itself excluded)."""
        return self.store.search_by_id(record_id, k, where)

    def code_bytes(self) -> int:
        """``stats()["code_bytes"]`` alone: the long-term store's vector code, cheap enough for every step."""
        return self.store.code_bytes()

    def stats(self) -> MemoryStats:
        """Counters and sizes: frames written/kept, bytes per frame (vector code), metadata and id
        bytes, map size, evictions, consolidations, sleeps, queries."""
        s = self.store.stats()
        lt_frames = int(self.store.meta.col("count").sum())
        return {
            "frames_written": self.counters.frames_written,
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
            "consolidations": self.counters.consolidations,
            "sleeps": self.counters.sleeps,
            "queries": self.counters.queries,
            "nodes": len(self.map),
            "edges": self.map.graph.number_of_edges(),
        }

    # ----------------------------------------------------------------------------- persistence
    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Save atomically into ``directory`` (:func:`embodmem.memory.snapshot.save_memory`).

        Returns:
            The manifest path.
        """
        return snapshot.save_memory(self.parts(), directory)

    @classmethod
    def load(cls, directory: str | os.PathLike[str], expect_dim: int | None = None) -> AgentMemory:
        """Load a memory saved by :meth:`save`, checking every manifest field against the arrays,
        the index and the map (:mod:`embodmem.memory.snapshot`).

        Args:
            directory: The save directory.
            expect_dim: If given, refuse a memory of another dimension.

        Raises:
            MemoryLoadError: naming the file (and the manifest field) that is missing, truncated,
                corrupted, foreign or inconsistent.
        """
        parts = snapshot.restore_memory(snapshot.read_memory(directory, expect_dim))
        memory = cls(parts.config)
        memory._adopt(parts)
        return memory
