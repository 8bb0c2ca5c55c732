"""agent=vlm through the Hydra app, against a real chat-completions server on loopback."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from embodmem.app import CONFIG_DIR, run
from embodmem.runner import EpisodeAborted
from tests.agents.chat_server import ChatServer, Reply

REPO = Path(__file__).resolve().parents[2]


def _explore_then_stop(body: dict) -> Reply:
    text = "\n".join(p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text")
    legal = text.split("Legal actions now: ")[1].split("\n")[0]
    return Reply.action("explore" if "explore" in legal else "forward", "look around")


def _mission(body: dict) -> str:
    text = "\n".join(p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text")
    return re.search(r"Mission: (.*)", text).group(1)


def vlm_config(url: str, *extra: str):
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        return compose(
            "config",
            overrides=[
                "agent=vlm",
                "agent.vlm.mode=high",
                f"agent.vlm.base_url={url}",
                "agent.vlm.model=test-vlm",
                "agent.vlm.cache_dir=null",
                "agent.vlm.backoff_base_s=0.01",
                "agent.vlm.max_skill_steps=10",
                "experiment.baselines=[]",
                "experiment.conditions=[warm]",
                "env.max_steps=30",
                "logger.progress=false",
                "logger.plots=false",
                *extra,
            ],
        )


def test_vlm_agent_runs_a_sequence_from_the_hydra_config(tmp_path: Path) -> None:
    with ChatServer(max_requests=300, lifetime_s=120) as server:
        server.respond = _explore_then_stop
        records = run(vlm_config(server.url), tmp_path)
        assert server.count > 0 and server.model_requests == 1  # the endpoint was checked once, first
    assert [r.agent for r in records] == ["vlm", "vlm"]
    for r in records:
        assert r.steps == 30 and r.vlm_calls >= 1
        assert r.vlm_calls <= r.steps / 2  # high level: the planner runs each choice for several steps
        assert r.vlm_attempts_ok == r.vlm_calls and r.vlm_format_errors == 0 and r.vlm_dropped_params == ""
    assert records[1].memory_frames > 0  # the navigator wrote the frames into memory
    line = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
    assert line["vlm_calls"] == records[0].vlm_calls


def test_a_server_that_stops_answering_aborts_the_run_and_keeps_what_finished(tmp_path: Path) -> None:
    with ChatServer(max_requests=300, lifetime_s=120) as server:
        first_mission: list[str] = []

        def answer_the_first_task_then_hang(body: dict) -> Reply:
            first_mission[:] = first_mission or [_mission(body)]
            return _explore_then_stop(body) if _mission(body) == first_mission[0] else Reply.hang()

        server.respond = answer_the_first_task_then_hang
        cfg = vlm_config(server.url, "agent.vlm.timeout_s=0.5", "agent.vlm.max_retries=1")
        with pytest.raises(EpisodeAborted, match=r"task 2 \(barrel\) aborted.*max_silent_s") as info:
            run(cfg, tmp_path)
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(lines) == 2 and "aborted" not in lines[0] and lines[0]["steps"] == 30
    assert (tmp_path / lines[0]["episode_log"]).is_file()  # the completed episode's log is there too
    aborted = lines[1]
    assert aborted == info.value.record.plain() and aborted["aborted"] is True and aborted["task"] == "barrel"
    assert "VLMBudgetError" in aborted["abort_reason"] and "\n" not in aborted["abort_reason"]
    assert aborted["vlm_failures"] >= 1 and aborted["vlm_attempts_timeout"] >= 2 and aborted["vlm_latency_s"] >= 1.0


def _cli(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "embodmem",
            "agent=vlm",
            "agent.vlm.cache_dir=null",
            "logger.progress=false",
            f"hydra.run.dir={tmp_path / 'out'}",
            *overrides,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**_env(), "PYTHONPATH": str(REPO)},
    )


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_the_cli_stops_with_one_line_for_an_unknown_model_and_no_server(tmp_path: Path) -> None:
    with ChatServer(max_requests=10, lifetime_s=200) as server:
        unknown = _cli(tmp_path, f"agent.vlm.base_url={server.url}", "agent.vlm.model=nope")
        assert server.count == 0  # stopped before any chat request
    assert unknown.returncode == 2, unknown.stderr
    assert unknown.stderr.strip().count("\n") == 0 and "does not serve model 'nope'" in unknown.stderr
    assert not (tmp_path / "out").exists()  # checked before Hydra creates the output directory
    started = time.monotonic()
    gone = _cli(tmp_path, f"agent.vlm.base_url={server.url}", "agent.vlm.model=test-vlm")  # server stopped
    wall = time.monotonic() - started
    assert gone.returncode == 2, gone.stderr
    assert gone.stderr.strip().count("\n") == 0 and "cannot be reached" in gone.stderr
    waited = re.search(r"gave up after (\d+\.\d) s", gone.stderr)
    assert waited and float(waited.group(1)) <= wall, gone.stderr  # the time it really spent, not the limit
    assert not (tmp_path / "out").exists()


def test_an_aborted_evaluation_episode_gets_a_record_and_a_resume_replaces_it(tmp_path: Path) -> None:
    """GEM rows run first (row 0, before the first task): a dead server aborts an evaluation episode,
    which gets its record; a resume with a server that answers runs it again and replaces it."""
    extra = ["experiment.gem_eval=true", "experiment.tasks=[wreck,barrel]", "env.max_steps=12"]
    with ChatServer(max_requests=300, lifetime_s=120) as server:
        server.respond = lambda body: Reply.http_error(500)
        cfg = vlm_config(server.url, *extra, "agent.vlm.max_retries=0", "agent.vlm.max_consecutive_failures=1")
        with pytest.raises(EpisodeAborted, match=r"evaluation after task 0: task 1 \(wreck\) aborted"):
            run(cfg, tmp_path)
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(lines) == 1 and lines[0]["aborted"] and lines[0]["condition"] == "eval" and lines[0]["eval_after"] == 0
    with ChatServer(max_requests=600, lifetime_s=300) as server:
        server.respond = _explore_then_stop
        records = run(vlm_config(server.url, *extra, "experiment.resume=true"), tmp_path)
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert not any(r.get("aborted") for r in lines) and len(lines) == len(records) == 2 + 3 * 2
