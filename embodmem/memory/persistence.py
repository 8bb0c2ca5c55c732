"""Crash-safe, self-verifying snapshots of a memory directory.

A snapshot is a set of data files plus ``manifest.json`` (format, version, generation, dim, config,
state, each file's size and sha256, and ``digest``: the sha256 of the manifest's own canonical JSON
without that key). Data files are written under new names carrying a generation number, each
atomically; the manifest is replaced last, atomically; only then are the previous generation's files
deleted. A crash at any point therefore leaves a manifest that points at complete, matching files:
the old snapshot or the new one, never a mix or a partial file. Temporary files left by a crash are
removed by the next save or load.

One directory takes one writer: a save holds ``.lock`` (an exclusive ``flock``) and a second process
saving into the same directory meanwhile is refused with a :class:`MemoryLockError` (one line), since
each would delete the other's temporary and previous-generation files. A load removes stale
temporary files only when it can take that lock (no save is under way). Data files and the
manifest must be regular files: a symbolic link (a file of another snapshot) is refused.

Reading checks the digest, then every manifest field's type and range (:func:`validated`); the
memory then cross-checks the state against the arrays and the index. Any disagreement is a
:class:`MemoryLoadError` naming the file and the field.

Large files (the raw vectors of ``raw_vectors="disk"``, hundreds of MB) are streamed: written
through a callable and hashed as they go, verified by hashing in chunks, and handed to the caller
as a path rather than as bytes.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from embodmem.atomic import atomic_write_bytes, atomic_write_with

FORMAT = "embodmem.memory"
MAP_FORMAT = "embodmem.map"
"""The format of an agent's map snapshot (occupancy grid and rejected places, beside its memory)."""
VERSION = 4
"""4: frames embedded by the CLIP that tells instance variants apart; 3 and older are refused."""
PRE_VARIANT_VERSIONS = (3,)
"""Versions saved before instance variants: their vectors come from the embedder that cannot tell a
capsized ship from an upright one, and a query with today's embedder would compare across models."""
MANIFEST = "manifest.json"
LOCK = ".lock"
"""The writer's lock file of a snapshot directory."""
_DATA_RE = re.compile(r"^(?P<stem>[a-z_]+)\.(?P<gen>\d{6})\.(?P<ext>[a-z0-9]+)$")
_TMP_RE = re.compile(r"^\.(manifest\.json|[a-z_]+\.\d{6}\.[a-z0-9]+)\..+\.tmp$")
"""Temporary files of :func:`embodmem.atomic.atomic_write_with` for the manifest or a data file."""

M = TypeVar("M", bound=BaseModel)

Writer = Callable[[BinaryIO], None]
"""Streams a data file's content into a binary file handle (for files too large to hold as bytes)."""

_HASH_CHUNK = 1 << 20


class MemoryLoadError(ValueError):
    """A saved memory cannot be loaded; ``path`` is the offending file."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = Path(path)
        super().__init__(f"{self.path}: {problem}")


class MemoryLockError(RuntimeError):
    """Another process is saving into the same snapshot directory; ``path`` is the directory."""

    def __init__(self, path: str | os.PathLike[str], holder: str) -> None:
        self.path = Path(path)
        super().__init__(
            f"{self.path}: another process{holder} is saving a snapshot into this directory; one directory "
            "takes one writer (give each run its own experiment.save_memory directory)"
        )


_HELD: dict[Path, tuple[int, int]] = {}
"""Lock files this process holds: directory -> (file descriptor, depth), so nested saves re-enter."""


@contextlib.contextmanager
def writer_lock(directory: str | os.PathLike[str]) -> Iterator[None]:
    """Hold ``directory``'s writer lock (re-entrant within this process).

    Raises:
        MemoryLockError: another process holds it.
    """
    key = Path(directory).resolve()
    if key in _HELD:
        fd, depth = _HELD[key]
        _HELD[key] = (fd, depth + 1)
        try:
            yield
        finally:
            _HELD[key] = (fd, _HELD[key][1] - 1)
        return
    key.mkdir(parents=True, exist_ok=True)
    fd = os.open(key / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        os.close(fd)
        raise MemoryLockError(key, f" (pid {holder})" if holder.isdigit() else "") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    _HELD[key] = (fd, 1)
    try:
        yield
    finally:
        del _HELD[key]
        os.close(fd)  # releases the flock


def _try_lock(directory: Path) -> contextlib.AbstractContextManager[bool]:
    """``writer_lock`` when it can be had at once (yields True), else a no-op (yields False)."""

    @contextlib.contextmanager
    def attempt() -> Iterator[bool]:
        try:
            lock = writer_lock(directory)
            lock.__enter__()
        except (MemoryLockError, OSError):  # a writer is at work, or the directory is read-only
            yield False
            return
        try:
            yield True
        finally:
            lock.__exit__(None, None, None)

    return attempt()


class Strict(BaseModel):
    """Base of the saved-state schemas: exact JSON types, no unknown keys, no NaN or infinity."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)


