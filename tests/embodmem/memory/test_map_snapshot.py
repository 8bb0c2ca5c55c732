"""The agent's map files inside a checked snapshot: grid.npz and rejected_places.json
listed with checksums, pinned to the memory saved beside them, their contents cross-checked, symbolic
links refused, and one writer per directory."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from embodmem.memory import AgentMemory, FrameMeta, MemoryConfig, MemoryLoadError
from embodmem.memory.persistence import MemoryLockError, writer_lock
from embodmem.memory.snapshot import (
    RejectedPlaces,
    companion_digest_of_memory,
    read_map_snapshot,
    save_map_snapshot,
)

N = 16
DTYPES = {"trail": np.dtype(bool), "free": np.dtype(bool), "evidence": np.dtype(np.int16)}


def save_state(directory: Path, seed: int) -> None:
    """A memory and a map pinned to it, as MemoryAgent.save_state writes them."""
    rng = np.random.default_rng(seed)
    memory = AgentMemory(MemoryConfig(dim=8))
    vec = rng.standard_normal(8).astype(np.float32)
    memory.observe(vec / np.linalg.norm(vec), FrameMeta("run", "wreck", 0, 0, 1.0, 2.0, 0))
    memory.save(directory / "memory")
    grid = {
        "trail": rng.random((N, N)) < 0.2,
        "free": rng.random((N, N)) < 0.5,
        "evidence": rng.integers(-3, 9, (N, N)).astype(np.int16),
    }
    rejected = RejectedPlaces(places={"find the barrel": [(seed, 3)]}, views={"find the barrel": [(1, 2, 3)]})
    save_map_snapshot(directory, grid, rejected, companion_digest_of_memory(directory / "memory"))


def load_state(directory: Path) -> tuple[dict[str, np.ndarray] | None, RejectedPlaces]:
    return read_map_snapshot(directory, DTYPES, companion_digest_of_memory(directory / "memory"))


def data_file(directory: Path, logical: str) -> Path:
    manifest = json.loads((directory / "manifest.json").read_text())
    return directory / manifest["files"][logical]["path"]


def test_round_trip(tmp_path: Path) -> None:
    save_state(tmp_path / "a", seed=1)
    grid, rejected = load_state(tmp_path / "a")
    assert grid is not None and grid["evidence"].dtype == np.int16 and grid["free"].shape == (N, N)
    assert rejected.places == {"find the barrel": [(1, 3)]}


def test_map_files_swapped_between_snapshots_are_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    save_state(a, seed=1)
    save_state(b, seed=2)
    shutil.copy(data_file(b, "grid.npz"), data_file(a, "grid.npz"))  # one file
    with pytest.raises(MemoryLoadError, match="checksum mismatch"):
        load_state(a)
    for name in ("manifest.json", data_file(b, "grid.npz").name, data_file(b, "rejected_places.json").name):
        shutil.copy(b / name, a / name)  # the whole map of b beside the memory of a
    with pytest.raises(MemoryLoadError, match="belongs to another snapshot"):
        load_state(a)


def test_a_symlinked_grid_is_refused(tmp_path: Path) -> None:
    a = tmp_path / "a"
    save_state(a, seed=1)
    grid = data_file(a, "grid.npz")
    copy = tmp_path / "elsewhere.npz"
    shutil.copy(grid, copy)
    grid.unlink()
    os.symlink(copy, grid)  # same bytes, so only the link itself is wrong
    with pytest.raises(MemoryLoadError, match="symbolic link"):
        load_state(a)


@pytest.mark.parametrize(
    ("grid", "problem"),
    [
        ({"trail": np.zeros(1, bool), "free": np.zeros(1, bool), "evidence": np.zeros(1, np.int16)}, "grid_shape"),
        ({"trail": np.zeros((N, N), bool), "free": np.zeros((N, N), bool)}, "holds arrays"),
        (
            {"trail": np.zeros((N, N)), "free": np.zeros((N, N), bool), "evidence": np.zeros((N, N), np.int16)},
            "float64",
        ),
    ],
)
def test_a_grid_of_the_wrong_arrays_is_refused(tmp_path: Path, grid: dict, problem: str) -> None:
    save_map_snapshot(tmp_path, grid, RejectedPlaces(places={}, views={}), None)  # saved as given: read must refuse
    with pytest.raises(MemoryLoadError, match=problem):
        read_map_snapshot(tmp_path, DTYPES, None)


@pytest.mark.parametrize(
    ("places", "problem"),
    [
        ({"m": [[-99999999, 0]]}, "outside the 16x16 grid"),
        ({"m": [[1e30, 0]]}, "not a list of rejected places"),
        ({"m": [[16, 0]]}, "outside the 16x16 grid"),
        ({"m": [["1", 0]]}, "not a list of rejected places"),
    ],
)
def test_rejected_cells_outside_the_grid_are_refused(tmp_path: Path, places: dict, problem: str) -> None:
    grid = {name: np.zeros((N, N), dtype) for name, dtype in DTYPES.items()}
    save_map_snapshot(tmp_path, grid, RejectedPlaces(places={}, views={}), None)
    path = data_file(tmp_path, "rejected_places.json")
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    # rewrite the file and re-sign the manifest, as a careful forger would: the content checks must catch it
    import hashlib

    from embodmem.memory.persistence import manifest_digest

    data = json.dumps({"places": places, "views": {}}).encode()
    path.write_bytes(data)
    manifest["files"]["rejected_places.json"].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    manifest["digest"] = manifest_digest(manifest)
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(MemoryLoadError, match=problem):
        read_map_snapshot(tmp_path, DTYPES, None)


def test_missing_or_truncated_map_files_are_one_line_errors(tmp_path: Path) -> None:
    save_state(tmp_path, seed=1)
    grid = data_file(tmp_path, "grid.npz")
    data = grid.read_bytes()
    grid.write_bytes(data[: len(data) // 2])
    with pytest.raises(MemoryLoadError, match="truncated"):
        load_state(tmp_path)
    grid.unlink()
    with pytest.raises(MemoryLoadError, match="missing"):
        load_state(tmp_path)
    data_file(tmp_path, "rejected_places.json").unlink()
    (tmp_path / "manifest.json").unlink()
    with pytest.raises(MemoryLoadError, match="no saved memory here"):
        load_state(tmp_path)


def _hold_lock(directory: str, ready: multiprocessing.synchronize.Event, release: float) -> None:
    with writer_lock(directory):
        ready.set()
        time.sleep(release)


def test_a_second_writer_is_refused_in_one_line(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(str(tmp_path), ready, 2.0))
    holder.start()
    assert ready.wait(60)
    with pytest.raises(MemoryLockError, match=r"another process \(pid \d+\) is saving") as info:
        save_state(tmp_path, seed=1)
    assert "\n" not in str(info.value)
    holder.join(30)
    save_state(tmp_path, seed=1)  # once the first writer is done, saving works
    load_state(tmp_path)
