"""A place-keyed, recency-weighted memory: one record per (cell, heading), the newest view wins.

The stock frame memory keeps a time-ordered stream (a short-term buffer merged into a FAISS store).
This design keys memory by *where* a frame was taken: seeing the same place again from the same
heading overwrites the old view, so memory grows with the places visited, not with the steps taken.
Vectors are kept as float16 (half the bytes), and a query ranks records by cosine similarity weighted
by recency (a view ``HALF_LIFE_STEPS`` writes old counts half), so a changed world is believed
sooner. It implements exactly :class:`embodmem.api.Memory`.

Example:
    >>> import numpy as np
    >>> from embodmem.api import FrameMeta, MemoryConfig
    >>> memory = RecencyMemory(MemoryConfig(dim=4))
    >>> for step in range(3):  # the same place, three times: one record
    ...     _ = memory.observe(np.eye(4, dtype=np.float32)[step], FrameMeta("run", "wreck", 0, step, 2.0, 3.0))
    >>> memory.stats()["frames_kept"], memory.query(np.eye(4, dtype=np.float32)[2], k=1)[0].meta.step
    (1, 2)
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from embodmem.api import ANY_RECORD, FrameMeta, Hit, MemoryConfig, QueryFilter

HALF_LIFE_STEPS = 2000.0
"""Writes after which a record's score counts half."""


class Places:
    """``map.positions``: one place per grid cell visited (what ``observe`` returns)."""

    def __init__(self) -> None:
        self.positions: list[tuple[float, float]] = []
        self._node: dict[tuple[int, int], int] = {}

    def node(self, x: float, y: float) -> int:
        cell = (int(round(x)), int(round(y)))
        if cell not in self._node:
            self._node[cell] = len(self.positions)
            self.positions.append((float(cell[0]), float(cell[1])))
        return self._node[cell]


class RecencyMemory:
    """One float16 vector per (cell, heading), ranked by cosine x recency."""

    version = "1"
    """Saved with every snapshot: a snapshot of another version is refused on loading."""

    def __init__(self, config: MemoryConfig) -> None:
        self.config = config
        self.reset()

    def reset(self) -> None:
        self.map = Places()
        self._key_row: dict[tuple[int, int, int], int] = {}
        self._vectors = np.zeros((0, self.config.dim), np.float16)
        self._metas: list[FrameMeta] = []
        self._ids: list[int] = []
        self._written: list[int] = []
        self._clock = 0
        self._frames_written = 0

    def observe(self, embedding: np.ndarray, meta: FrameMeta) -> int:
        vector = np.asarray(embedding, np.float32).reshape(-1)
        if vector.shape[0] != self.config.dim:
            raise ValueError(f"embedding has {vector.shape[0]} values, memory dim is {self.config.dim}")
        vector = vector / max(float(np.linalg.norm(vector)), 1e-12)
        record = copy.copy(meta)
        record.node = self.map.node(meta.x, meta.y)
        record.thumbnail = meta.thumbnail if self.config.keep_thumbnails else None
        key = (int(round(meta.x)), int(round(meta.y)), int(meta.heading))
        row = self._key_row.get(key)
        if row is None:
            row = self._key_row[key] = len(self._metas)
            self._vectors = np.vstack([self._vectors, np.zeros((1, self.config.dim), np.float16)])
            self._metas.append(record)
            self._ids.append(self._frames_written)
            self._written.append(self._clock)
        self._vectors[row] = vector.astype(np.float16)
        self._metas[row] = record
        self._ids[row] = self._frames_written  # a new view of the place: a new record id
        self._written[row] = self._clock
        self._clock += 1
        self._frames_written += 1
        return record.node

    def flush(self) -> int:
        return 0  # nothing pending: every write is final

    def sleep(self) -> dict[str, int]:
        return {}  # no offline consolidation

    def query(
        self, vec_or_vecs: np.ndarray, k: int = 5, where: QueryFilter = ANY_RECORD, *, count_hits: bool = True
    ) -> list[Hit] | list[list[Hit]]:
        queries = np.atleast_2d(np.asarray(vec_or_vecs, np.float32))
        rows = np.array([i for i, m in enumerate(self._metas) if where.matches(m)], dtype=np.int64)
        results: list[list[Hit]] = []
        for q in queries:
            q = q / max(float(np.linalg.norm(q)), 1e-12)
            if len(rows) == 0:
                results.append([])
                continue
            age = self._clock - np.asarray(self._written, np.float64)[rows]
            scores = (self._vectors[rows].astype(np.float32) @ q) * 0.5 ** (age / HALF_LIFE_STEPS)
            best = rows[np.argsort(-scores, kind="stable")[:k]]
            hits = [Hit(float(s), self._ids[r], self._metas[r]) for r, s in zip(best, np.sort(-scores)[:k] * -1)]
            if count_hits:
                for r in best:
                    self._metas[r].hits += 1
            results.append(hits)
        return results[0] if np.asarray(vec_or_vecs).ndim == 1 else results

    def hit_vectors(self, hits: Sequence[Hit]) -> np.ndarray:
        row_of = {record_id: row for row, record_id in enumerate(self._ids)}
        rows = [row_of[h.id] for h in hits]
        return self._vectors[rows].astype(np.float32).reshape(len(rows), self.config.dim)

    def stats(self) -> dict[str, int]:
        return {
            "frames_written": self._frames_written,
            "frames_kept": len(self._metas),
            "code_bytes": int(self._vectors.nbytes),
            "nodes": len(self.map.positions),
        }

    # ------------------------------------------------------------------ persistence (no thumbnails)
    def save(self, directory: str | os.PathLike[str]) -> Path:
        """``vectors.npy`` and ``records.json``, written into a fresh folder that replaces ``directory``."""
        directory = Path(directory)
        directory.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".saving-", dir=directory.parent))
        np.save(staging / "vectors.npy", self._vectors)
        metas = [dataclasses.asdict(dataclasses.replace(m, thumbnail=None)) for m in self._metas]
        state = {"dim": self.config.dim, "ids": self._ids, "written": self._written, "clock": self._clock,
                 "frames_written": self._frames_written, "metas": metas}  # fmt: skip
        (staging / "records.json").write_text(json.dumps(state))
        if directory.exists():
            old = Path(tempfile.mkdtemp(prefix=".old-", dir=directory.parent))
            os.replace(directory, old / "memory")
            os.replace(staging, directory)
            for path in (old / "memory").iterdir():
                path.unlink()
            (old / "memory").rmdir()
            old.rmdir()
        else:
            os.replace(staging, directory)
        return directory

    @classmethod
    def load(cls, directory: str | os.PathLike[str], expect_dim: int | None = None) -> RecencyMemory:
        directory = Path(directory)
        state = json.loads((directory / "records.json").read_text())
        if expect_dim is not None and state["dim"] != expect_dim:
            raise ValueError(f"{directory}: memory of dim {state['dim']}, expected {expect_dim}")
        memory = cls(MemoryConfig(dim=int(state["dim"])))
        memory._vectors = np.load(directory / "vectors.npy", allow_pickle=False)
        memory._metas = [FrameMeta(**m) for m in state["metas"]]
        memory._ids, memory._written = list(state["ids"]), list(state["written"])
        memory._clock, memory._frames_written = int(state["clock"]), int(state["frames_written"])
        for row, m in enumerate(memory._metas):
            memory._key_row[(int(round(m.x)), int(round(m.y)), int(m.heading))] = row
            m.node = memory.map.node(m.x, m.y)
        return memory
