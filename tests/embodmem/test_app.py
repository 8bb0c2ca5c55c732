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
from embodmem.metrics_record import TIMING_FIELDS, EpisodeRecord

SMALL = ["env.max_steps=25", "logger.progress=false", "logger.plots=false"]


def _compose(overrides: list[str]):
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        return compose("config", overrides=overrides)


def test_default_job_writes_every_output(tmp_path: Path) -> None:
    records = run(_compose(SMALL), tmp_path)
    conditions = {(r.agent, r.condition) for r in records}
    assert conditions == {("memory", "warm"), ("memory", "cold"), ("explorer", "single")}
    assert {r.split for r in records} == {"dev"}
    for name in ("config.yaml", "metrics.jsonl", "summary.csv", "transfer.csv", "profile.json"):
        assert (tmp_path / name).is_file(), name
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 6
    assert len(list((tmp_path / "episodes").glob("*.json"))) == 6
    for r in records:  # every field the runner writes is one of the record schema's, and valid
        assert set(r.plain()) <= set(EpisodeRecord.model_fields), set(r.plain()) - set(EpisodeRecord.model_fields)
        EpisodeRecord.model_validate(r.plain())


def test_invalid_values_name_the_key_and_the_allowed_values() -> None:
    with pytest.raises((ConfigCompositionException, ValidationError)) as err:
        _compose(["agent.name=octopus"])
    assert "octopus" in str(err.value.__cause__ or err.value) or "octopus" in str(err.value)
    cfg = _compose(["experiment.sequence=atlantis"])
    with pytest.raises(
        ValueError, match=r"experiment.sequence: 'atlantis' is not allowed; allowed: .*wreck_then_barrel"
    ):
        run(cfg, "/tmp/never-written")
    cfg = _compose(["agent.detect_probability=1.5"])
    with pytest.raises(
        ValueError, match=r"agent.detect_probability: 1.5 is not allowed; allowed: a number in \[0, 1\]"
    ):
        run(cfg, "/tmp/never-written")


