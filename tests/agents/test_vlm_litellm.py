"""The VLM client through a real gateway: a LiteLLM proxy on loopback with mock-response models.

Skipped only where the optional ``gateway`` extra is not installed; under ``.ci/run``
(``EMBODMEM_REQUIRE_GATEWAY=1``, the extra installed) a missing extra fails the run. A proxy that is
installed but does not start is a failure, with its log in the message.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from embodmem.agents.vlm.client import ChatClient
from embodmem.agents.vlm.config import VLMConfig
from embodmem.agents.vlm.errors import VLMAuthError, VLMModelError, VLMUnavailableError
from embodmem.agents.vlm.policy import VLMPolicy
from embodmem.app import CONFIG_DIR, run
from embodmem.envs.spec import SensorSpec
from embodmem.runner import EpisodeAborted
from tests.agents.litellm_proxy import MASTER_KEY, LiteLLMProxy, missing_extra

REPO = Path(__file__).resolve().parents[2]
KEY_ENV = "EMBODMEM_TEST_GATEWAY_KEY"
SCHEMA = {
    "type": "object",
    "properties": {"action": {"type": "string"}},
    "required": ["action"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "Mission: find the ship"}]}]

_missing = missing_extra()
if _missing is not None and os.environ.get("EMBODMEM_REQUIRE_GATEWAY") == "1":  # .ci/run: never a silent skip
    raise RuntimeError(f"EMBODMEM_REQUIRE_GATEWAY=1 but the LiteLLM proxy tests cannot run: {_missing}")
pytestmark = pytest.mark.skipif(_missing is not None, reason=f"LiteLLM proxy tests: {_missing}")


@pytest.fixture(scope="module")
def proxy(tmp_path_factory) -> Iterator[LiteLLMProxy]:
    with LiteLLMProxy(tmp_path_factory.mktemp("litellm")) as p:
        yield p


@pytest.fixture(autouse=True)
def gateway_key(monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, MASTER_KEY)


def settings(proxy: LiteLLMProxy, model: str, **overrides: object) -> VLMConfig:
    values: dict[str, object] = dict(
        base_url=proxy.url,
        model=model,
        api_key_env=KEY_ENV,
        timeout_s=20.0,
        max_retries=1,
        backoff_base_s=0.01,
        backoff_max_s=0.05,
        mode="low",
    )
    values.update(overrides)
    return VLMConfig(**values)  # type: ignore[arg-type]


def act_steps(config: VLMConfig, steps: int) -> dict:
    """``steps`` decisions of a low-mode policy on a plain frame; its episode counters."""
    spec = SensorSpec(
        cell_size_m=2.0,
        image_size=8,
        camera_fov_deg=90,
        view_range_m=20,
        sonar_beams=0,
        sonar_fov_deg=120,
        sonar_max_range_m=40,
        grid_size=16,
    )
    obs = {"image": np.zeros((8, 8, 3), np.uint8), "pose": np.zeros(3, np.float32), "mission": "find the ship"}
    agent = VLMPolicy(config)
    agent.reset(obs, spec)
    for _ in range(steps):
        agent.act(obs)
    agent.close()
    return agent.episode_stats()


def app_config(proxy: LiteLLMProxy, model: str, *extra: str):
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        return compose(
            "config",
            overrides=[
                "agent=vlm",
                "agent.vlm.mode=low",
                f"agent.vlm.base_url={proxy.url}",
                f"agent.vlm.model={model}",
                f"agent.vlm.api_key_env={KEY_ENV}",
                "agent.vlm.cache_dir=null",
                "agent.vlm.backoff_base_s=0.01",
                "agent.vlm.image_size=null",
                "experiment.baselines=[]",
                "experiment.conditions=[warm]",
                "logger.progress=false",
                "logger.plots=false",
                *extra,
            ],
        )


# -- the Bars ------------------------------------------------------------------------------------


def test_a_provider_rejecting_format_and_seed_completes_the_run_with_both_dropped(proxy, tmp_path) -> None:
    records = run(app_config(proxy, "no-seed-no-format", "env.max_steps=4"), tmp_path)
    assert len(records) == 2 and all(r.steps == 4 for r in records)
    assert records[0].vlm_params_dropped == 2 and records[1].vlm_params_dropped == 0  # once each
    assert all(r.vlm_dropped_params == "response_format,seed" for r in records)
    assert all(r.vlm_failures == 0 and r.vlm_fallbacks == 0 for r in records)
    assert sum(r.vlm_attempts_ok for r in records) == sum(r.vlm_calls for r in records) == 8


def test_an_aborted_run_keeps_metrics_of_the_completed_episodes(proxy, tmp_path) -> None:
    cfg = app_config(
        proxy, "broken", "env.max_steps=2", "agent.vlm.max_retries=0", "agent.vlm.max_consecutive_failures=3"
    )
    with pytest.raises(EpisodeAborted, match="3 VLM calls in a row failed"):
        run(cfg, tmp_path)  # every call fails: task 1 ends on default actions, task 2 hits the limit
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [line.get("aborted", False) for line in lines] == [False, True]
    done, aborted = lines
    assert done["steps"] == 2 and done["vlm_failures"] == 2 and done["vlm_attempts_5xx"] == 2
    assert done["vlm_latency_s"] > 0  # failed calls are not free
    assert (tmp_path / done["episode_log"]).is_file()
    assert aborted["task_index"] == 2 and "InternalServerError" in aborted["abort_reason"]


def _cli(tmp_path: Path, proxy: LiteLLMProxy, *overrides: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "embodmem",
            "agent=vlm",
            f"agent.vlm.base_url={proxy.url}",
            "agent.vlm.cache_dir=null",
            f"agent.vlm.api_key_env={KEY_ENV}",
            "logger.progress=false",
            f"hydra.run.dir={tmp_path / 'out'}",
            *overrides,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO)},
    )


def test_a_wrong_key_and_an_unknown_model_each_stop_with_one_line(proxy, tmp_path, monkeypatch) -> None:
    unknown = _cli(tmp_path, proxy, "agent.vlm.model=nope")
    assert unknown.returncode == 2 and unknown.stderr.strip().count("\n") == 0, unknown.stderr
    assert "does not serve model 'nope'" in unknown.stderr
    monkeypatch.setenv(KEY_ENV, "sk-wrong")
    wrong = _cli(tmp_path, proxy, "agent.vlm.model=json")
    assert wrong.returncode == 2 and wrong.stderr.strip().count("\n") == 0, wrong.stderr
    assert "refused the credentials" in wrong.stderr and "sk-wrong" not in wrong.stderr


# -- the rest of the gateway's behaviour ---------------------------------------------------------


def test_wrong_key_and_unknown_model_mid_run_are_one_line_errors(proxy, monkeypatch) -> None:
    with pytest.raises(VLMModelError, match="does not serve model 'nope'") as unknown:
        ChatClient(settings(proxy, "nope")).complete(MESSAGES)  # LiteLLM: HTTP 400 "Invalid model name"
    monkeypatch.setenv(KEY_ENV, "sk-wrong")
    with pytest.raises(VLMAuthError, match="refused the credentials") as wrong:
        ChatClient(settings(proxy, "json")).complete(MESSAGES)  # LiteLLM without a database: 400 "No connected db."
    assert "\n" not in str(unknown.value) and "\n" not in str(wrong.value)
    with pytest.raises(VLMAuthError):
        ChatClient(settings(proxy, "json")).check_endpoint()


def test_the_endpoint_check_passes_for_a_served_model(proxy) -> None:
    assert "json" in ChatClient(settings(proxy, "json")).check_endpoint()


def test_a_provider_rejecting_only_seed_keeps_structured_output(proxy, caplog) -> None:
    client = ChatClient(settings(proxy, "no-seed"))
    with caplog.at_level(logging.WARNING, logger="embodmem.vlm"):
        completion = client.complete(MESSAGES, SCHEMA)
    assert completion.params_dropped == ["seed"] and completion.structured and client.structured_supported
    assert json.loads(completion.text)["action"] == "forward"
    assert len(caplog.records) == 1 and "agent.vlm.seed=null" in caplog.records[0].message


@pytest.mark.parametrize(
    ("model", "format_errors", "invalid", "misses"),
    [
        ("json", 0, 0, 0),  # structured output honoured
        ("prose", 3, 0, 3),  # json_schema accepted, prose returned: a format miss the parser recovers
        ("junk", 3, 3, 3),  # nothing to recover: default actions
        ("silent-drop", 3, 0, 3),  # the gateway dropped response_format silently and answered 200
    ],
)
def test_replies_are_checked_against_the_format_the_server_claimed(
    proxy, model, format_errors, invalid, misses
) -> None:
    stats = act_steps(settings(proxy, model), 3)
    assert stats["vlm_calls"] == stats["vlm_attempts_ok"] == 3
    assert (stats["vlm_format_errors"], stats["vlm_invalid_replies"], stats["vlm_format_misses"]) == (
        format_errors,
        invalid,
        misses,
    )
    assert stats["vlm_dropped_params"] == ""  # nothing was rejected: a silent drop is only seen in the replies


@pytest.mark.parametrize(("model", "outcome"), [("broken", "5xx"), ("busy", "429")])
def test_failing_models_cost_time_and_are_counted_by_outcome(proxy, model, outcome) -> None:
    stats = act_steps(settings(proxy, model, max_retries=1, max_consecutive_failures=0), 2)
    assert stats["vlm_failures"] == 2 and stats["vlm_fallbacks"] == 2
    assert stats[f"vlm_attempts_{outcome}"] == 4 and stats["vlm_attempts_ok"] == 0  # 2 calls x (1 + 1 retry)
    assert stats["vlm_latency_s"] > 0 and stats["vlm_retries"] == 2


def test_a_failing_call_raises_unavailable_not_a_traceback_of_the_gateway(proxy) -> None:
    with pytest.raises(VLMUnavailableError, match="after 2 attempt.*InternalServerError") as info:
        ChatClient(settings(proxy, "broken")).complete(MESSAGES)
    assert info.value.attempts == {"5xx": 2}
