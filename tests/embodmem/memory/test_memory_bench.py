"""Smoke test of benchmarks/bench_memory.py on a tiny size, so the script does not rot."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_benchmark_runs_and_writes_tables(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_memory", ROOT / "benchmarks" / "bench_memory.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "bench"
    bench.main(["--sizes", "3k", "--factories", "Flat;SQ8;IVF16,PQ8x4", "--queries", "30",
                "--latency-queries", "5", "--observe-frames", "2000", "--order", "shuffled",
                "--disk-factories", "IVF16,SQ4", "--disk-nprobe", "4", "--rerank", "32", "--sleeps", "3",
                "--cold-queries", "3", "--raw-dir", str(tmp_path), "--out", str(out)])  # fmt: skip
    saved = json.loads(out.with_suffix(".json").read_text())
    rows = saved["rows"]
    assert [r["index"] for r in rows] == ["Flat", "SQ8", "IVF16,PQ8x4"]
    assert rows[0]["recall1@10"] == 1.0 and rows[0]["code_B"] == 512 and rows[2]["code_B"] == 4
    assert all(r["frames"] == 3000 and r["p50_ms"] > 0 and "sleep_s" in r for r in rows)
    md = out.with_suffix(".md").read_text()
    assert "synthetic clustered" in md and "| 3,000 | IVF16,PQ8x4 | 16 |" in md
    (disk,) = saved["disk_rows"]
    assert (disk["index"], disk["code_B"], disk["raw_disk_B"], disk["sleeps"]) == ("IVF16,SQ4", 64, 256.0, 3)
    assert disk["ids_map_B"] == 32.0 and disk["p50_cold_ms"] > 0 and disk["recall1@10"] >= 0.9
    assert "| 3,000 | IVF16,SQ4 | 4 | 32 | float16 |" in md and "raw on disk B/frame" in md
    assert list(tmp_path.glob("embodmem-raw-*")) == []  # the raw file was unlinked from the start
