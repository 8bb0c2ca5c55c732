"""Crash-safe snapshots of a memory directory.

A snapshot is a set of data files plus ``manifest.json`` (format, version, dim, config, state and
each file's size and sha256). Data files are written under new names carrying a generation number,
each atomically; the manifest is replaced last, atomically; only then are the previous generation's
files deleted. A crash at any point therefore leaves a manifest that points at complete, matching
files: the old snapshot or the new one, never a mix or a partial file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from embodmem.atomic import atomic_write_bytes

FORMAT = "embodmem.memory"
VERSION = 1
MANIFEST = "manifest.json"
_DATA_RE = re.compile(r"^(?P<stem>[a-z_]+)\.(?P<gen>\d{6})\.(?P<ext>[a-z0-9]+)$")


class MemoryLoadError(ValueError):
    """A saved memory cannot be loaded; ``path`` is the offending file."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = Path(path)
        super().__init__(f"{self.path}: {problem}")


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


def _current_generation(directory: Path) -> int:
    gen = 0
    try:
        gen = int(json.loads((directory / MANIFEST).read_text())["generation"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    for p in directory.iterdir():
        m = _DATA_RE.match(p.name)
        if m:
            gen = max(gen, int(m["gen"]))
    return gen


def write_snapshot(
    directory: str | os.PathLike[str], files: dict[str, bytes], header: dict[str, Any]
) -> Path:
    """Write ``files`` (logical name like ``"index.faiss"`` -> bytes) and a manifest carrying
    ``header`` (must hold ``dim``, ``config`` and ``state``) into ``directory``.

    Returns:
        The manifest path.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    gen = _current_generation(directory) + 1
    entries: dict[str, dict[str, Any]] = {}
    for logical, data in files.items():
        stem, ext = logical.split(".", 1)
        name = f"{stem}.{gen:06d}.{ext}"
        atomic_write_bytes(directory / name, data)
        entries[logical] = {"path": name, "bytes": len(data), "sha256": _sha256(data)}
    _fsync_dir(directory)
    manifest = {"format": FORMAT, "version": VERSION, "generation": gen, **header, "files": entries}
    atomic_write_bytes(directory / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
    _fsync_dir(directory)
    keep = {e["path"] for e in entries.values()}
    for p in directory.iterdir():  # the previous generations and leftovers of crashed saves
        m = _DATA_RE.match(p.name)
        stale_tmp = (
            p.name.startswith(".")
            and p.name.endswith(".tmp")
            and _DATA_RE.match(p.name[1:].rsplit(".", 2)[0])
        )
        if (m and p.name not in keep) or stale_tmp:
            p.unlink(missing_ok=True)
    return directory / MANIFEST


def read_snapshot(
    directory: str | os.PathLike[str], required: tuple[str, ...]
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Read and verify a snapshot: the manifest, then each of ``required`` logical files.

    Raises:
        MemoryLoadError: naming the file that is missing, truncated, corrupted or foreign.
    """
    directory = Path(directory)
    mpath = directory / MANIFEST
    if not mpath.is_file():
        raise MemoryLoadError(mpath, "missing: no saved memory here")
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise MemoryLoadError(mpath, f"unreadable or truncated manifest ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        fmt = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise MemoryLoadError(mpath, f"foreign file: format {fmt!r}, expected {FORMAT!r}")
    if manifest.get("version") != VERSION:
        raise MemoryLoadError(
            mpath,
            f"unsupported format version {manifest.get('version')!r} (this code reads version {VERSION})",
        )
    for key in ("dim", "config", "state", "files"):
        if key not in manifest:
            raise MemoryLoadError(mpath, f"manifest lacks {key!r}")
    out: dict[str, bytes] = {}
    for logical in required:
        entry = manifest["files"].get(logical)
        if not isinstance(entry, dict):
            raise MemoryLoadError(mpath, f"manifest lists no {logical!r} file")
        path = directory / str(entry["path"])
        if Path(entry["path"]).name != entry["path"]:
            raise MemoryLoadError(mpath, f"file path {entry['path']!r} escapes the directory")
        if not path.is_file():
            raise MemoryLoadError(path, "missing")
        data = path.read_bytes()
        if len(data) != entry["bytes"]:
            raise MemoryLoadError(
                path, f"truncated or padded: {len(data)} bytes, manifest says {entry['bytes']}"
            )
        if _sha256(data) != entry["sha256"]:
            raise MemoryLoadError(path, "checksum mismatch: the file is corrupted or not the one saved")
        out[logical] = data
    return manifest, out
