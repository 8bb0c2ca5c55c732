"""What a memory snapshot holds, and every check on loading it.

:mod:`embodmem.memory.persistence` is the file format (generations, checksums, the manifest digest);
this module maps a memory's :class:`~embodmem.memory.parts.MemoryParts` onto it: ``index.faiss`` (the long-term store's index), ``arrays.npz``
(metadata columns, the short-term frames) and ``map.json`` (the topological map), with the counters
in the manifest's ``state``; with ``raw_vectors="disk"`` also ``raw.npy`` (every long-term record's
raw vector, streamed rather than held as bytes). Loading trusts nothing: every field is cross-checked
against the index, the arrays, the raw vectors and the map before the parts are rebuilt through their
own restore methods.
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np
from pydantic import Field, JsonValue, ValidationError

from embodmem.memory.config import MemoryConfig
from embodmem.memory.parts import MemoryCounters, MemoryParts
from embodmem.memory.persistence import (
    MAP_FORMAT,
    Manifest,
    MemoryLoadError,
    SnapshotHeader,
    Strict,
    Writer,
    read_files,
    read_manifest,
    validated,
    write_snapshot,
)
from embodmem.memory.rawfile import read_npy_rows
from embodmem.memory.records import NO_NODE, MetaTable
from embodmem.memory.store import RawFileMismatch, StoreState
from embodmem.memory.topomap import TopologicalMap
from embodmem.plugins import describe

FILES = ("index.faiss", "arrays.npz", "map.json")
"""The data files of a memory snapshot (logical names; on disk they carry the generation)."""

RAW_FILE = "raw.npy"
"""The snapshot's raw vectors (``raw_vectors="disk"`` only): one row per long-term record, id order."""


class MemoryState(MemoryCounters):
    """The JSON state of a saved memory (``manifest.json`` field ``state``): the counters, and the
    long-term store's own state."""

    model_config = Strict.model_config

    store: StoreState

    def counters(self) -> MemoryCounters:
        """A live (mutable) copy of the saved counters."""
        return MemoryCounters.model_validate(self.model_dump(exclude={"store"}))


def save_memory(memory: MemoryParts, directory: str | os.PathLike[str]) -> Path:
    """Write ``memory`` atomically into ``directory``; returns the manifest path."""
    index_bytes, arrays, store_js = memory.store.state()
    fifo_meta = MetaTable(memory.store.thumbnail_size)
    fifo_meta.append(fifo_meta.columns_from_metas(np.asarray(memory.fifo.ids, np.int64), memory.fifo.metas))
    arrays.update(fifo_meta.to_arrays("fifo_"))
    arrays["fifo_vecs"] = np.ascontiguousarray(memory.fifo.vectors)
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **arrays)
    state = {"store": store_js.model_dump(mode="json"), **memory.counters.model_dump(mode="json")}
    files: dict[str, bytes | Writer] = {
        "index.faiss": index_bytes,
        "arrays.npz": buf.getvalue(),
        "map.json": memory.map.to_json().encode(),
    }
    if memory.store.raw_file is not None:
        files[RAW_FILE] = memory.store.raw_file.write_npy
    return write_snapshot(directory, files, SnapshotHeader(memory.config.dim, memory.config.to_dict(), state))


@dataclass(frozen=True)
class SavedMemory:
    """A snapshot read and verified (digest, checksums, field types), not yet cross-checked.

    ``streamed`` holds the paths of the files too large to read as bytes (:data:`RAW_FILE`, listed
    exactly when ``config.raw_vectors == "disk"``), checksummed but not read yet.
    """

    directory: Path
    manifest: Manifest
    files: dict[str, bytes]
    config: MemoryConfig
    state: MemoryState
    streamed: dict[str, Path]

    def path(self, logical: str) -> Path:
        """The file on disk of ``logical`` (``"manifest.json"``, a name of :data:`FILES` or :data:`RAW_FILE`)."""
        return self.directory / (self.manifest.files[logical].path if logical in self.manifest.files else logical)


def read_memory(directory: str | os.PathLike[str], expect_dim: int | None = None) -> SavedMemory:
    """Read a snapshot and check its manifest: dim, config and state.

    Raises:
        MemoryLoadError: naming the file (and the manifest field) that is missing, truncated,
            corrupted, foreign or inconsistent.
    """
    directory = Path(directory)
    manifest = read_manifest(directory)
    mpath = directory / "manifest.json"
    streamed = (RAW_FILE,) if RAW_FILE in manifest.files else ()  # checked against the config below
    files, streamed_paths = read_files(directory, manifest, FILES, streamed)
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
            f"{'needs' if config.raw_vectors == 'disk' else 'keeps no'} {RAW_FILE}",
        )
    st = validated(MemoryState, manifest.state, mpath, "state")
    if st.frames_written != st.next_id:
        raise MemoryLoadError(mpath, f"field state.frames_written: {st.frames_written} != state.next_id {st.next_id}")
    return SavedMemory(directory, manifest, files, config, st, streamed_paths)


