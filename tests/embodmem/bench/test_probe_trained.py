"""The trained memory probe: deterministic, and the fully observed control decodes what blind cannot.

Real generated worlds give the truth; the tours' frame vectors are seeded noise (the CLIP model is
exercised by the benchmark, benchmarks/bench_probe.py), so these run in seconds.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from embodmem.bench.trained_probe import (
    TRAINED_DESIGNS,
    TourContents,
    frame_memory_records,
    parse_designs,
    summarise,
    train_and_score,
)
from envs.world import generate_world

DESIGNS = ("textlog", "clip_frames", "frame_memory")


def tour(seed: int, steps: int = 40) -> TourContents:
    world = generate_world(seed, size=24)
    rng = np.random.default_rng(seed)
    free = np.argwhere(world.kinds == 0)
    cells = free[rng.integers(0, len(free), steps)]
    poses = np.stack([cells[:, 1], cells[:, 0], rng.integers(0, 4, steps)], axis=1)
    kinds = np.where(rng.random(steps) < 0.3, rng.integers(0, 8, steps), -1)
    vectors = rng.standard_normal((steps, 16)).astype(np.float32)
    return TourContents(
        world_seed=seed,
        seabed=world.kinds,
        agent_map=None,
        poses=poses,
        vectors=vectors,
        log_kind=kinds,
        log_confidence=np.where(kinds >= 0, 0.5, 0.0),
        reach=4.0,
        fov_deg=75.0,
        **dict(zip(("record_poses", "record_vectors", "record_counts"), frame_memory_records(poses, vectors, 16))),
    )


@pytest.fixture(scope="module")
def tours() -> tuple[list[TourContents], list[TourContents]]:
    return [tour(s) for s in (1000, 1001, 1002)], [tour(s) for s in (2000, 2001)]


def test_same_tours_same_figures_bit_for_bit(tours: tuple[list[TourContents], list[TourContents]]) -> None:
    train, test = tours
    first = train_and_score(DESIGNS, train, test)
    assert first == train_and_score(DESIGNS, train, test)
    other = train_and_score(DESIGNS[:1], [tour(s) for s in (1003, 1004, 1005)], test)
    assert other != first[: len(other)]  # other training worlds, another decoder


def test_fully_observed_control_beats_blind(tours: tuple[list[TourContents], list[TourContents]]) -> None:
    train, test = tours
    rows = {r.design: r for r in summarise(train_and_score(("blind", "fully_observed"), train, test))}
    blind, full = rows["blind"], rows["fully_observed"]
    assert full.object_kind.mean == 1.0 and full.wall_cells.mean == 1.0 and full.wall_iou.mean == 1.0
    assert blind.object_kind.mean is not None and blind.object_kind.mean < 0.5
    assert blind.wall_iou.mean is not None and blind.wall_iou.mean < 0.5
    assert full.object_ap.mean is not None and blind.object_ap.mean is not None
    assert full.object_ap.mean > blind.object_ap.mean
    assert len(full.kind_ap) == 8 and all(k.mean in (1.0, None) for k in full.kind_ap)


def test_unknown_design_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^--designs: 'frame_mem' is not allowed; allowed: blind, ") as e:
        parse_designs("blind,frame_mem")
    assert "\n" not in str(e.value)
    assert parse_designs(",".join(TRAINED_DESIGNS)) == TRAINED_DESIGNS


def test_benchmark_refuses_an_unknown_design_before_any_work(capsys: pytest.CaptureFixture[str]) -> None:
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_probe.py"
    spec = importlib.util.spec_from_file_location("bench_probe", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--designs", "nope", "--out", "/nonexistent/probe.md"]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "'nope' is not allowed" in err
