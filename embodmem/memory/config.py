"""``MemoryConfig``: every setting of :class:`~embodmem.memory.episodic.AgentMemory`, checked at construction.

The Hydra ``memory`` group is this dataclass (its YAML files hold only what differs). ``dim`` is the
embedder's output size: the app sets it, so the command line leaves it alone.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from embodmem.memory.eviction import EVICTIONS
from embodmem.memory.rawfile import RAW_DTYPES, RAW_MODES

UPDATE_POLICIES: tuple[str, ...] = ("keep_first", "overwrite", "recency", "decay", "consolidate")
"""The stock memory's update policies (embodmem.memory.updates)."""


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
    hits, then fewest merged frames, then oldest), "places" (least used, but each map node's
    most used record last: a view of every place is kept while the budget allows) or "kinds"
    (frames the writer labelled with a target kind last: unlabelled ones go first, then labelled
    ones that are not the most salient of their (kind, map node), then those keepers, from the
    kind with the most keepers first: a view of every kind seen is kept while the budget allows)."""
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
    update_policy: str = "keep_first"
    """How memory updates when the world changes (embodmem.memory.updates): "keep_first" (never),
    "overwrite" (remove an older view a new one from the same place contradicts, online),
    "recency" (rank by similarity x recency), "decay" (a record's weight halves every
    recency_half_life tasks; below decay_floor it is no longer returned) or "consolidate" (the
    overwrite check offline, over the whole store, at the end of every task)."""
    recency_half_life: float = 2.0
    """Tasks after which a record's weight halves ("recency" and "decay")."""
    decay_floor: float = 0.25
    """Weight below which "decay" no longer returns a record (0.25: two half-lives)."""
    contradiction_similarity: float = 0.9
    """Cosine below which a later view from the same place contradicts an older one ("overwrite",
    "consolidate")."""
    update_view_cells: float = 1.0
    """Cells within which two views with the same heading count as the same view."""

    def __post_init__(self) -> None:
        from embodmem.memory.codec import check_byte_budget, index_facts  # FAISS parses the factory
        from embodmem.memory.topomap import NODE_RULES

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
        need(self.update_policy in UPDATE_POLICIES, "update_policy", " or ".join(repr(p) for p in UPDATE_POLICIES))
        need(is_num(self.recency_half_life) and self.recency_half_life > 0, "recency_half_life", "a number > 0")
        need(is_num(self.decay_floor) and 0 < self.decay_floor <= 1, "decay_floor", "a number in (0, 1]")
        need(
            is_num(self.contradiction_similarity) and -1 <= self.contradiction_similarity <= 1,
            "contradiction_similarity",
            "in [-1, 1]",
        )
        need(is_num(self.update_view_cells) and self.update_view_cells >= 0, "update_view_cells", "a number >= 0")
        need(
            self.rerank == 0 or self.raw_vectors == "disk",
            "rerank",
            "0 unless raw_vectors='disk' (exact scores come from the raw vectors on disk)",
        )
        try:
            index_facts(self.dim, self.index_factory)
            check_byte_budget(self.byte_budget, self.dim, self.index_factory, self.train_min)
        except ValueError as e:
            raise ValueError(f"MemoryConfig.{e}") from None

    @property
    def bytes_hint(self) -> int:
        """Bytes of vector code per record once trained (what the byte budget counts)."""
        from embodmem.memory.codec import index_facts

        return index_facts(self.dim, self.index_factory).code_bytes

    def to_dict(self) -> dict[str, int | float | str | bool | None]:
        """Plain dict of the fields (all JSON scalars), as saved in a snapshot's manifest."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MemoryConfig:
        """Build from a mapping (e.g. a Hydra ``DictConfig``), refusing unknown keys by name."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"MemoryConfig has no field(s) {unknown}; known: {sorted(names)}")
        return cls(**{k: d[k] for k in d})
