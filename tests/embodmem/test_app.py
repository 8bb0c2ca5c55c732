"""The Hydra app: composition, validation, outputs, and real launchers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf.errors import ValidationError

from embodmem.app import CONFIG_DIR, run

SMALL = ["env.max_steps=25", "logger.progress=false", "logger.plots=false"]


def _compose(overrides: list[str]):
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        return compose("config", overrides=overrides)


def test_default_job_writes_every_output(tmp_path: Path) -> None:
    records = run(_compose(SMALL), tmp_path)
    conditions = {(r["agent"], r["condition"]) for r in records}
    assert conditions == {("memory", "warm"), ("memory", "cold"), ("explorer", "single")}
    for name in ("config.yaml", "metrics.jsonl", "summary.csv", "transfer.csv", "profile.json"):
        assert (tmp_path / name).is_file(), name
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 6
    assert len(list((tmp_path / "episodes").glob("*.json"))) == 6


def test_invalid_values_name_the_key_and_the_allowed_values() -> None:
    with pytest.raises((ConfigCompositionException, ValidationError)) as err:
        _compose(["agent.name=octopus"])
    assert "octopus" in str(err.value.__cause__ or err.value) or "octopus" in str(err.value)
    cfg = _compose(["experiment.sequence=atlantis"])
    with pytest.raises(ValueError, match=r"experiment.sequence: 'atlantis' is not allowed; allowed: .*wreck_then_barrel"):
        run(cfg, "/tmp/never-written")
    cfg = _compose(["agent.detect_probability=1.5"])
    with pytest.raises(ValueError, match=r"agent.detect_probability: 1.5 is not allowed; allowed: a number in \[0, 1\]"):
        run(cfg, "/tmp/never-written")


@pytest.mark.parametrize("launcher", ["joblib", "submitit_local"])
def test_sweeps_run_through_real_launchers(tmp_path: Path, launcher: str) -> None:
    cmd = [
        sys.executable, "-m", "embodmem", "-m", "agent=explorer,random", "experiment.baselines=[]",
        f"hydra/launcher={launcher}", f"hydra.sweep.dir={tmp_path}", "experiment.tasks=[barrel]", *SMALL,
    ]
    if launcher == "joblib":
        cmd.append("hydra.launcher.n_jobs=2")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = sorted(tmp_path.rglob("metrics.jsonl"))
    assert len(files) == 2
    report = subprocess.run([sys.executable, "-m", "embodmem.report", str(tmp_path), "--no-plots", "-q"],
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "summary.csv").is_file()


def test_memory_migrates_between_runs_with_sleep_and_gem(tmp_path: Path) -> None:
    """Run 1 saves its warm memory (with sleep between tasks and GEM rows); run 2 starts from it."""
    first = tmp_path / "first"
    cfg = _compose(SMALL + [
        "experiment.baselines=[]", "experiment.conditions=[warm]", "experiment.save_memory=true",
        "experiment.sleep_between_tasks=true", "experiment.gem_eval=true",
    ])
    records = run(cfg, first)
    evals = [r for r in records if r["condition"] == "eval"]
    assert sorted({r["eval_after"] for r in evals}) == [0, 1, 2] and len(evals) == 6
    assert (first / "gem.csv").is_file()
    saved = first / "memory" / f"world{cfg.experiment.world_seeds[0]}"
    assert saved.is_dir()
    second = tmp_path / "second"
    cfg = _compose(SMALL + ["experiment.baselines=[]", "experiment.conditions=[warm]", f"experiment.load_memory={saved}"])
    again = run(cfg, second)
    warm1 = [r for r in records if r["condition"] == "warm"]
    # the second run starts with the first run's frames already in memory
    assert again[0]["memory_frames"] > warm1[0]["memory_frames"]


def test_agent_group_thresholds_reach_every_agent_that_uses_them() -> None:
    """agent.* settings configure the explorer, the memory agent and the VLM agent's navigator alike."""
    from embodmem.app import build_agent, build_embedder, build_env

    cfg = _compose(["agent=vlm", "agent.detect_probability=0.8", "agent.memory_probability=0.9", "agent.memory_k=3"])
    embedder = build_embedder(cfg)
    env = build_env(cfg, ("wreck",), 0)
    explorer = build_agent("explorer", cfg, embedder, env, 0)
    memory = build_agent("memory", cfg, embedder, env, 0)
    vlm = build_agent("vlm", cfg, embedder, env, 0)
    assert explorer.config.detect_probability == 0.8
    for agent in (memory, vlm.navigator):
        assert (agent.config.detect_probability, agent.config.memory_probability, agent.config.memory_k) == (0.8, 0.9, 3)