def restore_memory(saved: SavedMemory) -> MemoryParts:
    """The parts ``saved`` holds, cross-checking every part against the others.

    Raises:
        MemoryLoadError: naming the file and field that disagree with the rest of the snapshot.
    """
    config, st, files, dim = saved.config, saved.state, saved.files, saved.config.dim
    memory = MemoryParts.fresh(config)
    mpath = saved.path("manifest.json")
    path = {k: saved.path(k) for k in (*FILES, RAW_FILE)}
    try:
        index = faiss.deserialize_index(np.frombuffer(files["index.faiss"], dtype=np.uint8))
    except RuntimeError as e:
        raise MemoryLoadError(path["index.faiss"], f"not a FAISS index ({str(e).strip().splitlines()[-1]})") from None
    if index.d != dim or index.metric_type != faiss.METRIC_INNER_PRODUCT:
        raise MemoryLoadError(
            path["index.faiss"],
            f"foreign index: dim {index.d}, metric {index.metric_type}; expected dim {dim}, inner product",
        )
    expected_arrays = set(memory.store.state()[1]) | set(MetaTable(memory.store.thumbnail_size).to_arrays("fifo_"))
    expected_arrays.add("fifo_vecs")
    try:
        arrays = np.load(io.BytesIO(files["arrays.npz"]), allow_pickle=False)
        if set(arrays.files) != expected_arrays:
            raise ValueError(
                f"holds arrays {sorted(arrays.files)}, config (keep_thumbnails={config.keep_thumbnails}) "
                f"expects {sorted(expected_arrays)}"
            )
        fifo_meta = MetaTable.from_arrays(arrays, memory.store.thumbnail_size, "fifo_")
        fifo_vecs = np.asarray(arrays["fifo_vecs"])
    except (ValueError, KeyError, OSError, EOFError) as e:
        raise MemoryLoadError(path["arrays.npz"], f"inconsistent arrays ({e})") from None
    raw_rows = None
    if RAW_FILE in saved.streamed:
        try:
            raw_rows = read_npy_rows(saved.streamed[RAW_FILE])
        except ValueError as e:
            raise MemoryLoadError(path[RAW_FILE], f"field files.{RAW_FILE}: {e}") from None
    try:
        memory.store.load_state(index, arrays, st.store, st.next_id, raw_rows)
    except RawFileMismatch as e:
        raise MemoryLoadError(path[RAW_FILE], f"field files.{RAW_FILE}: {e}") from None
    except (ValueError, KeyError, OSError) as e:
        problem = str(e).strip("'") if str(e).startswith("field ") else f"field state.store: {str(e).strip(chr(39))}"
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
        lt_last = int(memory.store.meta.ids[-1]) if len(memory.store) else -1
        if fifo_ids[0] <= lt_last or fifo_ids[-1] != st.next_id - 1:
            raise MemoryLoadError(
                mpath, f"field state.next_id: {st.next_id} does not follow the short-term ids {fifo_ids.tolist()}"
            )
    fifo_metas = fifo_meta.metas(np.arange(len(fifo_meta)))
    latest = (fifo_metas[-1].run_id, fifo_metas[-1].task, fifo_metas[-1].episode) if fifo_metas else None
    if latest is not None and st.segment != latest:
        raise MemoryLoadError(mpath, f"field state.segment: {st.segment!r}, but the latest frame is of {latest!r}")
    try:
        topomap = TopologicalMap.from_json(files["map.json"].decode("utf-8"))
    except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as e:
        raise MemoryLoadError(path["map.json"], f"not a topological map ({e})") from None
    if topomap.dim != dim:
        raise MemoryLoadError(path["map.json"], f"foreign map: dim {topomap.dim}, expected {dim}")
    for name, saved_value, value in (
        ("node_distance", config.node_distance, topomap.node_distance),
        ("node_similarity", config.node_similarity, topomap.node_similarity),
        ("node_rule", config.node_rule, topomap.node_rule),
    ):
        if saved_value != value:
            raise MemoryLoadError(mpath, f"field config.{name}: {saved_value!r}, the saved map has {value!r}")
    nodes = np.concatenate([memory.store.meta.col("node"), fifo_meta.col("node")])
    if np.any((nodes < NO_NODE) | (nodes >= len(topomap))):
        raise MemoryLoadError(path["arrays.npz"], f"records point at map nodes outside 0..{len(topomap) - 1}")
    memory.map = topomap
    memory.fifo.restore(fifo_vecs, fifo_metas, [int(i) for i in fifo_ids])
    memory.counters = st.counters()
    return memory
    memory.restore_counters(
        frames_written=st.frames_written,
        next_id=st.next_id,
        consolidations=st.consolidations,
        sleeps=st.sleeps,
        queries=st.queries,
        segment=st.segment,
    )


