"""Every long-term record's raw vector in a memory-mapped file on disk (``MemoryConfig.raw_vectors="disk"``).

Why: frames arrive place after place, so a quantiser trained on the first places encodes later
places badly, and retraining it from its own lossy codes cannot recover what they lost
(``benchmarks/results/memory_1m_visit_order.md``). With the raw vectors kept on disk, sleep can
retrain on a uniform sample of *all* of them and re-encode every record exactly, and a search can
re-rank the quantised candidates by their exact scores, while RAM holds only the compact codes.

The working file is a temporary file unlinked as soon as it is created: the open descriptor keeps
it alive, and the kernel frees it when the memory is dropped, even after a crash. Its pages live in
the OS page cache, which the kernel may evict (the store's own RAM is the codes, ids and metadata).
Space is reserved with ``posix_fallocate`` before any row is written, so a full disk is an
``OSError`` before anything changes, never a ``SIGBUS`` in the middle of a write. Snapshots write the
live rows into a ``.npy`` file of their own (:meth:`RawVectorFile.write_npy`).

File rows ("slots") follow the store's rows, which are in id order: new records are appended,
merged records are overwritten in place, removed records leave dead slots that a compaction drops
once they outnumber the live ones (amortised O(1) per removal).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import mmap
import os
import tempfile
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

RAW_DTYPES = ("float16", "float32")
"""Element types the raw-vector file can hold."""

RAW_MODES = ("recent", "disk")
"""Where the long-term store keeps raw vectors: the latest ``train_sample`` in a RAM ring buffer, or
every record's in a memory-mapped file on disk (this module)."""

_CHUNK_ROWS = 65_536
_MIN_ALLOC_ROWS = 4_096


