"""agent=vlm through the Hydra app, against a real chat-completions server on loopback."""

from __future__ import annotations

import json
from pathlib import Path

from hydra import compose, initialize_config_dir

from embodmem.app import CONFIG_DIR, run
from tests.agents.chat_server import ChatServer, Reply


def _explore_then_stop(body: dict) -> Reply:
    text = "\n".join(p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text")
    legal = text.split("Legal actions now: ")[1].split("\n")[0]
    return Reply.action("explore" if "explore" in legal else "forward", "look around")


def test_vlm_agent_runs_a_sequence_from_the_hydra_config(tmp_path: Path) -> None:
    with ChatServer(max_requests=300, lifetime_s=120) as server:
        server.respond = _explore_then_stop
        with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
            cfg = compose(
                "config",
                overrides=[
                    "agent=vlm", "agent.vlm.mode=high", f"agent.vlm.base_url={server.url}", "agent.vlm.model=test-vlm",
                    "agent.vlm.cache_dir=null",
                    "agent.vlm.backoff_base_s=0.01", "agent.vlm.max_skill_steps=10", "experiment.baselines=[]",
                    "experiment.conditions=[warm]", "env.max_steps=30", "logger.progress=false", "logger.plots=false",
                ],
            )
        records = run(cfg, tmp_path)
        assert server.count > 0
    assert [r["agent"] for r in records] == ["vlm", "vlm"]
    for r in records:
        assert r["steps"] == 30 and r["vlm_calls"] >= 1
        assert r["vlm_calls"] <= r["steps"] / 2  # high level: the planner runs each choice for several steps
    assert records[1]["memory_frames"] > 0  # the navigator wrote the frames into memory
    line = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
    assert line["vlm_calls"] == records[0]["vlm_calls"]
