"""The memory-mapped raw-vector file: rows stay aligned with the store's rows through appends,
overwrites, deletions and compactions; snapshots stream the live rows; a full disk changes nothing."""

from __future__ import annotations

import errno
import mmap
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embodmem.memory import FrameMeta, LongTermStore, MemoryConfig
from embodmem.memory.rawfile import RawVectorFile, read_npy_rows

D = 8

_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 40)),
        st.tuples(st.just("set"), st.integers(0, 10_000)),
        st.tuples(st.just("delete"), st.integers(0, 10_000)),
        st.tuples(st.just("compact"), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS, dtype=st.sampled_from(["float16", "float32"]))
def test_rows_match_a_plain_list(tmp_path: Path, ops: list[tuple[str, int]], dtype: str) -> None:
    """Any sequence of operations leaves the file holding exactly what a Python list would."""
    f = RawVectorFile(D, dtype, tmp_path)
    f.compact_min = 3  # compact often
    model: list[np.ndarray] = []
    rng = np.random.default_rng(len(ops))
    for op, arg in ops:
        if op == "append":
            x = rng.standard_normal((arg, D)).astype(np.float32)
            stored = f.append(x)
            np.testing.assert_array_equal(stored, x.astype(dtype).astype(np.float32))
            model.extend(stored)
            f.reserve(0)  # where compactions happen
        elif op == "set" and model:
            row = arg % len(model)
            model[row] = f.set(np.array([row]), rng.standard_normal((1, D)))[0]
        elif op == "delete" and model:
            rows = np.unique(np.random.default_rng(arg).integers(0, len(model), 1 + arg % 5))
            f.delete(rows)
            model = [v for i, v in enumerate(model) if i not in set(rows.tolist())]
        elif op == "compact":
            f.compact()
        assert len(f) == len(model)
        want = np.asarray(model, np.float32).reshape(-1, D)
        np.testing.assert_array_equal(f.get(np.arange(len(model))), want)
        np.testing.assert_array_equal(f.recent(3), want[-3:])
    out = tmp_path / "rows.npy"
    with out.open("wb") as fh:
        f.write_npy(fh)
    back = read_npy_rows(out)
    assert back.dtype == np.dtype(dtype) and back.shape == (len(model), D)
    np.testing.assert_array_equal(back.astype(np.float32), np.asarray(model, np.float32).reshape(-1, D))
    g = RawVectorFile(D, dtype, tmp_path)
    g.load_rows(back)
    np.testing.assert_array_equal(g.get(np.arange(len(g))), f.get(np.arange(len(f))))
    f.close()
    g.close()


def test_working_file_is_unlinked_and_compaction_frees_space(tmp_path: Path) -> None:
    f = RawVectorFile(D, "float32", tmp_path)
    f.append(np.ones((20_000, D), np.float32))
    assert list(tmp_path.iterdir()) == []  # the open descriptor holds the only reference
    full = f.file_bytes()
    assert full >= 20_000 * 4 * D
    f.delete(np.arange(15_000))
    f.reserve(0)  # 15,000 dead > max(5,000 live, compact_min): compacts
    assert f.compactions == 1 and f.file_bytes() < full / 2
    np.testing.assert_array_equal(f.get(np.arange(len(f))), np.ones((5_000, D), np.float32))


def test_a_full_disk_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Space is reserved before the store changes anything: an insert that finds the disk full
    raises OSError and leaves index, metadata and raw file as they were."""
    s = LongTermStore(MemoryConfig(dim=D, index_factory="Flat", raw_vectors="disk", raw_dir=str(tmp_path), rerank=4))
    x = np.random.default_rng(0).standard_normal((5000, D)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    metas = [FrameMeta("r", "t", 0, i, 0.0, 0.0) for i in range(5000)]
    s.add(x[:4000], metas[:4000], np.arange(4000))
    before = (s.meta.ids.copy(), s.index.ntotal, s.raw_file.get(np.arange(4000)) if s.raw_file else None)

    def full(fd: int, offset: int, size: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(OSError, match="No space"):
        s.add(x[4000:], metas[4000:], np.arange(4000, 5000))
    assert np.array_equal(s.meta.ids, before[0]) and s.index.ntotal == before[1]
    assert s.raw_file is not None and len(s.raw_file) == 4000
    np.testing.assert_array_equal(s.raw_file.get(np.arange(4000)), before[2])
    monkeypatch.undo()
    s.add(x[4000:], metas[4000:], np.arange(4000, 5000))
    assert len(s) == 5000 and [h.id for h in s.search(x[4321], 1)[0]] == [4321]


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(rerank=8), "MemoryConfig.rerank must be 0 unless raw_vectors='disk' .*, got 8"),
        (dict(raw_vectors="ssd"), "MemoryConfig.raw_vectors must be 'recent' or 'disk', got 'ssd'"),
        (
            dict(raw_vectors="disk", raw_dtype="int8"),
            "MemoryConfig.raw_dtype must be 'float16' or 'float32', got 'int8'",
        ),
        (dict(raw_vectors="disk", rerank=-1), r"MemoryConfig.rerank must be an int in \[0, 65536\], got -1"),
    ],
)
def test_bad_raw_settings_named(kwargs: dict, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        LongTermStore(MemoryConfig(dim=D, index_factory="Flat", **kwargs))


def _fstype(path: Path) -> str:
    """Filesystem type of ``path`` (the longest matching mount point in /proc/mounts)."""
    best, kind = "", ""
    for line in Path("/proc/mounts").read_text().splitlines():
        _, mount, fstype, *_ = line.split()
        if str(path.resolve()).startswith(mount) and len(mount) > len(best):
            best, kind = mount, fstype
    return kind


def test_drop_page_cache_empties_the_cache_and_keeps_the_rows(tmp_path: Path) -> None:
    """The kernel never drops pages a process has mapped, so dropping must unmap first (it did
    not, once, and "cold" latencies were warm); the rows read back the same afterwards."""
    f = RawVectorFile(D, "float32", tmp_path)
    x = np.random.default_rng(3).standard_normal((20_000, D)).astype(np.float32)
    f.append(x)
    assert f.cached_bytes() >= f.disk_bytes() - mmap.PAGESIZE  # just written: in the page cache
    f.drop_page_cache()
    if _fstype(tmp_path) not in ("tmpfs", "ramfs"):  # a RAM filesystem has nowhere else to keep pages
        assert f.cached_bytes() == 0
    np.testing.assert_array_equal(f.get(np.arange(len(f))), x)
    assert f.cached_bytes() > 0
