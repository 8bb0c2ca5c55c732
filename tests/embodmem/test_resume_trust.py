"""Resume that can be trusted: a changed config is refused in one line naming the keys,
aborted records are replaced when their episode runs again, and every record resume reads goes
through the record schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from omegaconf import DictConfig

from embodmem.config import ConfigError
from embodmem.fingerprint import FINGERPRINT_FILE, RESUME_MAY_CHANGE, check_new_run, check_resume, write_fingerprint
from embodmem.metrics_record import EpisodeRecord
from embodmem.runner import RunWriter, read_metrics


def compose_job(overrides: list[str]) -> DictConfig:
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        return compose("config", overrides=overrides)


def test_resume_with_another_max_steps_is_refused_naming_the_key(tmp_path: Path) -> None:
    write_fingerprint(tmp_path, compose_job(["env.max_steps=60"]))
    (tmp_path / "metrics.jsonl").write_text("")
    with pytest.raises(ConfigError) as info:
        check_resume(tmp_path, compose_job(["env.max_steps=30", "experiment.resume=true"]))
    message = str(info.value)
    assert "env.max_steps was 60, now 30" in message and "\n" not in message
    assert message.count(", now ") == 1  # only that key differs


def test_keys_that_may_change_do_not_block_a_resume(tmp_path: Path) -> None:
    write_fingerprint(tmp_path, compose_job([]))
    changed = ["experiment.resume=true", "logger.progress=false", "logger.plots=false"]
    check_resume(tmp_path, compose_job(changed))  # no error
    assert all(k.startswith(("experiment.", "logger.", "agent.vlm.")) for k in RESUME_MAY_CHANGE)


def test_records_without_a_fingerprint_or_with_a_broken_one_are_refused(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text("")
    with pytest.raises(ConfigError, match="no fingerprint.json"):
        check_resume(tmp_path, compose_job([]))
    (tmp_path / FINGERPRINT_FILE).write_text('{"sha256": "x"}')
    with pytest.raises(ConfigError, match="unreadable"):
        check_resume(tmp_path, compose_job([]))


def _record(task_index: int, **extra: object) -> dict:
    return {
        "sequence": "s", "world_seed": 0, "seed": 0, "split": "dev", "agent": "vlm", "condition": "warm",
        "task_index": task_index, "task": "wreck", "run_id": "r", "eval_after": None, **extra,
    }  # fmt: skip


def test_an_aborted_record_is_rerun_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    aborted = _record(2, aborted=True, abort_reason="VLMUnavailableError: down", steps_before_abort=3)
    path.write_text(json.dumps(_record(1, steps=10)) + "\n" + json.dumps(aborted) + "\n")
    writer = RunWriter(tmp_path, episode_logs=False, resume=True)
    assert EpisodeRecord.model_validate(aborted).key not in writer.done and len(writer.records) == 1
    writer.write_records([EpisodeRecord.model_validate(_record(1, steps=10))])  # done already: not written again
    writer.write_records([EpisodeRecord.model_validate(_record(2, steps=7))])
    writer.write_records([EpisodeRecord.model_validate(_record(3, steps=5))])
    records = read_metrics(path)
    assert [(r["task_index"], r.get("steps"), r.get("aborted")) for r in records] == [
        (1, 10, None),
        (2, 7, None),
        (3, 5, None),
    ]
    assert writer.aborted == {}


def test_an_aborted_evaluation_row_is_replaced_too(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    row = {"condition": "eval", "eval_after": 1}
    path.write_text(json.dumps(_record(1, **row, aborted=True, abort_reason="x", steps_before_abort=0)) + "\n")
    writer = RunWriter(tmp_path, episode_logs=False, resume=True)
    writer.write_records([EpisodeRecord.model_validate(_record(1, **row, steps=4))])
    assert [r.get("aborted") for r in read_metrics(path)] == [None]


def test_a_record_the_schema_refuses_stops_the_resume_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text(json.dumps(_record(1, steps="ten")) + "\n")
    with pytest.raises(ValueError, match=r"record 1 field steps: Input should be a valid integer"):
        RunWriter(tmp_path, resume=True)


def test_a_new_run_into_a_directory_with_records_is_refused_before_any_work(tmp_path: Path) -> None:
    """Without experiment.resume, a run whose directory already holds records would append its own to
    them (an ablation run written where the core run was doubled the memory agent's records)."""
    from embodmem.app import run

    check_new_run(tmp_path)  # an empty directory: fine
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("")
    check_new_run(tmp_path)  # an empty file (a run stopped before its first episode): fine
    line = json.dumps(_record(1, steps=10)) + "\n"
    metrics.write_text(line)
    with pytest.raises(ConfigError) as info:
        run(compose_job([]), tmp_path)
    message = str(info.value)
    assert str(metrics) in message and "experiment.resume=true" in message and "\n" not in message
    assert metrics.read_text() == line and not (tmp_path / "config.yaml").exists()
