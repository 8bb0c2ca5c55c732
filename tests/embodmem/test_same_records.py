"""tools/same_records.py, the check behind "bit-identical before and after": a changed field is
found, a wall-clock field is not, a field added since is allowed only when asked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run_dir(path: Path, **changes: object) -> Path:
    record = {
        "sequence": "wreck_then_barrel", "world_seed": 1001, "seed": 0, "task_index": 2, "agent": "memory",
        "condition": "warm", "spl": 0.9354838709677419, "steps": 36, "wall_time_s": 0.5,
    }  # fmt: skip
    record.update(changes)
    (path / "0").mkdir(parents=True)
    (path / "0" / "metrics.jsonl").write_text(json.dumps(record) + "\n")
    return path


def _same(*args: Path | str) -> subprocess.CompletedProcess[str]:
    script = ROOT / "tools" / "same_records.py"
    return subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True, text=True, timeout=60)


def test_only_the_episode_counts(tmp_path: Path) -> None:
    a = _run_dir(tmp_path / "a")
    slower = _run_dir(tmp_path / "slower", wall_time_s=9.0)
    other = _run_dir(tmp_path / "other", spl=0.9354838709677418)
    added = _run_dir(tmp_path / "added", relocalisations=0)
    assert _same(a, slower).returncode == 0
    result = _same(a, other)
    assert result.returncode == 1 and "spl" in result.stdout and "1 differences" in result.stdout
    assert _same(a, added).returncode == 1
    assert _same("--allow-added", a, added).returncode == 0
    assert _same("--allow-added", added, a).returncode == 1  # a field that went missing is a difference


def test_runs_with_other_jobs_compare_records_not_reports(tmp_path: Path) -> None:
    """``--jobs 1`` against ``--jobs 2``: the worlds are dealt into other jobs, each writing its own
    summary.csv, so the same records must not be reported as different reports; the same jobs with
    different reports still are."""
    a = _run_dir(tmp_path / "a")
    (a / "0" / "summary.csv").write_text("a\n")
    b = tmp_path / "b"
    (b / "1").mkdir(parents=True)
    (b / "1" / "metrics.jsonl").write_text((a / "0" / "metrics.jsonl").read_text())
    (b / "1" / "summary.csv").write_text("b\n")
    result = _same(a, b)
    assert result.returncode == 0 and "per-job reports not" in result.stdout and "IDENTICAL" in result.stdout
    c = _run_dir(tmp_path / "c")
    (c / "0" / "summary.csv").write_text("c\n")
    result = _same(a, c)
    assert result.returncode == 1 and "0/summary.csv differs" in result.stdout
