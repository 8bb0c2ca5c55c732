"""Sweeps that resume: a run killed mid-sequence (SIGKILL) and resumed ends with the records of an
uninterrupted run; a torn last line of metrics.jsonl is repaired with a message."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from embodmem.atomic import append_jsonl
from embodmem.metrics_record import TIMING_FIELDS, EpisodeRecord
from embodmem.runner import RunWriter, read_metrics

ARGS = [
    "env.max_steps=25", "logger.progress=false", "logger.plots=false", "run_id=resume-test",
    "experiment.tasks=[wreck,barrel,wreck]", "experiment.baselines=[]",
]  # fmt: skip
"""A warm and a cold memory sequence of three tasks each: six episodes."""


def _run(out: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "embodmem", *ARGS, *extra, f"hydra.run.dir={out}"]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _comparable(path: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING_FIELDS} for r in read_metrics(path)]


def test_killed_run_resumes_to_the_uninterrupted_records(tmp_path: Path) -> None:
    full, cut = tmp_path / "full", tmp_path / "cut"
    proc = _run(full)
    assert proc.wait(timeout=600) == 0, proc.stderr.read()[-2000:]
    expected = _comparable(full / "metrics.jsonl")
    assert len(expected) == 6

    proc = _run(cut)
    metrics = cut / "metrics.jsonl"
    while _lines(metrics) < 1 and proc.poll() is None:  # kill as soon as the warm sequence's first task is written
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    done = _lines(metrics)
    assert 1 <= done < 6, f"the kill came too late ({done} episodes written)"
    with metrics.open("ab") as fh:  # and a torn line, as a crash mid-append could leave
        fh.write(b'{"success": 1, "spl": 0.')

    proc = _run(cut, "experiment.resume=true")
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-2000:]
    assert "dropped a truncated last line" in err
    assert _comparable(metrics) == expected
    assert len(list((cut / "episodes").glob("*.json"))) == 6

    proc = _run(cut, "experiment.resume=true")  # everything is there: nothing is re-run or re-written
    before = metrics.read_bytes()
    assert proc.wait(timeout=600) == 0
    assert metrics.read_bytes() == before


def test_read_metrics_repairs_only_a_torn_last_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "metrics.jsonl"
    rec = {"sequence": "s", "world_seed": 0, "seed": 0, "agent": "a", "condition": "warm", "task_index": 1}
    path.write_text(json.dumps(rec) + "\n" + '{"sequence": "s", "wor')
    writer = RunWriter(tmp_path, resume=True)
    assert [r.plain() for r in writer.records] == [rec] and EpisodeRecord.model_validate(rec).key in writer.done
    assert "dropped a truncated last line" in capsys.readouterr().err
    assert path.read_text() == json.dumps(rec) + "\n"
    path.write_text("garbage\n" + json.dumps(rec) + "\n")
    with pytest.raises(ValueError, match="line 1 is not a metrics record"):
        read_metrics(path)


def test_appending_records_writes_only_the_new_lines(tmp_path: Path) -> None:
    """An episode's record is appended, not the file rewritten: the bytes already there stay (same
    inode, same prefix), and a line torn before gets a newline so the new one stands on its own."""
    path = tmp_path / "metrics.jsonl"
    first, second = {"a": 1}, {"b": [2.5, None]}
    append_jsonl(path, [first])
    inode, before = path.stat().st_ino, path.read_bytes()
    append_jsonl(path, [second, first])
    assert path.stat().st_ino == inode and path.read_bytes().startswith(before)
    assert read_metrics(path) == [first, second, first]
    with path.open("ab") as fh:  # a crash mid-append
        fh.write(b'{"c": ')
    append_jsonl(path, [second])
    assert path.read_bytes().endswith(b'{"c": \n' + json.dumps(second).encode() + b"\n")
    with pytest.raises(ValueError, match="line 4 is not a metrics record"):  # the torn line stays visible
        read_metrics(path)


def test_the_writer_fsyncs_at_most_once_an_interval_and_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appends reach the file at once (a killed process loses none, as the SIGKILL test shows); the
    fsync that makes them survive a machine's crash comes at most every ``sync_every_s`` and at
    :meth:`RunWriter.sync`, which the runner calls when the run ends."""
    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: fsyncs.append(fd) or real_fsync(fd))
    key = {"sequence": "s", "world_seed": 0, "seed": 0, "agent": "a", "condition": "warm"}
    records = [EpisodeRecord.model_validate({**key, "task_index": i}) for i in range(1, 5)]
    writer = RunWriter(tmp_path, episode_logs=False)
    writer.sync_every_s = 3600.0
    writer.write_records(records[:1])
    writer.write_records(records[1:3])
    assert fsyncs == [] and len(read_metrics(tmp_path / "metrics.jsonl")) == 3
    writer.sync()
    assert len(fsyncs) == 1
    writer.sync_every_s = 0.0
    writer.write_records(records[3:])
    assert len(fsyncs) == 2 and len(read_metrics(tmp_path / "metrics.jsonl")) == 4
