"""Atomic file writes: a reader sees the old file or the new one, never half of one.

Everything a user keeps (memory, logs, metrics) goes through these helpers. They write into a
temporary file in the destination's directory, flush and fsync it, then ``os.replace`` it over the
destination, which POSIX guarantees is atomic on one filesystem. Records files that grow by one
line per episode are appended to instead (:func:`append_jsonl`): each line is written whole or
torn at the end, where the readers drop it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import BinaryIO


def atomic_write_with(path: str | os.PathLike[str], write: Callable[[BinaryIO], object]) -> Path:
    """Call ``write(fh)`` on a temporary file, then atomically move it to ``path``.

    If ``write`` raises, the temporary file is removed and ``path`` is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp_name, 0o666 & ~_umask())  # mkstemp makes 0600; give the file normal permissions
        os.close(fd)  # reopened by name, so fh.name is its path: FFmpeg's mp4 faststart re-reads the file by name
        with open(tmp_name, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Atomically replace ``path`` with ``data``."""
    return atomic_write_with(path, lambda fh: fh.write(data))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Atomically replace ``path`` with UTF-8 ``text``."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike[str], obj: object, *, indent: int | None = 2) -> Path:
    """Atomically replace ``path`` with ``obj`` serialised as JSON."""
    return atomic_write_text(path, json.dumps(obj, indent=indent, sort_keys=False) + "\n")


def jsonl_bytes(records: Iterable[Mapping[str, object]]) -> bytes:
    """Records (mappings of JSON-serialisable values) as JSON lines: the one format of the ``.jsonl``
    files a run writes, whether appended or rewritten."""
    return b"".join((json.dumps(r) + "\n").encode("utf-8") for r in records)


def atomic_write_jsonl(path: str | os.PathLike[str], records: Iterable[Mapping[str, object]]) -> Path:
    """Atomically replace ``path`` with ``records`` as JSON lines."""
    return atomic_write_bytes(path, jsonl_bytes(records))


def append_jsonl(path: str | os.PathLike[str], records: Iterable[Mapping[str, object]], *, sync: bool = True) -> Path:
    """Append JSON records (mappings of JSON-serialisable values) to a ``.jsonl`` file, in one write,
    then fsync it (``sync``; without it the lines are the operating system's to keep, which a
    process's crash does not lose, and :func:`sync_file` makes them durable later).

    Nothing already in the file is rewritten, so an append costs the new lines alone (a rewrite per
    episode made a run's writes grow with the square of its episodes). A reader still sees each
    record whole or not at all: a crash mid-write can tear only the last line, which the readers
    drop (``embodmem.runner.read_metrics``; resume also cuts it from the file). A file that does not
    end in a newline (torn before) gets one first, so the new lines stay lines of their own.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = jsonl_bytes(records)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)  # read: its last byte
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    return path


def sync_file(path: str | os.PathLike[str]) -> None:
    """fsync ``path`` (if it exists): what was appended without ``sync`` is on disk once this returns."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
