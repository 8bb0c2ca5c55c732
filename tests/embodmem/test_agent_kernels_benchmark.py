"""``benchmarks/agent_kernels.py`` times every compiled kernel the agents call, where they call it, and
puts every kernel back afterwards: a kernel it missed would be counted as the agents' Python."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def agent_kernels(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the script's own default, undone after the test
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import agent_kernels

    yield agent_kernels
    sys.modules.pop("agent_kernels", None)


def test_every_kernel_the_agents_import_is_timed_and_put_back(agent_kernels) -> None:  # type: ignore[no-untyped-def]
    import embodmem.agents.explorer as explorer
    import embodmem.agents.map_kernels as kernels
    import embodmem.agents.mapping as mapping
    from embodmem.agents.mapping import OccupancyGrid
    from embodmem.envs.spec import SensorSpec

    compiled = {name for name, value in vars(kernels).items() if hasattr(value, "py_func")}
    used = {(m, n) for m in (mapping, explorer) for n in vars(m) if n in compiled}
    import faiss

    from embodmem.embedding.embedder import ClipEmbedder

    used |= {
        (c, n)
        for c in vars(faiss).values()
        if isinstance(c, type) and issubclass(c, faiss.Index)
        for n in ("search", "add_with_ids")
        if n in vars(c)
    }
    used.add((ClipEmbedder, "_encode_images"))
    before = {(m, n): vars(m)[n] for m, n in used}
    times = agent_kernels.KernelTimes()
    with agent_kernels.kernels_timed(times):
        assert all(vars(m)[n] is not before[(m, n)] for m, n in used)
        grid = OccupancyGrid(SensorSpec(5.0, 64, 75.0, 40.0, 24, 120.0, 40.0, 20))
        grid.update((4, 4, 0), np.full(24, 20.0))
    assert times.calls == {"numba: fold_scan": 1}
    assert times.seconds["numba: fold_scan"] > 0
    assert all(vars(m)[n] is before[(m, n)] for m, n in used)
