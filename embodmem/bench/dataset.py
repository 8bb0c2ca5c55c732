"""Read an exported dataset back (:mod:`embodmem.bench.export`), streaming, without loading it whole.

Frames come in Parquet record batches (``iter_batches``), decoded to arrays only when asked; episodes,
objects and the seabeds are small tables read at once. Any Parquet reader (pandas, polars, DuckDB,
Hugging Face ``datasets``) reads the same files; this reader adds the checks and the decoding.

Example:
    >>> ds = OfflineDataset("data/embodmem-dev")  # doctest: +SKIP
    >>> for episode in ds.episodes():  # doctest: +SKIP
    ...     print(episode.images.shape, episode.actions[:5], episode.agent_map.shape)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from embodmem.bench.export import DATASET_FORMAT, DATASET_VERSION, require_pyarrow


class DatasetError(ValueError):
    """A directory that is not a readable dataset (one line)."""


@dataclass(frozen=True)
class Episode:
    """One episode's frames and metadata, decoded."""

    index: int
    meta: dict[str, Any]
    """Its row of ``meta/episodes``: sequence, task, world seed, measures, ..."""
    images: np.ndarray
    """(T, H, W, 3) uint8 RGB."""
    poses: np.ndarray
    """(T, 3) float32: the believed pose [x, y, heading]."""
    sonar: np.ndarray
    """(T, beams) float32: metres per beam."""
    true_poses: np.ndarray
    """(T, 3) int16."""
    actions: np.ndarray
    """(T,) int8."""
    seabed: np.ndarray
    """(size, size) uint8: every cell's kind (embodmem.envs.objects.KINDS), indexed [y, x]."""
    agent_map: np.ndarray | None
    """(size, size) uint8 map codes at the episode's end (info.json ``map_codes``), or None."""


def decode_png(data: bytes) -> np.ndarray:
    import cv2

    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise DatasetError("an image is not a PNG")
    return np.ascontiguousarray(image[..., ::-1])


class OfflineDataset:
    """A dataset directory: ``meta/info.json`` checked on open."""

    def __init__(self, root: str | Path):
        require_pyarrow()
        self.root = Path(root)
        path = self.root / "meta" / "info.json"
        if not path.is_file():
            raise DatasetError(f"{self.root}: no meta/info.json; not an {DATASET_FORMAT} dataset")
        try:
            self.info: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            raise DatasetError(f"{path}: not JSON") from None
        if self.info.get("format") != DATASET_FORMAT or self.info.get("format_version") != DATASET_VERSION:
            raise DatasetError(
                f"{path}: format {self.info.get('format')!r} version {self.info.get('format_version')!r}; "
                f"this reader reads {DATASET_FORMAT} version {DATASET_VERSION}"
            )

    def _table(self, key: str) -> Any:
        import pyarrow.parquet as pq

        return pq.read_table(self.root / self.info[key])

    def episode_table(self) -> Any:
        """``meta/episodes`` as a pyarrow Table."""
        return self._table("episodes_file")

    def object_table(self) -> Any:
        """``meta/objects`` as a pyarrow Table: every object instance's cells per episode."""
        return self._table("objects_file")

    def iter_batches(self, batch_size: int = 1024, columns: list[str] | None = None) -> Iterator[Any]:
        """Frame record batches (pyarrow), file after file."""
        import pyarrow.parquet as pq

        for name in self.info["data_files"]:
            yield from pq.ParquetFile(self.root / name).iter_batches(batch_size=batch_size, columns=columns)

    def episodes(self) -> Iterator[Episode]:
        """Every episode, decoded, in order; frames are streamed, one episode held at a time."""
        metas = self.episode_table().to_pylist()
        pending: dict[str, list[Any]] = {}
        current = 0
        for batch in self.iter_batches():
            columns = batch.to_pydict()
            for i, episode_index in enumerate(columns["episode_index"]):
                if episode_index != current and pending:
                    yield self._episode(metas[current], pending)
                    pending = {}
                current = episode_index
                for key, values in columns.items():
                    pending.setdefault(key, []).append(values[i])
        if pending:
            yield self._episode(metas[current], pending)

    @staticmethod
    def _episode(meta: dict[str, Any], frames: dict[str, list[Any]]) -> Episode:
        size = int(meta["world_size"])
        grid = meta.get("agent_map")
        return Episode(
            index=int(meta["episode_index"]),
            meta={k: v for k, v in meta.items() if k not in ("world_kinds", "agent_map")},
            images=np.stack([decode_png(image["bytes"]) for image in frames["observation.image"]]),
            poses=np.asarray(frames["observation.pose"], np.float32),
            sonar=np.asarray(frames["observation.sonar"], np.float32),
            true_poses=np.asarray(frames["state.true_pose"], np.int16),
            actions=np.asarray(frames["action"], np.int8),
            seabed=np.asarray(meta["world_kinds"], np.uint8).reshape(size, size),
            agent_map=None if grid is None else np.asarray(grid, np.uint8).reshape(size, size),
        )
