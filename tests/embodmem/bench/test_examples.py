"""The example results shipped in benchmarks/results/bench_v1_dev still verify against this package."""

from __future__ import annotations

from pathlib import Path

import pytest

from embodmem.bench.verify import verify_result

EXAMPLES = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "bench_v1_dev"


@pytest.mark.parametrize("name", ["memory-variants-open", "memory-mem16k-category"])
def test_shipped_example_results_verify(name: str) -> None:
    report = verify_result(EXAMPLES / name / "result.json")
    assert report.result.spec.version == 1
    assert report.result.status == ("over_budget" if "mem16k" in name else "scored")
