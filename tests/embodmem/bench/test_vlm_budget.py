"""The vlm-lean track's call and token budgets, with the VLM agent talking to a real OpenAI-compatible
chat server on loopback (tests/agents/chat_server.py): a run over either budget is marked over_budget,
and verify re-derives the verdict from the records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from embodmem.bench.run import RunRequest, run_benchmark
from embodmem.bench.spec import load_spec
from embodmem.bench.verify import verify_result
from tests.agents.chat_server import ChatServer, Reply


def _vlm_run(out: Path, server: ChatServer) -> RunRequest:
    sets = (
        f"agent.vlm.base_url={server.url}",
        "agent.vlm.model=test-vlm",
        "agent.vlm.cache_dir=null",
        "agent.vlm.backoff_base_s=0.01",
    )
    return RunRequest(agent="vlm", track="vlm-lean", split="dev", out=out, worlds=1, groups=("changing",), sets=sets)


def test_a_run_over_the_token_budget_is_over_budget(tmp_path: Path) -> None:
    limit = load_spec(2).track("vlm-lean").vlm_tokens_per_episode
    assert limit == 60_000
    with ChatServer(max_requests=400, lifetime_s=120) as server:
        server.respond = lambda body: Reply.ok('{"reasoning": "done", "action": "stop"}', usage={
            "prompt_tokens": limit, "completion_tokens": 1})  # fmt: skip
        result = run_benchmark(_vlm_run(tmp_path / "tokens", server))
    assert result.status == "over_budget" and result.usage.vlm_tokens_max_episode == limit + 1
    assert result.budget.violations == [f"VLM tokens in one task {limit + 1} > {limit} (vlm-lean)"]
    assert verify_result(tmp_path / "tokens" / "result.json").result.status == "over_budget"
    records = [json.loads(line)["record"] for line in (tmp_path / "tokens" / "records.jsonl").read_text().splitlines()]
    episodes = [r for r in records if "steps" in r]
    assert episodes and all(r["memory_bytes_peak"] >= r["memory_bytes"] for r in episodes)  # measured every step


def test_a_run_over_the_call_budget_is_over_budget_and_one_within_is_scored(tmp_path: Path) -> None:
    limit = load_spec(2).track("vlm-lean").vlm_calls_per_episode
    assert limit == 40
    with ChatServer(max_requests=400, lifetime_s=120) as server:
        calls = iter(range(10_000))
        server.respond = lambda body: Reply.action("forward" if next(calls) <= limit else "stop")
        over = run_benchmark(_vlm_run(tmp_path / "calls", server))
        server.respond = lambda body: Reply.action("stop")
        within = run_benchmark(_vlm_run(tmp_path / "within", server))
    assert over.status == "over_budget" and over.usage.vlm_calls_max_episode > limit
    assert over.budget.violations[0].startswith("VLM calls in one task")
    assert within.status == "scored" and within.budget.violations == []
    assert 1 <= within.usage.vlm_calls_max_episode <= limit
    assert within.usage.vlm_tokens_max_episode <= 2 * 110  # the server's 100 + 10 tokens a call
    for name in ("calls", "within"):
        verify_result(tmp_path / name / "result.json")


@pytest.fixture(autouse=True)
def _no_vlm_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # anything a run writes relative to the working directory stays here
