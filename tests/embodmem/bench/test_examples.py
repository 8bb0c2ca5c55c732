"""Every example result shipped in benchmarks/results/bench_v*_dev verifies against this package
(hashes, spec, records re-scored; re-runs are left to ``embodmem-bench verify --rerun``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from embodmem.bench.verify import verify_result

RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results"
SHIPPED = sorted(RESULTS.glob("bench_v*_dev/*/result.json"))


def test_examples_are_shipped_for_every_spec_version() -> None:
    assert {p.parent.parent.name for p in SHIPPED} == {"bench_v1_dev", "bench_v2_dev"}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_a_shipped_example_result_verifies(path: Path) -> None:
    report = verify_result(path)
    assert f"bench_v{report.result.spec.version}_dev" == path.parent.parent.name
    assert report.result.status == ("over_budget" if "mem16k" in path.parent.name else "scored")
    assert report.result.agent.config is not None  # a re-run takes the run's own config, not today's defaults
