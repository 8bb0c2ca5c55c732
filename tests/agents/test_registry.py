"""The agent registry: every entry builds, and a new baseline is one module plus one registry line."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from embodmem.agents import registry
from embodmem.agents.registry import AGENTS, AgentSpec, baseline_names, get_agent_spec, memory_carriers
from embodmem.agents.variants import VARIANTS
from embodmem.app import CONFIG_DIR, run

TOY_AGENT = '''
"""A toy baseline: turns left forever (what a user's own baseline module looks like)."""
from embodmem.agents.base import Agent
from embodmem.envs.spec import Action


class TurnLeftAgent(Agent):
    name = "toy"

    def reset(self, obs, spec=None):
        self.steps = 0

    def act(self, obs):
        self.steps += 1
        return int(Action.TURN_LEFT)


def build(ctx, spec):
    return TurnLeftAgent()
'''


def test_every_variant_and_baseline_is_registered_once() -> None:
    assert set(VARIANTS) <= set(memory_carriers()) and "vlm" in memory_carriers()
    assert set(baseline_names()) == {"random", "oracle", "explorer", "mapped"}
    assert all(AGENTS[n].privileged for n in ("oracle", "mapped"))
    with pytest.raises(ValueError, match="agent 'octopus' is unknown; allowed: random, oracle"):
        get_agent_spec("octopus")


def test_a_new_baseline_is_one_module_plus_one_registry_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "toy_agent.py").write_text(textwrap.dedent(TOY_AGENT))  # place 1: the agent's module
    monkeypatch.syspath_prepend(str(tmp_path))
    # place 2: its registry line
    monkeypatch.setitem(registry.AGENTS, "toy", AgentSpec("toy", "turns left", "toy_agent:build", needs_embedder=False))
    overrides = [
        "experiment.tasks=[wreck,barrel]", "experiment.world_seeds=[1000]", "env.max_steps=5",
        "experiment.variants=[memory]", "experiment.baselines=[toy]", "logger.plots=false", "logger.progress=false",
    ]  # fmt: skip
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        cfg = compose("config", overrides=overrides)
    records = run(cfg, tmp_path / "out")
    toy = [r for r in records if r.agent == "toy"]
    assert [r.condition for r in toy] == ["single", "single"] and all(r.steps == 5 for r in toy)
    assert "toy_agent" in sys.modules