# -- an agent's map snapshot: occupancy grid and rejected places, pinned to its memory ------------

GRID_FILE = "grid.npz"
REJECTED_FILE = "rejected_places.json"
HEADINGS = 4


class MapState(Strict):
    """The JSON state of a map snapshot (its manifest's ``state``)."""

    companion_digest: str | None = Field(pattern=r"^[0-9a-f]{64}$")
    """Digest of the state saved beside the map (the memory manifest's digest, or the sha256 of a
    text log): a map of one snapshot beside the memory of another is refused."""
    grid_shape: tuple[int, int] | None
    """(rows, columns) of the occupancy grid; ``None`` when none was built (no grid.npz)."""
    memory_class: str | None = None
    """``module:Class`` of the memory saved beside the map (``None``: none, or a snapshot written
    before the class was recorded, which only the stock memory could write)."""
    memory_version: str | None = None
    """The ``version`` the memory class declared when it was saved (``None``: none declared)."""


@dataclass(frozen=True)
class MemoryDesign:
    """Which memory class wrote a snapshot, and its declared version: loading it into another is refused.

    Example:
        >>> from embodmem.memory import AgentMemory
        >>> MemoryDesign.of(AgentMemory()).memory_class
        'embodmem.memory.episodic:AgentMemory'
        >>> MemoryDesign("a:B", "2").refusal(MemoryDesign("a:B", "3"))
        "memory of class a:B version '2' was saved, but this run's memory is a:B version '3'"
    """

    memory_class: str
    version: str | None = None

    @classmethod
    def of(cls, memory: object) -> MemoryDesign:
        """The design of a built memory (its class's import path and ``version`` attribute)."""
        version = getattr(type(memory), "version", None)
        return cls(describe(memory), None if version is None else str(version))

    def __str__(self) -> str:
        return self.memory_class + ("" if self.version is None else f" version {self.version!r}")

    def refusal(self, run: MemoryDesign) -> str | None:
        """One phrase naming both designs when this saved one cannot be loaded by ``run``'s, else None."""
        if self == run:
            return None
        return f"memory of class {self} was saved, but this run's memory is {run}"


STOCK_DESIGN = MemoryDesign("embodmem.memory.episodic:AgentMemory")
"""The design of a snapshot that recorded none (written before designs were recorded)."""


def read_memory_design(directory: str | os.PathLike[str]) -> MemoryDesign | None:
    """The design a map snapshot records of the memory saved beside it (the stock one for a snapshot
    that records none but has a memory folder; ``None`` for a text log's)."""
    directory = Path(directory)
    manifest = read_manifest(directory, MAP_FORMAT)
    st = validated(MapState, manifest.state, directory / "manifest.json", "state")
    if st.memory_class is not None:
        return MemoryDesign(st.memory_class, st.memory_version)
    return STOCK_DESIGN if (directory / "memory").exists() else None


class RejectedPlaces(Strict):
    """``rejected_places.json``: per mission, the cells and the views the agent found wrong."""

    places: dict[str, list[tuple[int, int]]]
    views: dict[str, list[tuple[int, int, int]]]


def save_map_snapshot(
    directory: str | os.PathLike[str],
    grid: dict[str, np.ndarray] | None,
    rejected: RejectedPlaces,
    companion_digest: str | None,
    design: MemoryDesign | None = None,
) -> Path:
    """Write the grid arrays (``None``: no grid yet) and the rejected places as a checked snapshot
    (format :data:`~embodmem.memory.persistence.MAP_FORMAT`) into ``directory``, with the ``design``
    of the memory saved beside it; returns the manifest."""
    files: dict[str, bytes | Writer] = {REJECTED_FILE: rejected.model_dump_json().encode()}
    shape = None
    if grid is not None:
        buf = io.BytesIO()
        np.savez(buf, allow_pickle=False, **grid)
        files[GRID_FILE] = buf.getvalue()
        shape = list(next(iter(grid.values())).shape)
    state: dict[str, JsonValue] = {"companion_digest": companion_digest, "grid_shape": shape}
    if design is not None:
        state |= {"memory_class": design.memory_class, "memory_version": design.version}
    return write_snapshot(directory, files, SnapshotHeader(1, {}, state), fmt=MAP_FORMAT)


