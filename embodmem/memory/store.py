"""Long-term memory: a FAISS index of record embeddings with metadata that always agrees with it.

The quantiser is any FAISS index-factory string with the inner-product metric ("Flat", "SQfp16",
"SQ8", "PQ16", "IVF256,PQ32", "OPQ16,IVF256,PQ16", ...). Records carry stable int64 ids: non-IVF
indexes are wrapped in ``IndexIDMap2``; IVF indexes keep ids natively, with a hash-table direct map
so records can be removed and reconstructed by id. Metadata lives in a :class:`MetaTable` whose rows
are sorted by id, which is also age order.

Quantisers that need training start honestly cold: the store is a flat index until ``train_min``
vectors have arrived, then it trains on them (capped at ``train_sample``) and migrates every stored
vector into the trained index. A ring buffer of the latest raw vectors (outside the byte budget,
reported separately) is kept for drift checks and retraining during sleep.

With ``raw_vectors="disk"`` every record's raw vector lives in a memory-mapped file on disk instead
(:mod:`embodmem.memory.rawfile`; outside the byte budget, reported as disk bytes): training and
sleep-time retraining sample *all* of them uniformly and re-encode every record from them, so a
quantiser trained on the first places does not stay stuck with the codes it made badly, and
``rerank=K`` re-scores the index's top ``K`` candidates exactly from the file. A record's code is
always the encoding of its raw vector as stored (float16 rounding included), which a load checks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypedDict

import faiss
import numpy as np
from pydantic import Field

from embodmem.memory.codec import (
    build_index,
    code_bytes_per_vector,
    codec_of,
    empty_index_bytes,
    index_facts,
    index_ids,
    index_signature,
    reconstruction_error,
)
from embodmem.memory.config import MemoryConfig
from embodmem.memory.eviction import EVICTION_POLICIES
from embodmem.memory.persistence import Strict
from embodmem.memory.rawfile import RawVectorFile
from embodmem.memory.records import ANY_RECORD, FrameMeta, Hit, MetaTable, QueryFilter

#: Filtered searches whose matching set is at most this large are answered exactly on decoded codes.
EXACT_FILTER_MAX = 1024


class RawFileMismatch(ValueError):
    """Saved raw vectors that do not belong to the saved index (shape, dtype or codes disagree)."""


def _codes_disagree(index: faiss.Index, ids: np.ndarray, raw: np.ndarray) -> int:
    """How many of an evenly spread sample of records do not encode, from their raw vectors, to the
    code ``index`` holds for them (the store adds every vector to the index exactly as its raw file
    holds it, so this is 0 unless the file is foreign; a few may flip on near-ties of the coarse
    assignment, hence a share is tolerated by the caller)."""
    if len(ids) == 0:
        return 0
    rows = np.unique(np.linspace(0, len(ids) - 1, min(len(ids), RAW_CHECK_SAMPLE)).astype(np.int64))
    x = np.ascontiguousarray(raw[rows], dtype=np.float32)
    codec = codec_of(index)
    mine = codec.sa_decode(codec.sa_encode(x))
    held = index.reconstruct_batch(np.ascontiguousarray(ids[rows]))
    agree = np.all(np.abs(mine - held) <= 1e-5 * (1 + np.abs(held)), axis=1)
    bad = int((~agree).sum())
    return bad if bad > len(rows) // 10 else 0


class StoreState(Strict):
    """The JSON part of a saved :class:`LongTermStore` (``manifest.json`` field ``state.store``)."""

    trained: bool
    train_error: float | None = Field(ge=0)
    evicted: int = Field(ge=0)
    trainings: int = Field(ge=0)
    raw_pos: int = Field(ge=0)
    fixed_bytes: int = Field(ge=1)


class StoreStats(TypedDict):
    """Sizes and counts of a :class:`LongTermStore` (:meth:`LongTermStore.stats`); bytes unless named."""

    records: int
    index: str
    """The index factory, or "Flat (cold start)" before a trainable quantiser is trained."""
    trained: bool
    code_bytes_per_frame: int
    code_bytes: int
    byte_budget: int | None
    index_id_bytes: int
    metadata_bytes: int
    fixed_bytes: int
    raw_buffer_bytes: int
    raw_vectors: str
    raw_disk_bytes: int
    raw_map_bytes: int
    evicted: int
    trainings: int


class RawBuffer:
    """Ring buffer of the latest raw vectors with their ids (training and drift checks)."""

    def __init__(self, capacity: int, dim: int) -> None:
        self.capacity = capacity
        self.vecs = np.zeros((capacity, dim), dtype=np.float32)
        self.ids = np.full(capacity, -1, dtype=np.int64)
        self.pos = 0

    def push(self, ids: np.ndarray, vecs: np.ndarray) -> None:
        """Store ``vecs``; once full, the oldest entries are overwritten."""
        if self.capacity == 0:
            return
        ids, vecs = ids[-self.capacity :], vecs[-self.capacity :]
        slots = (self.pos + np.arange(len(ids))) % self.capacity
        self.vecs[slots] = vecs
        self.ids[slots] = ids
        self.pos = int((self.pos + len(ids)) % self.capacity)

    def valid(self) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, vectors)`` of live entries (ids ``-1`` were discarded)."""
        ok = self.ids >= 0
        return self.ids[ok], self.vecs[ok]

    def discard(self, ids: np.ndarray) -> None:
        """Forget the raw copies of ``ids`` (their stored vector changed)."""
        self.ids[np.isin(self.ids, ids)] = -1

    def nbytes(self) -> int:
        """Bytes held (vectors plus ids)."""
        return int(self.vecs.nbytes + self.ids.nbytes)