class FileEntry(Strict):
    path: str = Field(pattern=_DATA_RE.pattern)
    bytes: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class Manifest(Strict):
    format: Literal["embodmem.memory", "embodmem.map"]
    version: Literal[4]
    generation: int = Field(ge=1, le=999_999)
    dim: int = Field(ge=1)
    config: dict[str, JsonValue]
    """The memory's settings (:meth:`MemoryConfig.to_dict`; validated by ``MemoryConfig.from_dict``)."""
    state: dict[str, JsonValue]
    """The format's own state, validated by its own model (``MemoryState``, ``MapState``)."""
    files: dict[str, FileEntry]
    digest: str = Field(pattern=r"^[0-9a-f]{64}$")


def validated(model: type[M], data: object, path: str | os.PathLike[str], field: str) -> M:
    """``model`` validated from JSON-like ``data`` (JSON semantics: arrays may fill tuples), or a
    :class:`MemoryLoadError` naming ``path`` and the field.

    Example:
        >>> validated(FileEntry, {"path": "a.000001.npz", "bytes": -1, "sha256": "0" * 64}, "m.json", "files.a")
        Traceback (most recent call last):
        ...
        embodmem.memory.persistence.MemoryLoadError: m.json: field files.a.bytes: Input should be greater than or equal to 0 (got -1)
    """
    try:
        return model.model_validate_json(json.dumps(data, allow_nan=False))
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        loc = ".".join(str(p) for p in (field, *err["loc"]) if p != "")
        got = f" (got {err['input']!r})" if err["type"] != "missing" and len(repr(err["input"])) < 80 else ""
        raise MemoryLoadError(path, f"field {loc}: {err['msg']}{got}") from None


def manifest_digest(manifest: Mapping[str, JsonValue]) -> str:
    """sha256 of the canonical JSON of ``manifest`` without its ``digest`` key."""
    body = {k: v for k, v in manifest.items() if k != "digest"}
    return _sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode())


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # not supported on this platform/filesystem
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_stale_temp_files(directory: str | os.PathLike[str]) -> list[Path]:
    """Delete temporary files an interrupted save left in ``directory``; returns them.

    Saving and loading one memory directory from two processes at once is not supported.
    """
    removed = []
    for p in Path(directory).iterdir():
        if _TMP_RE.match(p.name):
            p.unlink(missing_ok=True)
            removed.append(p)
    return removed


def _current_generation(directory: Path) -> int:
    gen = 0
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        gen = int(json.loads((directory / MANIFEST).read_text())["generation"])
    for p in directory.iterdir():
        m = _DATA_RE.match(p.name)
        if m:
            gen = max(gen, int(m["gen"]))
    return gen if 0 <= gen < 999_999 else 0