@pytest.mark.parametrize("launcher", ["joblib", "submitit_local"])
def test_sweeps_run_through_real_launchers(tmp_path: Path, launcher: str) -> None:
    cmd = [
        sys.executable,
        "-m",
        "embodmem",
        "-m",
        "agent=explorer,random",
        "experiment.baselines=[]",
        f"hydra/launcher={launcher}",
        f"hydra.sweep.dir={tmp_path}",
        "experiment.tasks=[barrel]",
        *SMALL,
    ]
    if launcher == "joblib":
        cmd.append("hydra.launcher.n_jobs=2")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = sorted(tmp_path.rglob("metrics.jsonl"))
    assert len(files) == 2
    report = subprocess.run(
        [sys.executable, "-m", "embodmem.report", str(tmp_path), "--no-plots", "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "summary.csv").is_file()


def test_memory_migrates_between_runs_with_sleep_and_gem(tmp_path: Path) -> None:
    """Run 1 saves its warm memory (with sleep between tasks and GEM rows); run 2 starts from it."""
    first = tmp_path / "first"
    cfg = _compose(
        SMALL
        + [
            "experiment.baselines=[]",
            "experiment.conditions=[warm]",
            "experiment.save_memory=true",
            "experiment.sleep_between_tasks=true",
            "experiment.gem_eval=true",
        ]
    )
    records = run(cfg, first)
    evals = [r for r in records if r.condition == "eval"]
    assert sorted({r.eval_after for r in evals}) == [0, 1, 2] and len(evals) == 6
    assert (first / "gem.csv").is_file()
    saved = first / "memory" / f"world{cfg.experiment.world_seeds[0]}"
    assert saved.is_dir()
    second = tmp_path / "second"
    cfg = _compose(
        SMALL + ["experiment.baselines=[]", "experiment.conditions=[warm]", f"experiment.load_memory={saved}"]
    )
    again = run(cfg, second)
    warm1 = [r for r in records if r.condition == "warm"]
    # the second run starts with the first run's frames already in memory
    assert again[0].memory_frames > warm1[0].memory_frames


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
        assert (agent.config.detect_probability, agent.config.memory_probability, agent.config.memory_k) == (
            0.8,
            0.9,
            3,
        )


def _runs_only(records: list[EpisodeRecord]) -> list[dict]:
    """Warm and cold records without what legitimately differs between runs (timing, file names)."""
    drop = {*TIMING_FIELDS, "episode_log", "run_id"}
    return [{k: v for k, v in r.plain().items() if k not in drop} for r in records if r.condition in ("warm", "cold")]


def test_gem_evaluation_never_changes_the_run_it_evaluates(tmp_path: Path) -> None:
    """GEM rows run on fresh agents holding a loaded copy of memory and map, on a separate env.

    World 1001 (dev) with 70 steps is informative: the oil drums are passed in task 1, so with memory
    task 2 succeeds and without it the robot runs out of steps.
    """
    base = ["env.max_steps=70", "logger.progress=false", "logger.plots=false", "experiment.baselines=[]"]
    plain = run(_compose(base), tmp_path / "plain")
    with_gem = run(_compose(base + ["experiment.gem_eval=true"]), tmp_path / "gem")
    assert _runs_only(plain) == _runs_only(with_gem)
    from embodmem.transfer import gem_matrix

    R = gem_matrix([r.plain() for r in with_gem if r.condition == "eval"], "success", agent="memory")
    assert R.shape == (3, 2)
    assert R[0, 1] == 0.0 and R[1, 1] == 1.0  # task 2 fails with no memory, succeeds after task 1


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("experiment.split=holdout", "experiment.split"),
        ("experiment.sequences=[no_such_sequence]", "experiment.sequences"),
        ("experiment.variants=[memory_no_brain]", "experiment.variants"),
        ("agent.variant=memory_no_brain", "agent.variant"),
        ("experiment.split=test", "experiment.world_seeds"),  # default dev world in a test-split report
        ("experiment.poison_k=-1", "experiment.poison_k"),
    ],
)
def test_protocol_bad_values_name_the_key_and_the_allowed_values(override: str, named: str) -> None:
    from embodmem.config import validate

    with pytest.raises(ValueError, match=named.replace(".", r"\.")) as err:
        validate(_compose([override]))
    assert "allowed" in str(err.value) or "must" in str(err.value) or "use worlds" in str(err.value)


def test_a_test_split_report_refuses_the_embedders_training_worlds() -> None:
    from embodmem.config import validate

    with pytest.raises(ValueError, match=r"outside split 'test'"):
        validate(_compose(["experiment.split=test", "experiment.world_seeds=[3,100000]"]))


def test_ablations_are_real_variants(tmp_path: Path) -> None:
    """Every ablation runs warm and cold; no_recall never queries, textlog keeps no frames."""
    cfg = _compose(SMALL + ["experiment=ablations", "experiment.world_seeds=[1001]", "experiment.baselines=[]"])
    records = run(cfg, tmp_path)
    agents = {r.agent for r in records}
    assert agents == {
        "memory",
        "memory_no_recall",
        "memory_no_map",
        "memory_no_consolidation",
        "memory_fifo_only",
        "textlog",
    }
    by = {(r.agent, r.condition, r.task_index): r for r in records}
    assert by[("memory_no_recall", "warm", 2)].memory_queries == 0
    assert by[("memory", "warm", 2)].memory_queries > 0
    assert by[("textlog", "warm", 2)].memory_frames == 0
    assert by[("memory_no_consolidation", "warm", 2)].memory_frames > by[("memory", "warm", 2)].memory_frames


def test_poisoned_runs_record_k_and_store_the_false_memories(tmp_path: Path) -> None:
    cfg = _compose(SMALL + ["experiment.baselines=[]", "experiment.poison_k=5", "experiment.conditions=[warm]"])
    records = run(cfg, tmp_path)
    assert {r.poison_k for r in records} == {5}
