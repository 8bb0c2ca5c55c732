"""A real Slurm sweep: ``embodmem-run -m hydra/launcher=slurm seed=0,1`` on a one-node cluster.

``.ci/run`` installs slurm-wlm + munge and starts the cluster with ``scripts/slurm-up.sh``, and sets
``EMBODMEM_REQUIRE_SLURM=1``: there a missing cluster FAILS this test. Elsewhere it is skipped with the
reason (as root with the packages installed, the test starts the cluster itself first).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def slurm_answers() -> bool:
    if shutil.which("sinfo") is None:
        return False
    proc = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30)
    return proc.returncode == 0 and any(
        s.strip().rstrip("*") in ("idle", "mixed", "allocated") for s in proc.stdout.split()
    )


def require_slurm() -> None:
    if slurm_answers():
        return
    if os.geteuid() == 0 and shutil.which("slurmctld") and shutil.which("munged"):
        subprocess.run(["bash", str(ROOT / "scripts" / "slurm-up.sh")], capture_output=True, text=True, timeout=120)
        if slurm_answers():
            return
    reason = "no Slurm cluster answers (sinfo); start one with: sudo scripts/slurm-up.sh"
    if os.environ.get("EMBODMEM_REQUIRE_SLURM") == "1":
        pytest.fail(f"EMBODMEM_REQUIRE_SLURM=1 but {reason}")
    pytest.skip(reason)


def test_slurm_sweep_runs_both_jobs(tmp_path: Path) -> None:
    require_slurm()
    sweep = tmp_path / "sweep"
    cmd = [
        sys.executable,
        "-m",
        "embodmem",
        "-m",
        "hydra/launcher=slurm",
        "seed=0,1",
        "agent=oracle",
        "experiment.baselines=[]",
        "experiment.tasks=[barrel]",
        "experiment.world_seeds=[1000]",
        "env.max_steps=60",
        "logger.progress=false",
        "logger.plots=false",
        f"hydra.sweep.dir={sweep}",
        "hydra.launcher.timeout_min=5",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    seeds = []
    for job in ("0", "1"):
        records = [json.loads(line) for line in (sweep / job / "metrics.jsonl").read_text().splitlines()]
        assert len(records) == 1 and records[0]["agent"] == "oracle" and records[0]["task"] == "barrel"
        assert records[0]["success"], records[0]  # the oracle walks to the drums within 60 steps
        seeds.append(records[0]["seed"])
        # submitit's own logs prove the job ran under Slurm, not locally
        assert list((sweep / ".submitit").rglob("*_log.out")), "no submitit Slurm job logs"
    assert sorted(seeds) == [0, 1]


def test_missing_slurm_fails_when_ci_requires_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under .ci/run (EMBODMEM_REQUIRE_SLURM=1) an absent cluster is a failure, never a skip."""
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("EMBODMEM_REQUIRE_SLURM", "1")
    with pytest.raises(pytest.fail.Exception, match="EMBODMEM_REQUIRE_SLURM=1"):
        require_slurm()
    monkeypatch.delenv("EMBODMEM_REQUIRE_SLURM")
    with pytest.raises(pytest.skip.Exception, match="slurm-up.sh"):
        require_slurm()