class _HashingWriter:
    """A write-only file wrapper that counts and hashes what passes through it."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self.sha = hashlib.sha256()
        self.bytes = 0

    def write(self, data: bytes | bytearray | memoryview) -> int:
        self.sha.update(data)
        self.bytes += len(data)
        return self.fh.write(data)


def _write_streamed(path: Path, write: Writer) -> tuple[int, str]:
    """Atomically write ``path`` through ``write``; returns its size and sha256."""
    seen: list[_HashingWriter] = []

    def run(fh: BinaryIO) -> None:
        w = _HashingWriter(fh)
        seen.append(w)
        write(w)  # type: ignore[arg-type]  # duck-typed: numpy and our writers only call write()

    atomic_write_with(path, run)
    return seen[0].bytes, seen[0].sha.hexdigest()


@dataclass(frozen=True)
class SnapshotHeader:
    """What a format puts in its manifest beside the files: checked on reading by :class:`Manifest`
    (``dim``) and by the format's own models (``config``, ``state``)."""

    dim: int
    config: Mapping[str, JsonValue]
    state: Mapping[str, JsonValue]

    def to_json(self) -> dict[str, JsonValue]:
        """The manifest's ``dim``, ``config`` and ``state`` fields, in that order."""
        return {"dim": self.dim, "config": dict(self.config), "state": dict(self.state)}


def write_snapshot(
    directory: str | os.PathLike[str],
    files: dict[str, bytes | Writer],
    header: SnapshotHeader,
    fmt: str = FORMAT,
) -> Path:
    """Write ``files`` (logical name like ``"index.faiss"`` -> bytes, or a :data:`Writer` that streams
    them) and a manifest of format ``fmt`` carrying ``header`` into ``directory``, holding its
    :func:`writer_lock`.

    Returns:
        The manifest path.
    Raises:
        MemoryLockError: another process is saving into ``directory``.
    """
    directory = Path(directory)
    with writer_lock(directory):
        try:
            return _write_snapshot(directory, files, header, fmt)
        except OSError as err:  # a full disk says no path: name the directory in the one-line error
            if err.filename is None and err.errno is not None:  # an OSError without errno prints its text alone
                err.filename = str(directory)
            raise


def _write_snapshot(directory: Path, files: dict[str, bytes | Writer], header: SnapshotHeader, fmt: str) -> Path:
    remove_stale_temp_files(directory)
    gen = _current_generation(directory) + 1
    entries: dict[str, FileEntry] = {}
    for logical, data in files.items():
        stem, ext = logical.split(".", 1)
        name = f"{stem}.{gen:06d}.{ext}"
        if isinstance(data, bytes):
            atomic_write_bytes(directory / name, data)
            entries[logical] = FileEntry(path=name, bytes=len(data), sha256=_sha256(data))
        else:
            size, digest = _write_streamed(directory / name, data)
            entries[logical] = FileEntry(path=name, bytes=size, sha256=digest)
    _fsync_dir(directory)
    manifest: dict[str, JsonValue] = {
        "format": fmt,
        "version": VERSION,
        "generation": gen,
        **header.to_json(),
        "files": {logical: e.model_dump() for logical, e in entries.items()},
    }
    manifest["digest"] = manifest_digest(manifest)
    atomic_write_bytes(directory / MANIFEST, (json.dumps(manifest, indent=2, allow_nan=False) + "\n").encode())
    _fsync_dir(directory)
    keep = {e.path for e in entries.values()}
    for p in directory.iterdir():  # the previous generations
        m = _DATA_RE.match(p.name)
        if m and p.name not in keep:
            p.unlink(missing_ok=True)
    return directory / MANIFEST


