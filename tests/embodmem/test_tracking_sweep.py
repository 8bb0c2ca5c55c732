"""Sweeps that search: Hydra's Optuna sweeper over memory settings, the mean warm SPL on dev worlds."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from embodmem.metrics_record import EpisodeRecord
from embodmem.search import objective

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("hydra_plugins.hydra_optuna_sweeper") is None,
    reason="needs the 'hydra-optuna-sweeper' package: pip install -e '.[optuna]'",
)
SEARCH = ["-m", "experiment=memory_search"]
QUIET = ["logger.progress=false", "logger.plots=false"]


def _embodmem(args: list[str], timeout: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "embodmem", *args], capture_output=True, text=True, timeout=timeout)


def test_a_search_on_the_test_split_is_refused_before_any_episode(tmp_path: Path) -> None:
    proc = _embodmem(
        [*SEARCH, *QUIET, "experiment.split=test", "experiment.world_seeds=[100000]", f"hydra.sweep.dir={tmp_path}"],
        300,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        "embodmem-run: error: experiment.split: 'test' is not allowed with a searching sweeper (OptunaSweeper); "
        "allowed: dev, calibration (the test split reports the chosen settings, it never chooses them)"
    )
    assert not list(tmp_path.rglob("metrics.jsonl"))


def test_an_unknown_sweeper_lists_the_valid_ones(tmp_path: Path) -> None:
    proc = _embodmem(["-m", "hydra/sweeper=grid_search", f"hydra.sweep.dir={tmp_path}"], 120)
    assert proc.returncode == 2
    line = proc.stderr.strip()
    assert line.startswith("embodmem-run: error: hydra/sweeper: 'grid_search' is not allowed; allowed: ")
    assert "basic" in line and "memory_search" in line and "optuna" in line


@pytest.mark.slow
def test_six_trials_on_two_dev_worlds_find_the_best_warm_spl(tmp_path: Path) -> None:
    proc = _embodmem([*SEARCH, *QUIET, f"hydra.sweep.dir={tmp_path}"], 1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    scores = {}
    for job in sorted(p for p in tmp_path.iterdir() if p.is_dir() and p.name.isdigit()):
        records = [EpisodeRecord.model_validate(json.loads(line)) for line in (job / "metrics.jsonl").open()]
        assert {r.split for r in records} == {"dev"} and {r.world_seed for r in records} == {1000, 1001}
        overrides = yaml.safe_load((job / ".hydra" / "overrides.yaml").read_text())
        scores[int(job.name)] = (objective(records), overrides)
    assert len(scores) == 6
    result = yaml.safe_load((tmp_path / "optimization_results.yaml").read_text())
    assert result["best_value"] == pytest.approx(max(score for score, _ in scores.values()))
    best = next(overrides for score, overrides in scores.values() if score == pytest.approx(result["best_value"]))
    for key, value in result["best_params"].items():
        assert f"{key}={value}" in best