#: Records whose code a load re-derives from the raw file (and compares) to check the file belongs.
RAW_CHECK_SAMPLE = 256


class LongTermStore:
    """FAISS-backed long-term store with a byte budget, eviction, filters and cold-start training.

    Its settings are a :class:`~embodmem.memory.config.MemoryConfig` (the fields it reads:
    ``dim``, ``index_factory``, ``byte_budget``, ``eviction``, ``train_min``, ``train_sample``,
    ``nprobe``, ``pq_train_points``, ``keep_thumbnails``/``thumbnail_size``, ``seed``, ``raw_vectors``,
    ``raw_dtype``, ``raw_dir``, ``rerank``), validated when the config was built. Eviction policies are
    :data:`~embodmem.memory.eviction.EVICTION_POLICIES`; records being inserted are never the victims
    of their own insert (unless the batch alone exceeds the budget).

    Example:
        >>> s = LongTermStore(MemoryConfig(dim=4))
        >>> v = np.eye(4, dtype=np.float32)
        >>> ids = s.add(v, [FrameMeta("r", "t", 0, i, 0.0, 0.0) for i in range(4)], np.arange(4))
        >>> [h.id for h in s.search(v[2:3], 1)[0]]
        [2]
    """

    _code_size_of: tuple[faiss.Index, int] | None = None
    """The index :meth:`code_bytes` last looked at, and its code bytes per record."""
    _plain_search_of: tuple[faiss.Index, int, faiss.IndexIVF | None, faiss.SearchParameters | None] | None = None
    """The index and ``nprobe`` an unfiltered search last ran with, the index's IVF part and the
    search parameters (:meth:`_plain_search`)."""

    def __init__(self, config: MemoryConfig) -> None:
        self.config = config
        self.needs_training = index_facts(config.dim, config.index_factory).needs_training
        self.reset()

    @property
    def thumbnail_size(self) -> int | None:
        """Side of stored thumbnails, or ``None`` when the config keeps none."""
        return self.config.thumbnail_size if self.config.keep_thumbnails else None

    # ----------------------------------------------------------------------------- lifecycle
    def reset(self) -> None:
        """Forget everything (back to the cold start)."""
        self.trained = not self.needs_training
        self._index = self._fresh_index()
        self.meta = MetaTable(self.thumbnail_size)
        self.raw_file = (
            RawVectorFile(self.config.dim, self.config.raw_dtype, self.config.raw_dir)
            if self.config.raw_vectors == "disk"
            else None
        )
        self.raw = RawBuffer(
            self.config.train_sample if self.needs_training and self.raw_file is None else 0, self.config.dim
        )
        self.train_error: float | None = 0.0 if self.trained else None
        self.evicted = 0
        self.trainings = 0
        self._fixed_bytes = len(faiss.serialize_index(self._index))

    def _fresh_index(self) -> faiss.Index:
        index = build_index(
            self.config.dim, self.config.index_factory if self.trained else "Flat", self.config.pq_train_points
        )
        self._configure(index)
        return index

    def _configure(self, index: faiss.Index) -> None:
        ivf = faiss.try_extract_index_ivf(index)
        if ivf is not None:
            ivf.nprobe = self.config.nprobe

    def __len__(self) -> int:
        return len(self.meta)

    @property
    def index(self) -> faiss.Index:
        """The live FAISS index (read-only use: mutate through the store to keep metadata in sync)."""
        return self._index

    @property
    def capacity(self) -> int | None:
        """Records the byte budget allows with the current code size (``None``: unlimited)."""
        if self.config.byte_budget is None:
            return None
        return self.config.byte_budget // code_bytes_per_vector(self._index)

    # ----------------------------------------------------------------------------- writes
    def add(
        self,
        vectors: np.ndarray,
        metas: Sequence[FrameMeta] | dict[str, np.ndarray],
        ids: np.ndarray | Sequence[int],
    ) -> np.ndarray:
        """Insert records; evicts first when the byte budget would be exceeded.

        Args:
            vectors: ``(n, dim)`` unit vectors.
            metas: One :class:`FrameMeta` per vector, or columns from ``meta.columns_from_metas``.
            ids: Strictly increasing ids, all larger than any stored id.

        Returns:
            The ids actually inserted (a batch larger than the whole budget keeps its newest part).
        """
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.config.dim:
            raise ValueError(f"vectors must have shape (n, {self.config.dim}), got {x.shape}")
        if not np.isfinite(x).all():
            raise ValueError("vectors must be finite (found NaN or infinity)")
        ids = np.asarray(ids, dtype=np.int64)
        cols = metas if isinstance(metas, dict) else self.meta.columns_from_metas(ids, metas)
        if len(ids) != len(x) or len(cols["ids"]) != len(x):
            raise ValueError(f"got {len(x)} vectors, {len(ids)} ids and {len(cols['ids'])} metadata rows")
        if len(x) == 0:
            return ids
        if np.any(np.diff(ids) <= 0) or (len(self) and ids[0] <= self.meta.ids[-1]):
            last = int(self.meta.ids[-1]) if len(self) else None
            raise ValueError(
                f"ids must be strictly increasing and above the last stored id {last}, got {ids[:8].tolist()}"
            )
        if self.raw_file is not None:
            self.raw_file.reserve(len(x))  # a full disk fails here, before anything changes
        if not self.trained and len(self) + len(x) >= self.config.train_min:
            self._train_and_migrate(extra=x)
        keep = self._make_room(len(x))
        if keep < len(x):
            x, ids = x[-keep:], ids[-keep:]
            cols = {k: v[-keep:] for k, v in cols.items()}
        self.meta.append(cols)  # validates id order before FAISS is touched
        if self.raw_file is not None:
            x = self.raw_file.append(x)  # the index gets the vectors exactly as the file holds them
        self._index.add_with_ids(x, ids)
        self.raw.push(ids, x)
        return ids

    def _make_room(self, n_new: int) -> int:
        """Evict so that ``n_new`` more records fit; returns how many of them can be kept."""
        cap = self.capacity
        if cap is None:
            return n_new
        if n_new >= cap:
            self._evict_rows(np.arange(len(self)))
            return cap
        excess = len(self) + n_new - cap
        if excess > 0:
            self._evict_rows(np.sort(self._eviction_order()[:excess]))
        return n_new

    def _eviction_order(self) -> np.ndarray:
        """Rows, first victim first, under the configured eviction policy."""
        return EVICTION_POLICIES[self.config.eviction](self.meta)

    def _evict_rows(self, rows: np.ndarray) -> None:
        if len(rows):
            self.remove(self.meta.ids[rows])
            self.evicted += len(rows)

    def remove(self, ids: np.ndarray | Sequence[int]) -> None:
        """Remove records by id from the index and the metadata together."""
        ids = np.unique(np.asarray(ids, dtype=np.int64))
        if len(ids) == 0:
            return
        rows = self.meta.rows_of(ids)
        removed = self._index.remove_ids(ids)
        if removed != len(ids):
            raise RuntimeError(f"FAISS removed {removed} of {len(ids)} ids: index and metadata disagree")
        self._delete_rows(rows)

    def _delete_rows(self, rows: np.ndarray) -> None:
        """Delete metadata rows and their raw-file rows together (they stay aligned)."""
        self.meta.delete_rows(rows)
        if self.raw_file is not None:
            self.raw_file.delete(rows)

    def merge(self, groups: Sequence[np.ndarray], vectors: np.ndarray) -> np.ndarray:
        """Merge each group of records into its newest member (the survivor), whose vector becomes
        ``vectors[i]``; counts and hits add, the step span widens, the survivor's pose is kept and
        the label and salience are the most salient member's (as in :func:`~embodmem.memory.records.merge_metas`).

        Returns:
            The survivor ids.
        """
        if not groups:
            return np.zeros(0, np.int64)
        survivors = np.asarray([int(np.max(g)) for g in groups], dtype=np.int64)
        all_ids = np.concatenate([np.asarray(g, np.int64) for g in groups])
        if len(np.unique(all_ids)) != len(all_ids):
            raise ValueError("merge groups overlap")
        m = self.meta
        srows = m.rows_of(survivors)
        for r, g in zip(srows, groups):
            grows = np.sort(m.rows_of(np.asarray(g)))  # rows are in id order, so age order
            m.set_values("count", r, m.col("count")[grows].sum())
            m.set_values("hits", r, m.col("hits")[grows].sum())
            m.set_values("step_min", r, m.col("step_min")[grows].min())
            m.set_values("step_max", r, m.col("step_max")[grows].max())
            # the most salient member's label (the latest on ties), as merge_metas does
            best = grows[len(grows) - 1 - int(np.argmax(m.col("salience")[grows][::-1]))]
            m.set_values("label", r, m.col("label")[best])
            m.set_values("salience", r, m.col("salience")[best])
        removed = self._index.remove_ids(all_ids)
        if removed != len(all_ids):
            raise RuntimeError(f"FAISS removed {removed} of {len(all_ids)} ids during merge")
        self._delete_rows(np.setdiff1d(m.rows_of(all_ids), srows))
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        if self.raw_file is not None:
            x = self.raw_file.set(m.rows_of(survivors), x)
        self._index.add_with_ids(x, survivors)
        self.raw.discard(all_ids)
        return survivors

    # ----------------------------------------------------------------------------- training
    def _training_set(self, extra: np.ndarray | None = None) -> np.ndarray:
        """Vectors to train on, at most ``train_sample``.

        Cold start: every raw vector seen so far (plus ``extra``, the batch being inserted).
        Retraining: at most half recent raw vectors (where the data drifted to), the rest decoded
        records sampled uniformly over the whole store, so that places seen long ago keep their
        share of centroids. With the raw vectors on disk: a uniform sample of all of them (and of
        ``extra``), exact.
        """
        rng = np.random.default_rng(self.config.seed + self.trainings)
        if self.raw_file is not None:
            more = np.zeros((0, self.config.dim), np.float32) if extra is None else np.asarray(extra, np.float32)
            total = len(self) + len(more)
            pick = np.arange(total)
            if total > self.config.train_sample:
                pick = np.sort(rng.choice(total, size=self.config.train_sample, replace=False))
            in_file = pick[pick < len(self)]
            return np.ascontiguousarray(
                np.concatenate([self.raw_file.get(in_file), more[pick[pick >= len(self)] - len(self)]])
            )
        _, raw = self.raw.valid()
        if extra is not None:
            raw = np.concatenate([raw, extra])
        cap = self.config.train_sample // 2 if self.trained else self.config.train_sample
        if len(raw) > cap:
            raw = raw[np.sort(rng.choice(len(raw), size=cap, replace=False))]
        parts = [raw]
        need = min(self.config.train_sample - len(raw), len(self)) if self.trained else 0
        if need > 0:
            pick = np.sort(rng.choice(len(self), size=need, replace=False))
            parts.append(self.reconstruct(self.meta.ids[pick]))
        return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)

    def _train_and_migrate(self, extra: np.ndarray | None = None, train: np.ndarray | None = None) -> None:
        """Train the configured quantiser and move every stored record into it."""
        if train is None:
            train = self._training_set(extra)
        new = build_index(self.config.dim, self.config.index_factory, self.config.pq_train_points)
        self._configure(new)
        try:
            new.train(train)
        except RuntimeError as e:
            raise ValueError(
                f"training index_factory={self.config.index_factory!r} on {len(train)} vectors failed "
                f"(raise train_min/train_sample): {str(e).strip().splitlines()[-1]}"
            ) from None
        fixed = len(faiss.serialize_index(new))
        ids = self.meta.ids.copy()
        if self.raw_file is not None:
            for s, x in self.raw_file.chunks():
                new.add_with_ids(x, ids[s : s + len(x)])
        else:
            raw_ids, raw_vecs = self.raw.valid()
            raw_pos = {int(i): j for j, i in enumerate(raw_ids)}
            for s in range(0, len(ids), 65_536):
                chunk = ids[s : s + 65_536]
                x = self.reconstruct(chunk)
                for j, rid in enumerate(chunk):  # prefer the raw vector when we still have it
                    p = raw_pos.get(int(rid))
                    if p is not None:
                        x[j] = raw_vecs[p]
                new.add_with_ids(x, chunk)
        self._index = new
        self.trained = True
        self.trainings += 1
        # Baseline for drift(): the error on the very population drift() measures (recent raw
        # vectors), so a fresh quantiser has drift 1.0 whatever mix it was trained on.
        recent = self._recent_raw()
        self.train_error = reconstruction_error(new, recent if len(recent) else train)
        self._fixed_bytes = fixed

    def _recent_raw(self) -> np.ndarray:
        """The latest raw vectors (up to ``train_sample``): what drift is measured on."""
        if self.raw_file is not None:
            return self.raw_file.recent(self.config.train_sample)
        return self.raw.valid()[1]

    def retrain(self) -> bool:
        """Retrain the quantiser on recent raw vectors plus decoded stored ones (with the raw vectors
        on disk: a uniform sample of all of them), then re-index.

        A store still in its flat cold start is left alone (it trains once ``train_min`` vectors
        have arrived), and so is one whose training set would be smaller than ``train_min`` (after
        heavy merging). Returns whether it retrained.
        """
        if not (self.needs_training and self.trained):
            return False
        train = self._training_set()
        if len(train) < self.config.train_min:
            return False
        self._train_and_migrate(train=train)
        return True

    def drift(self) -> float | None:
        """Reconstruction error of the recent raw vectors divided by the error at training time
        (``None`` when not applicable: flat index, untrained or no recent vectors)."""
        if not self.needs_training or not self.trained or not self.train_error:
            return None
        raw = self._recent_raw()
        if len(raw) == 0:
            return None
        return reconstruction_error(self._index, raw) / self.train_error

    # ----------------------------------------------------------------------------- reads
    def reconstruct(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        """Decoded vectors of ``ids`` (exact for flat indexes)."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        if len(ids) == 0:
            return np.zeros((0, self.config.dim), np.float32)
        self.meta.rows_of(ids)  # KeyError naming an unknown id
        return self._index.reconstruct_batch(ids)

    def vectors(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        """The best copy of the records' vectors: raw from the disk file when kept, else decoded."""
        if self.raw_file is None:
            return self.reconstruct(ids)
        return self.raw_file.get(self.meta.rows_of(np.asarray(ids, dtype=np.int64)))

    def search(
        self, queries: np.ndarray, k: int, where: QueryFilter = ANY_RECORD, *, count_hits: bool = False
    ) -> list[list[Hit]]:
        """Top-``k`` records per query row, best first, restricted to the records ``where`` matches.

        ``min(k, matching records)`` hits are always returned: filters go into FAISS as an id
        selector (a bitmap over ids) where the index supports it; IVF indexes widen ``nprobe`` (x4
        up to all lists) for queries whose probed lists hold too few matches; indexes without
        selector support (flat PQ, fast-scan) over-fetch and filter. Small matching sets, and any
        query still short, are scored exactly on the decoded codes of the matching records (on
        their raw vectors when they are kept on disk). With ``rerank``, FAISS returns up to
        ``rerank`` candidates per query, which are re-scored exactly from the raw file; hit
        scores are then exact cosines (of the stored, possibly float16, vectors).
        """
        out = []
        for scores, rows in self.search_rows(queries, k, where):
            out.append(self.hits(scores, rows))
            if count_hits and len(rows):
                self.meta.add_hits(rows)
        return out

    def search_rows(
        self, queries: np.ndarray, k: int, where: QueryFilter = ANY_RECORD
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`search` as ``(scores, rows)`` per query row, best first: a caller that keeps only
        some of them (merging with the short-term frames) builds the :class:`Hit` of those alone
        (:meth:`hits`)."""
        q = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        if q.shape[1] != self.config.dim:
            raise ValueError(f"queries must have {self.config.dim} columns, got shape {q.shape}")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if len(self) == 0:
            return [(np.zeros(0, np.float32), np.zeros(0, np.int64)) for _ in range(len(q))]
        return self._search_rows(q, k, self.meta.filter_mask(where))

    def hits(self, scores: np.ndarray, rows: np.ndarray) -> list[Hit]:
        """The :class:`Hit` of each of ``rows`` with its score, in order."""
        ids = self.meta.ids[rows].tolist()
        return [Hit(s, i, m) for s, i, m in zip(scores.tolist(), ids, self.meta.metas(rows))]

    def _selector_params(self, sel: faiss.IDSelector | None, nprobe: int) -> faiss.SearchParameters | None:
        """Search parameters carrying ``sel`` (and ``nprobe``), or ``None`` if the index has none."""
        index = self._index
        if isinstance(index, faiss.IndexIDMap2):
            inner = faiss.downcast_index(index.index)
            # IndexPQ and fast-scan reject selectors; IDMap2 translates only a top-level selector
            ok = isinstance(inner, (faiss.IndexFlat, faiss.IndexScalarQuantizer))
            return faiss.SearchParameters(sel=sel) if ok and sel is not None else None
        params = faiss.SearchParametersIVF(nprobe=nprobe)
        if sel is not None:
            params.sel = sel
        if isinstance(index, faiss.IndexPreTransform):
            params = faiss.SearchParametersPreTransform(index_params=params)
        return params

    def _plain_search(self) -> tuple[faiss.IndexIVF | None, faiss.SearchParameters | None]:
        """The IVF part of the index (``None``: none) and the parameters of a search without a
        selector: the same for every search of one index, so looked up once per index and
        ``nprobe`` (an agent queries every few steps)."""
        index, nprobe = self._index, self.config.nprobe
        known = self._plain_search_of
        if known is None or known[0] is not index or known[1] != nprobe:
            known = (index, nprobe, faiss.try_extract_index_ivf(index), self._selector_params(None, nprobe))
            self._plain_search_of = known
        return known[2], known[3]

    def _search_rows(self, q: np.ndarray, k: int, mask: np.ndarray | None) -> list[tuple[np.ndarray, np.ndarray]]:
        """``(scores, rows)`` per query: the top ``min(k, matching)`` records."""
        n = len(self)
        rows = np.flatnonzero(mask) if mask is not None else None
        m = n if rows is None else len(rows)
        want = min(k, m)
        fetch = min(max(k, self.config.rerank), m)  # candidates asked of FAISS (re-ranked when rerank)
        empty = (np.zeros(0, np.float32), np.zeros(0, np.int64))
        results: list[tuple[np.ndarray, np.ndarray]] = [empty] * len(q)
        if want == 0:
            return results
        exact = np.zeros(len(q), dtype=bool)  # answered by the exact fallback below
        todo = np.arange(len(q))
        if rows is None or m > EXACT_FILTER_MAX:
            sel, bitmap = None, None
            if rows is not None:
                ids = self.meta.ids[rows]
                bits = np.zeros(int(self.meta.ids[-1]) + 1, dtype=bool)
                bits[ids] = True
                bitmap = np.packbits(bits, bitorder="little")  # FAISS reads bit i at byte i >> 3
                sel = faiss.IDSelectorBitmap(len(bits), faiss.swig_ptr(bitmap))
            nprobe = self.config.nprobe
            if sel is None:
                ivf, params = self._plain_search()
            else:
                ivf, params = faiss.try_extract_index_ivf(self._index), self._selector_params(sel, nprobe)
            if params is None and sel is not None:
                todo = self._overfetch(q, max(k, fetch), want, mask, results)  # type: ignore[arg-type]
            else:
                while len(todo):
                    scores, labels = self._index.search(q[todo], fetch, params=params)
                    left = []
                    for j, qi in enumerate(todo):
                        valid = labels[j] >= 0
                        if valid.sum() >= want:
                            results[qi] = (scores[j][valid], self.meta.rows_of(labels[j][valid]))
                        else:
                            left.append(qi)
                    todo = np.asarray(left, dtype=np.int64)
                    if ivf is None or nprobe >= ivf.nlist:
                        break
                    nprobe = min(ivf.nlist, nprobe * 4)  # the probed lists held too few (matching) records
                    params = self._selector_params(sel, nprobe)
            del bitmap  # kept alive until here: the selector points into it
        if len(todo):
            sub = np.arange(n) if rows is None else rows
            x = self.vectors(self.meta.ids[sub])
            sims = np.einsum("qd,nd->qn", q[todo], x)
            for j, qi in enumerate(todo):
                top = np.argsort(-sims[j], kind="stable")[:want]
                results[qi] = (sims[j][top], sub[top])
            exact[todo] = True
        if self.config.rerank:
            for qi in np.flatnonzero(~exact):
                results[qi] = self._rerank(q[qi], results[qi][1], want)
        return results

    def _rerank(self, query: np.ndarray, rows: np.ndarray, want: int) -> tuple[np.ndarray, np.ndarray]:
        """The best ``want`` of candidate ``rows`` by exact score against their raw vectors."""
        assert self.raw_file is not None
        order = np.argsort(rows)  # ascending rows read the file in order
        cand = rows[order]
        sims = self.raw_file.get(cand) @ query
        top = np.argsort(-sims, kind="stable")[:want]
        return sims[top], cand[top]

    def _overfetch(
        self, q: np.ndarray, k: int, want: int, mask: np.ndarray, results: list[tuple[np.ndarray, np.ndarray]]
    ) -> np.ndarray:
        """Filter by fetching more than ``k`` and keeping matches (indexes without selectors): up to
        ``k`` of them, at least ``want``. Fills ``results`` and returns the queries still short."""
        n, m = len(self), int(mask.sum())
        kk = min(n, max(2 * k, math.ceil(2 * k * n / m)))
        todo = np.arange(len(q))
        while len(todo):
            scores, labels = self._index.search(q[todo], kk)
            left = []
            for j, qi in enumerate(todo):
                valid = labels[j] >= 0
                r = self.meta.rows_of(labels[j][valid])
                ok = mask[r]
                if ok.sum() >= want:
                    results[qi] = (scores[j][valid][ok][:k], r[ok][:k])
                else:
                    left.append(qi)
            todo = np.asarray(left, dtype=np.int64)
            if kk >= min(n, 16 * EXACT_FILTER_MAX):
                break
            kk = min(n, kk * 4)
        return todo

    def search_by_id(
        self, record_id: int, k: int, where: QueryFilter = ANY_RECORD, *, exclude_self: bool = True
    ) -> list[Hit]:
        """Records most similar to record ``record_id``'s own stored vector (raw when kept on disk)."""
        v = self.vectors([record_id])
        hits = self.search(v, k + int(exclude_self), where)[0]
        if exclude_self:
            hits = [h for h in hits if h.id != record_id]
        return hits[:k]

    # ----------------------------------------------------------------------------- accounting
    def faiss_ids(self) -> np.ndarray:
        """Ids FAISS holds, sorted (must equal ``meta.ids``)."""
        return index_ids(self._index)

    def code_bytes(self) -> int:
        """Bytes of vector code held (``stats()["code_bytes"]`` alone): cheap enough for every step,
        as the runner's budget peak reads it (the code size is looked up once per index)."""
        index = self._index
        if self._code_size_of is None or self._code_size_of[0] is not index:
            self._code_size_of = (index, code_bytes_per_vector(index))
        return self._code_size_of[1] * len(self)

    def stats(self) -> StoreStats:
        """Sizes in bytes: vector code, ids, metadata, fixed trained parameters, raw buffer (RAM), and
        the raw vectors on disk with their row map (RAM)."""
        n = len(self)
        cb = code_bytes_per_vector(self._index)
        return {
            "records": n,
            "index": "Flat (cold start)" if not self.trained else self.config.index_factory,
            "trained": self.trained,
            "code_bytes_per_frame": cb,
            "code_bytes": cb * n,
            "byte_budget": self.config.byte_budget,
            # FAISS keeps an 8-byte id per record plus a hash map id -> position (IDMap2 rev_map or
            # the IVF direct map); 16 bytes is the payload of that map, allocator overhead excluded.
            "index_id_bytes": 24 * n,
            "metadata_bytes": self.meta.nbytes(include_ids=True),
            "fixed_bytes": self._fixed_bytes,
            "raw_buffer_bytes": self.raw.nbytes() if self.needs_training else 0,
            "raw_vectors": self.config.raw_vectors,
            "raw_disk_bytes": 0 if self.raw_file is None else self.raw_file.disk_bytes(),
            "raw_map_bytes": 0 if self.raw_file is None else self.raw_file.map_bytes(),
            "evicted": self.evicted,
            "trainings": self.trainings,
        }

    # ----------------------------------------------------------------------------- persistence
    def state(self) -> tuple[bytes, dict[str, np.ndarray], StoreState]:
        """``(index bytes, arrays, JSON state)`` for persistence (the raw file, when on disk, is
        written apart: :meth:`RawVectorFile.write_npy`)."""
        arrays = self.meta.to_arrays("meta_")
        arrays.update(raw_vecs=self.raw.vecs, raw_ids=self.raw.ids)
        js = StoreState(
            trained=self.trained,
            train_error=self.train_error,
            evicted=self.evicted,
            trainings=self.trainings,
            raw_pos=self.raw.pos,
            fixed_bytes=self._fixed_bytes,
        )
        return faiss.serialize_index(self._index).tobytes(), arrays, js

    def load_state(
        self, index: faiss.Index, arrays: Any, state: StoreState, next_id: int, raw_rows: np.ndarray | None = None
    ) -> None:
        """Inverse of :meth:`state`, cross-checking the saved state against the index and arrays.

        Args:
            raw_rows: With ``raw_vectors="disk"``: the saved raw vectors, one row per record in id
                order (e.g. the snapshot's ``.npy`` memory-mapped); copied into a new working file.

        Raises:
            RawFileMismatch: the raw rows do not fit the config, the records or their codes.
            ValueError: naming the ``state.store`` field (as in the manifest) or the part that disagrees.
        """
        if index.d != self.config.dim:
            raise ValueError(f"index dimension {index.d} != {self.config.dim}")
        meta = MetaTable.from_arrays(arrays, self.thumbnail_size, "meta_")
        if index.ntotal != len(meta):
            raise ValueError(f"index holds {index.ntotal} records but metadata has {len(meta)}")
        if not np.array_equal(index_ids(index), meta.ids):
            raise ValueError("index ids and metadata ids differ")
        if len(meta) and (meta.ids[0] < 0 or meta.ids[-1] >= next_id):
            raise ValueError(f"record ids {int(meta.ids[0])}..{int(meta.ids[-1])} are not in [0, next_id={next_id})")
        if not self.needs_training and not state.trained:
            raise ValueError(f"field state.store.trained: false, but {self.config.index_factory!r} needs no training")
        if (state.train_error is None) == state.trained:
            raise ValueError(
                f"field state.store.train_error: {state.train_error!r} does not fit trained={state.trained}"
            )
        if self.needs_training and state.trained != (state.trainings >= 1):
            raise ValueError(f"field state.store.trainings: {state.trainings} does not fit trained={state.trained}")
        if not self.needs_training and state.trainings != 0:
            raise ValueError(
                f"field state.store.trainings: {state.trainings}, but {self.config.index_factory!r} is never trained"
            )
        expect = build_index(
            self.config.dim, self.config.index_factory if state.trained else "Flat", self.config.pq_train_points
        )
        expect = faiss.deserialize_index(faiss.serialize_index(expect))  # the classes FAISS reads back
        if index_signature(index) != index_signature(expect):
            raise ValueError(
                f"the index is {index_signature(index)}, but config index_factory={self.config.index_factory!r} "
                f"with trained={state.trained} builds {index_signature(expect)}"
            )
        ivf = faiss.try_extract_index_ivf(index)
        if ivf is not None and int(ivf.nprobe) != self.config.nprobe:
            raise ValueError(f"the index was saved with nprobe={int(ivf.nprobe)}, config nprobe={self.config.nprobe}")
        if state.fixed_bytes != empty_index_bytes(index):
            raise ValueError(
                f"field state.store.fixed_bytes: {state.fixed_bytes}, the index's parameters take {empty_index_bytes(index)}"
            )
        if self.config.byte_budget is not None and code_bytes_per_vector(index) * len(meta) > self.config.byte_budget:
            raise ValueError(
                f"{len(meta)} records of {code_bytes_per_vector(index)} bytes exceed config byte_budget={self.config.byte_budget}"
            )
        raw_vecs, raw_ids = np.asarray(arrays["raw_vecs"]), np.asarray(arrays["raw_ids"])
        if raw_vecs.shape != self.raw.vecs.shape or raw_ids.shape != self.raw.ids.shape:
            raise ValueError(f"raw buffer shape {raw_vecs.shape} != {self.raw.vecs.shape} (config train_sample)")
        if raw_vecs.dtype != np.float32 or raw_ids.dtype != np.int64 or np.any((raw_ids < -1) | (raw_ids >= next_id)):
            raise ValueError(f"raw buffer ids must be -1 or in [0, next_id={next_id})")
        if state.raw_pos >= max(self.raw.capacity, 1):
            raise ValueError(
                f"field state.store.raw_pos: {state.raw_pos} is not below the raw buffer size {self.raw.capacity}"
            )
        if (raw_rows is None) != (self.raw_file is None):
            raise RawFileMismatch(
                f"raw_vectors={self.config.raw_vectors!r}, but raw rows were {'not ' * (raw_rows is None)}given"
            )
        if raw_rows is not None:
            want = f"({len(meta)}, {self.config.dim}) {self.config.raw_dtype}"
            if (
                raw_rows.ndim != 2
                or raw_rows.shape != (len(meta), self.config.dim)
                or raw_rows.dtype != self.config.raw_dtype
            ):
                raise RawFileMismatch(
                    f"holds {raw_rows.shape} {raw_rows.dtype} raw vectors, but the index has {len(meta)} records "
                    f"and config raw_dtype={self.config.raw_dtype!r} dim={self.config.dim} asks for {want}"
                )
            bad = _codes_disagree(index, meta.ids, raw_rows)
            if bad:
                raise RawFileMismatch(
                    f"{bad} of {min(len(meta), RAW_CHECK_SAMPLE)} sampled records do not encode to the codes the "
                    f"index holds for them: raw vectors of another memory or another save"
                )
        self._configure(index)
        self._index, self.meta = index, meta
        if self.raw_file is not None and raw_rows is not None:
            self.raw_file.load_rows(raw_rows)
        self.trained = state.trained
        self.train_error = state.train_error
        self.evicted = state.evicted
        self.trainings = state.trainings
        self._fixed_bytes = state.fixed_bytes
        self.raw.vecs[:], self.raw.ids[:], self.raw.pos = raw_vecs, raw_ids, state.raw_pos