def read_manifest(directory: str | os.PathLike[str], fmt: str = FORMAT) -> Manifest:
    """Read and verify a snapshot's manifest of format ``fmt``: its digest, then every field (not the
    data files).

    Raises:
        MemoryLoadError: naming ``manifest.json`` and the field that is wrong.
    """
    directory = Path(directory)
    mpath = directory / MANIFEST
    if mpath.is_symlink():
        raise MemoryLoadError(mpath, "is a symbolic link; a snapshot holds only its own regular files")
    if not mpath.is_file():
        raise MemoryLoadError(mpath, "missing: no saved memory here")
    with _try_lock(directory) as locked:
        if locked:
            remove_stale_temp_files(directory)
    try:
        raw = json.loads(mpath.read_text(encoding="utf-8"), parse_constant=_refuse_constant)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise MemoryLoadError(mpath, f"unreadable or truncated manifest ({e})") from None
    if not isinstance(raw, dict) or raw.get("format") != fmt:
        found = raw.get("format") if isinstance(raw, dict) else type(raw).__name__
        raise MemoryLoadError(mpath, f"foreign file: field format is {found!r}, expected {fmt!r}")
    if raw.get("version") in PRE_VARIANT_VERSIONS:
        raise MemoryLoadError(
            mpath,
            f"field version: format {raw.get('version')} was saved before instance variants (its frames were "
            f"embedded by the previous CLIP, which cannot tell variants apart); this code reads {VERSION}: rebuild the memory",
        )
    if raw.get("version") != VERSION:
        raise MemoryLoadError(
            mpath, f"field version: unsupported format version {raw.get('version')!r} (this code reads {VERSION})"
        )
    if raw.get("digest") != manifest_digest(raw):
        raise MemoryLoadError(
            mpath, "field digest: the manifest does not match its digest (edited or corrupted after saving)"
        )
    return validated(Manifest, raw, mpath, "")


def read_files(
    directory: str | os.PathLike[str], manifest: Manifest, required: tuple[str, ...], streamed: tuple[str, ...] = ()
) -> tuple[dict[str, bytes], dict[str, Path]]:
    """Verify the data files of a snapshot whose manifest :func:`read_manifest` returned: exactly
    ``required + streamed`` must be listed, each of this generation, of the listed size and sha256.

    Returns:
        ``required`` files' bytes, and ``streamed`` files' paths (hashed in chunks, not held).

    Raises:
        MemoryLoadError: naming the file that is missing, truncated, corrupted or foreign, and the
            manifest field that is wrong.
    """
    directory = Path(directory)
    mpath = directory / MANIFEST
    listed = sorted(required + streamed)
    if sorted(manifest.files) != listed:
        raise MemoryLoadError(mpath, f"field files: lists {sorted(manifest.files)}, expected {listed}")
    out: dict[str, bytes] = {}
    paths: dict[str, Path] = {}
    for logical in required + streamed:
        entry = manifest.files[logical]
        stem, ext = logical.split(".", 1)
        if entry.path != f"{stem}.{manifest.generation:06d}.{ext}":
            raise MemoryLoadError(
                mpath,
                f"field files.{logical}.path: {entry.path!r} is not the generation-{manifest.generation} {logical}",
            )
        path = directory / entry.path
        if path.is_symlink():
            raise MemoryLoadError(path, "is a symbolic link; a snapshot holds only its own regular files")
        if not path.is_file():
            raise MemoryLoadError(path, "missing")
        if logical in streamed:
            size, digest = _hash_file(path)
        else:
            data = path.read_bytes()
            size, digest = len(data), _sha256(data)
            out[logical] = data
        if size != entry.bytes:
            raise MemoryLoadError(path, f"truncated or padded: {size} bytes, manifest says {entry.bytes}")
        if digest != entry.sha256:
            raise MemoryLoadError(path, "checksum mismatch: the file is corrupted or not the one saved")
        paths[logical] = path
    return out, {k: paths[k] for k in streamed}


def _hash_file(path: Path) -> tuple[int, str]:
    """Size and sha256 of a file, read in chunks."""
    sha = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        while chunk := fh.read(_HASH_CHUNK):
            sha.update(chunk)
            size += len(chunk)
    return size, sha.hexdigest()


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")
