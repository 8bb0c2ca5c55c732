"""Shared helpers for the memory tests."""

from __future__ import annotations

from collections.abc import Callable

import faiss
import numpy as np
import pytest

from embodmem.memory import FrameMeta

# One FAISS thread: on a shared 2-core machine OpenMP spin-waiting makes tiny trainings take seconds.
faiss.omp_set_num_threads(1)


def unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


@pytest.fixture
def make_vecs() -> Callable[..., np.ndarray]:
    """``make_vecs(n, d, seed=0, clusters=None)``: clustered unit vectors, deterministic."""

    def make(n: int, d: int, seed: int = 0, clusters: int | None = None, noise: float = 0.3) -> np.ndarray:
        rng = np.random.default_rng(seed)
        if clusters is None:
            return unit(rng.standard_normal((n, d)))
        centres = rng.standard_normal((clusters, d))
        return unit(centres[rng.integers(0, clusters, n)] + noise * rng.standard_normal((n, d)))

    return make


@pytest.fixture
def make_metas() -> Callable[..., list[FrameMeta]]:
    """``make_metas(n, start=0, task="t0", run="r0", episode=0)``: metas on a diagonal walk."""

    def make(n: int, start: int = 0, task: str = "t0", run: str = "r0", episode: int = 0) -> list[FrameMeta]:
        return [FrameMeta(run, task, episode, start + i, float(start + i), float(start + i)) for i in range(n)]

    return make