class RawVectorFile:
    """Raw vectors of the store's rows, memory-mapped from an unlinked temporary file.

    Args:
        dim: Vector dimension.
        dtype: ``"float16"`` (half the disk, scores within ~1e-3 of float32) or ``"float32"``.
        directory: Where the temporary file lives (``None``: the system temp directory). It must
            be on a real disk: on a tmpfs the "disk" is RAM.

    Attributes:
        compact_min: Dead slots tolerated before a compaction (also: dead slots must outnumber
            live rows); public so tests can make compactions frequent.

    Example:
        >>> f = RawVectorFile(2, "float32")
        >>> f.append(np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
        >>> f.delete(np.array([0]))
        >>> f.get(np.array([0])).tolist(), len(f)
        ([[0.0, 1.0]], 1)
    """

    def __init__(self, dim: int, dtype: str = "float16", directory: str | os.PathLike[str] | None = None) -> None:
        if dtype not in RAW_DTYPES:
            raise ValueError(f"raw_dtype must be one of {', '.join(RAW_DTYPES)}; got {dtype!r}")
        self.dim = int(dim)
        self.dtype = np.dtype(dtype)
        self.row_bytes = self.dtype.itemsize * self.dim
        self.compact_min = 4_096
        fd, name = tempfile.mkstemp(prefix="embodmem-raw-", suffix=".bin", dir=directory)
        os.unlink(name)
        self._fh: BinaryIO = os.fdopen(fd, "r+b")
        self._closer = weakref.finalize(self, self._fh.close)
        self._map: mmap.mmap | None = None
        self._mm: np.ndarray | None = None  # (alloc, dim) view of _map
        self._alloc = 0  # slots with disk space reserved
        self._used = 0  # slots written (live or dead)
        self._slots = np.zeros(0, np.int64)  # store row -> slot, increasing
        self._n = 0
        self.compactions = 0

    # ----------------------------------------------------------------------------- size
    def __len__(self) -> int:
        return self._n

    def disk_bytes(self) -> int:
        """Bytes of the live raw vectors (what a snapshot writes)."""
        return self._n * self.row_bytes

    def file_bytes(self) -> int:
        """Disk space the working file holds now (reserved space and dead slots included)."""
        return int(os.fstat(self._fh.fileno()).st_blocks) * 512

    def map_bytes(self) -> int:
        """RAM of the row -> slot map (8 bytes per record)."""
        return 8 * self._n

    # ----------------------------------------------------------------------------- writes
    def reserve(self, n_new: int) -> None:
        """Reserve disk space for ``n_new`` more rows, compacting first if dead slots pile up.

        Raises:
            OSError: the disk is full (nothing is lost: the rows already held stay as they were).
        """
        if self._used - self._n > max(self._n, self.compact_min):
            self.compact()
        need = self._used + n_new
        if need <= self._alloc:
            return
        alloc = max(need, self._alloc + self._alloc // 4, _MIN_ALLOC_ROWS)
        _allocate(self._fh.fileno(), alloc * self.row_bytes)
        self._remap(alloc)

    def _remap(self, alloc: int) -> None:
        """Map the first ``alloc`` slots (after unmapping), advised for random access: a re-rank
        reads a hundred scattered rows, and the kernel's default read-ahead made one such read on a
        cold 1M-row file fetch 240 MB in 200-350 ms instead of 0.5 MB in about 10 ms (measured here)."""
        self._mm = None  # no view may outlive the mapping
        if self._map is not None:
            self._map.close()
            self._map = None
        if alloc:
            self._map = mmap.mmap(self._fh.fileno(), alloc * self.row_bytes)
            self._advise("MADV_RANDOM")
            self._mm = np.frombuffer(self._map, dtype=self.dtype).reshape(alloc, self.dim)
        self._alloc = alloc

    def _advise(self, advice: str) -> None:
        """``madvise`` the whole mapping, where the platform has that advice."""
        if self._map is not None and hasattr(mmap, advice):
            self._map.madvise(getattr(mmap, advice))

    @contextlib.contextmanager
    def _sequential(self) -> Iterator[None]:
        """Read-ahead on for a pass over the file in order (compaction, re-encoding, snapshots)."""
        self._advise("MADV_SEQUENTIAL")
        try:
            yield
        finally:
            self._advise("MADV_RANDOM")

    def append(self, x: np.ndarray) -> np.ndarray:
        """Append rows (new records, in id order); returns them as stored, as float32.

        The store adds exactly these (rounded) vectors to its index, so a record's code is always
        the encoding of its raw vector.
        """
        x = np.asarray(x, dtype=np.float32)
        if len(x) == 0:
            return x
        self.reserve(len(x))
        assert self._mm is not None
        stored = x.astype(self.dtype)
        self._mm[self._used : self._used + len(x)] = stored
        slots = np.arange(self._used, self._used + len(x), dtype=np.int64)
        self._used += len(x)
        if self._n + len(x) > len(self._slots):
            grown = np.zeros(max(self._n + len(x), 2 * len(self._slots), 1024), np.int64)
            grown[: self._n] = self._slots[: self._n]
            self._slots = grown
        self._slots[self._n : self._n + len(x)] = slots
        self._n += len(x)
        return stored.astype(np.float32)

    def set(self, rows: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Overwrite the vectors of ``rows`` (merged records); returns them as stored, as float32."""
        assert self._mm is not None or len(rows) == 0
        stored = np.asarray(x, dtype=np.float32).astype(self.dtype)
        if len(rows):
            self._mm[self._slots[np.asarray(rows, np.int64)]] = stored  # type: ignore[index]
        return stored.astype(np.float32)

    def delete(self, rows: np.ndarray) -> None:
        """Forget ``rows`` (store rows, as the store deletes them); their slots are dead until the next
        :meth:`reserve` compacts (so space reserved for an insert is never taken back by its evictions)."""
        if len(rows) == 0:
            return
        keep = np.ones(self._n, dtype=bool)
        keep[rows] = False
        k = int(keep.sum())
        self._slots[:k] = self._slots[: self._n][keep]
        self._n = k

    def compact(self) -> None:
        """Move the live rows to the front of the file, in order, and release the rest."""
        if self._mm is not None:
            with self._sequential():
                for s in range(0, self._n, _CHUNK_ROWS):
                    chunk = self._mm[self._slots[s : min(self._n, s + _CHUNK_ROWS)]]  # a copy: safe to write over
                    self._mm[s : s + len(chunk)] = chunk
        self._slots[: self._n] = np.arange(self._n)
        self._used = self._n
        self._remap(0)
        self._fh.truncate(self._n * self.row_bytes)  # frees the blocks past the live rows
        self._remap(self._n)
        self.compactions += 1

    # ----------------------------------------------------------------------------- reads
    def get(self, rows: np.ndarray) -> np.ndarray:
        """Raw vectors of store ``rows`` as float32 (a copy)."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) == 0 or self._mm is None:
            return np.zeros((len(rows), self.dim), np.float32)
        return self._mm[self._slots[rows]].astype(np.float32)

    def recent(self, n: int) -> np.ndarray:
        """The newest ``n`` records' raw vectors (the last rows), float32."""
        lo = max(0, self._n - n)
        return self.get(np.arange(lo, self._n))

    def chunks(self, rows: int = _CHUNK_ROWS) -> Iterator[tuple[int, np.ndarray]]:
        """``(first_row, float32 vectors)`` over all rows in order, ``rows`` at a time."""
        with self._sequential():
            for s in range(0, self._n, rows):
                yield s, self.get(np.arange(s, min(self._n, s + rows)))

    # ----------------------------------------------------------------------------- persistence
    def write_npy(self, fh: BinaryIO) -> None:
        """Write the live rows, in store order, as one ``.npy`` array ``(len, dim)`` (streamed)."""
        header = {
            "descr": np.lib.format.dtype_to_descr(self.dtype),
            "fortran_order": False,
            "shape": (self._n, self.dim),
        }
        np.lib.format.write_array_header_1_0(fh, header)
        if self._mm is None:
            return
        with self._sequential():
            for s in range(0, self._n, _CHUNK_ROWS):
                fh.write(np.ascontiguousarray(self._mm[self._slots[s : min(self._n, s + _CHUNK_ROWS)]]).tobytes())

    def load_rows(self, source: np.ndarray) -> None:
        """Replace the contents by ``source`` (e.g. a snapshot's ``.npy`` opened with ``mmap_mode="r"``),
        copied in chunks; its dtype and width must already match."""
        if source.dtype != self.dtype or source.ndim != 2 or source.shape[1] != self.dim:
            raise ValueError(f"raw rows {source.shape} {source.dtype} do not fit (n, {self.dim}) {self.dtype}")
        self._n = self._used = 0
        self.reserve(len(source))
        for s in range(0, len(source), _CHUNK_ROWS):
            self.append(np.asarray(source[s : s + _CHUNK_ROWS], dtype=np.float32))

    def drop_page_cache(self) -> None:
        """Write dirty pages back and have the kernel drop the file's cached pages (to measure
        reads from disk, or to hand the page cache back).

        The file is unmapped first and mapped again after: the kernel never drops pages that a
        process has mapped (``POSIX_FADV_DONTNEED`` skips them).
        """
        alloc = self._alloc
        if self._map is not None:
            self._map.flush()
        self._remap(0)
        os.fsync(self._fh.fileno())
        os.posix_fadvise(self._fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        self._remap(alloc)

    def cached_bytes(self) -> int:
        """Bytes of the file in the OS page cache now (``mincore`` over the mapping): the RAM the
        raw vectors take at the moment, which the kernel may reclaim."""
        if self._mm is None:
            return 0
        return _resident_bytes(self._mm.ctypes.data, self._mm.nbytes)

    def close(self) -> None:
        """Unmap and close (the unlinked file's space is freed)."""
        self._remap(0)
        self._closer()


def _resident_bytes(address: int, length: int) -> int:
    """Bytes of the mapping at ``address`` whose pages are in memory (Linux ``mincore``)."""
    page = mmap.PAGESIZE
    start = address - address % page
    pages = (address + length - start + page - 1) // page
    vec = (ctypes.c_ubyte * pages)()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
    if libc.mincore(ctypes.c_void_p(start), ctypes.c_size_t(pages * page), vec) != 0:
        raise OSError(ctypes.get_errno(), "mincore failed")
    return int(np.count_nonzero(np.frombuffer(memoryview(vec), np.uint8) & 1)) * page


def _allocate(fd: int, size: int) -> None:
    """Make the file ``size`` bytes long with its blocks reserved (``posix_fallocate``), where the
    platform and filesystem can; elsewhere a sparse ``ftruncate`` (then a full disk shows up as
    ``SIGBUS`` on a write instead of an ``OSError`` here)."""
    try:
        os.posix_fallocate(fd, 0, size)
    except AttributeError:  # no posix_fallocate on this platform (macOS)
        os.ftruncate(fd, max(size, os.fstat(fd).st_size))
    except OSError as e:
        if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
        os.ftruncate(fd, max(size, os.fstat(fd).st_size))


def read_npy_rows(path: str | os.PathLike[str]) -> np.ndarray:
    """A saved ``.npy`` raw-vector file, memory-mapped read-only (shape and dtype from its header).

    Raises:
        ValueError: the file is not a 2-d ``.npy`` array of float16/float32 (message says why).
    """
    try:
        arr = np.load(Path(path), mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise ValueError(f"not a .npy array ({e})") from None
    if arr.ndim != 2 or arr.dtype.name not in RAW_DTYPES:
        raise ValueError(
            f"holds an array of shape {arr.shape} and dtype {arr.dtype}, expected (n, dim) float16/float32"
        )
    return arr