def read_map_snapshot(
    directory: str | os.PathLike[str],
    grid_dtypes: dict[str, np.dtype],
    companion_digest: str | None,
    later_dtypes: dict[str, np.dtype] | None = None,
) -> tuple[dict[str, np.ndarray] | None, RejectedPlaces]:
    """Read a map snapshot, trusting nothing: the manifest, checksums, the pin to its companion
    state, the grid's arrays (exactly ``grid_dtypes``' names and dtypes, plus either all or none of
    ``later_dtypes``', arrays that snapshots of older code lack; one 2-D shape, the shape the
    manifest states) and every rejected cell (integers inside that grid, headings 0-3).

    Raises:
        MemoryLoadError: one line naming the file and what is wrong.
    """
    directory = Path(directory)
    mpath = directory / "manifest.json"
    manifest = read_manifest(directory, MAP_FORMAT)
    st = validated(MapState, manifest.state, mpath, "state")
    required = (REJECTED_FILE,) if st.grid_shape is None else (GRID_FILE, REJECTED_FILE)
    files, _ = read_files(directory, manifest, required)
    if st.companion_digest != companion_digest:
        raise MemoryLoadError(
            mpath,
            f"field state.companion_digest: {st.companion_digest} is not the state saved beside it "
            f"({companion_digest}); the map belongs to another snapshot",
        )
    grid = None
    if st.grid_shape is not None:
        grid = _grid_arrays(
            files[GRID_FILE], grid_dtypes, later_dtypes or {}, st.grid_shape, directory / manifest.files[GRID_FILE].path
        )
    rpath = directory / manifest.files[REJECTED_FILE].path
    try:
        rejected = RejectedPlaces.model_validate_json(files[REJECTED_FILE])
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        loc = ".".join(str(p) for p in err["loc"])
        where = f"field {loc}: " if loc else ""
        raise MemoryLoadError(rpath, f"not a list of rejected places ({where}{err['msg']})") from None
    rows, cols = st.grid_shape or (0, 0)
    for mission, cells in rejected.places.items():
        for x, y in cells:
            if not (0 <= x < cols and 0 <= y < rows):
                raise MemoryLoadError(rpath, f"places[{mission!r}]: cell ({x}, {y}) is outside the {rows}x{cols} grid")
    for mission, poses in rejected.views.items():
        for x, y, h in poses:
            if not (0 <= x < cols and 0 <= y < rows and 0 <= h < HEADINGS):
                raise MemoryLoadError(
                    rpath, f"views[{mission!r}]: pose ({x}, {y}, {h}) is outside the {rows}x{cols} grid"
                )
    return grid, rejected


def _grid_arrays(
    data: bytes, dtypes: dict[str, np.dtype], later: dict[str, np.dtype], shape: tuple[int, int], path: Path
) -> dict[str, np.ndarray]:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            if sorted(npz.files) == sorted({**dtypes, **later}):
                dtypes = {**dtypes, **later}
            elif sorted(npz.files) != sorted(dtypes):
                raise ValueError(f"holds arrays {sorted(npz.files)}, expected {sorted({**dtypes, **later})}")
            arrays = {name: np.asarray(npz[name]) for name in dtypes}
    except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise MemoryLoadError(path, f"not an occupancy grid ({' '.join(str(e).split())[:200]})") from None
    for name, array in arrays.items():
        if array.dtype != dtypes[name] or array.shape != tuple(shape):
            raise MemoryLoadError(
                path, f"array {name}: {array.shape} {array.dtype}, expected {tuple(shape)} {np.dtype(dtypes[name])}"
            )
        if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
            raise MemoryLoadError(path, f"array {name}: holds NaN or infinity")
    return arrays


def companion_digest_of_memory(directory: str | os.PathLike[str]) -> str:
    """The digest of the memory snapshot in ``directory`` (what a map saved beside it is pinned to):
    the stock memory's manifest digest, or for a memory that writes no manifest (a plug-in's) the
    sha256 over its files' names and bytes."""
    directory = Path(directory)
    if (directory / "manifest.json").is_file() or not directory.is_dir():
        return read_manifest(directory).digest
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        digest.update(path.relative_to(directory).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
