"""Benchmark scripts take ``--split custom --first N`` (and poison.py and drift.py ``--jobs``); the suite's
intervals resample whole worlds; the suite counts warm failures where cold succeeded."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from embodmem.splits import choose_worlds
from embodmem.stats import difference_of_means, mean_ci, paired_ci

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ("suite.py", "lifelong.py", "poison.py", "drift.py", "instance_goals.py")


def _dry_run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args, "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("script", SCRIPTS)
def test_custom_split_with_first(script: str, tmp_path: Path) -> None:
    run = _dry_run(
        script, "--split", "custom", "--first", "700000", "--worlds", "3", "--jobs", "1", "--out", str(tmp_path)
    )
    assert run.returncode == 0, run.stderr
    if script in ("poison.py", "drift.py"):  # these hand the range and the jobs to suite.py
        assert "--split custom" in run.stdout and "--first 700000" in run.stdout and "--jobs 1" in run.stdout
    else:
        assert "experiment.split=custom" in run.stdout and "700000" in run.stdout and "700002" in run.stdout
        assert "700003" not in run.stdout and "hydra.launcher.n_jobs=1" in run.stdout


def test_poison_runs_the_memory_systems_it_is_given(tmp_path: Path) -> None:
    """``--variants`` reaches the multirun (default: frame memory only)."""
    common = ("--worlds", "2", "--k", "20", "--out", str(tmp_path))
    assert "experiment.variants=[memory]" in _dry_run("poison.py", *common).stdout
    run = _dry_run("poison.py", *common, "--variants", "memory,textlog,memory_keep_all")
    assert run.returncode == 0 and "experiment.variants=[memory,textlog,memory_keep_all]" in run.stdout


@pytest.mark.parametrize("script", SCRIPTS)
def test_custom_split_without_first_is_one_line(script: str) -> None:
    run = _dry_run(script, "--split", "custom", "--worlds", "3")
    assert run.returncode == 2
    assert (
        run.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "--first: None is not allowed with --split custom; allowed: a world seed >= 0 (custom worlds have no first of their own)"
        )
    )


def test_choose_worlds() -> None:
    assert choose_worlds("custom", 2, first=123456789) == [123456789, 123456790]
    assert choose_worlds("test", 2) == [100000, 100001]
    with pytest.raises(ValueError, match="split 'dev' holds worlds 1000-1999"):
        choose_worlds("dev", 5, first=1998)
    with pytest.raises(ValueError, match="--split: 'nope' is not allowed"):
        choose_worlds("nope", 5)


def test_cluster_bootstrap_is_wider_than_episode_bootstrap() -> None:
    # 20 worlds, 5 tasks each: the gain is a property of the world (all its tasks agree), so the
    # episodes are not independent and resampling them would understate the interval.
    rng = np.random.default_rng(3)
    per_world = rng.normal(0.1, 0.3, 20)
    worlds = np.repeat(np.arange(20), 5)
    warm = per_world[worlds] + rng.normal(0, 0.01, 100)
    cold = np.zeros(100)
    lo_e, hi_e = paired_ci(warm, cold, difference_of_means)
    lo_w, hi_w = paired_ci(warm, cold, difference_of_means, clusters=worlds)
    assert hi_w - lo_w > 1.8 * (hi_e - lo_e)
    assert lo_w <= float(difference_of_means(warm, cold)) <= hi_w
    m_lo, m_hi = mean_ci(warm, clusters=worlds)
    assert m_hi - m_lo > 1.8 * np.subtract(*mean_ci(warm)[::-1])
    # one world per pair: the same draws as the plain bootstrap
    assert paired_ci(warm[::5], cold[::5], difference_of_means, clusters=np.arange(20)) == paired_ci(
        warm[::5], cold[::5], difference_of_means
    )
    with pytest.raises(ValueError, match="clusters: 3 labels for 100 values"):
        paired_ci(warm, cold, difference_of_means, clusters=[1, 2, 3])


def test_suite_counts_warm_failures_where_cold_succeeded() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from suite import lost_to_cold_table, tables

    records = []
    for world in (1, 2, 3):
        for condition, success, steps in (("warm", 1 if world != 2 else 0, 20), ("cold", 1, 100)):
            for task in (1, 2):
                records.append(
                    {
                        "sequence": "s", "world_seed": world, "seed": 0, "task_index": task, "agent": "memory",
                        "condition": condition, "target_seen_before": True, "target_reported_before": world != 3,
                        "success": success, "spl": 0.5 * success, "steps": steps, "seen_place_spl_bound": 0.9,
                    }
                )  # fmt: skip
    text = tables(records)
    row = next(line for line in text.splitlines() if line.startswith("| seen | memory (warm) |"))
    assert row.endswith("| 0.0% | 1 (33.3%); 1 of 3 (33.3%) |")
    assert "recogniser reported the target earlier | 3 | 0.67 (share)" in text
    assert "| s | memory | 3 | 1 (33.3%) | 1 of 3 (33.3%) |" in lost_to_cold_table(records)


def test_compare_puts_two_runs_side_by_side_and_counts_differing_records() -> None:
    """``suite.py --compare``: the same episodes of two runs, later tasks only; a record that differs
    in any field but the wall clock is counted, and the SPL difference is B minus A."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from suite import compare_table

    def record(world: int, task: int, spl: float, wall: float) -> dict:
        return {
            "sequence": "deep_pair", "world_seed": world, "seed": 0, "task_index": task, "agent": "memory",
            "condition": "warm", "success": 1, "spl": spl, "steps": 10, "wall_time_s": wall,
        }  # fmt: skip

    a = [record(w, t, 0.5, 1.0) for w in range(4) for t in (1, 2)]
    b = [record(w, t, 0.5 if w else 0.9, 2.0) for w in range(4) for t in (1, 2)]
    table = compare_table(a, b, ("sequential", "lockstep")).splitlines()
    assert len(table) == 3 and table[2].startswith("| deep_pair | memory (warm) | 4 |")
    cells = [c.strip() for c in table[2].split("|")]
    assert cells[6:8] == ["0.50", "0.60"] and cells[-2] == "1"  # SPL A, B; one record differs (world 0)
    assert cells[-3].startswith("+0.100")


def test_time_table_sums_the_jobs_profiles_and_names_the_floor(tmp_path: Path) -> None:
    """``suite.py`` prints where a run's time went: each section summed over the jobs' profile.json,
    per step and spread over the cores, and the env plus the CLIP's batched passes as the floor."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from multirun import time_table

    assert time_table(tmp_path, 2) == ""
    for job, (env_s, clip_s) in enumerate(((3.0, 1.0), (5.0, 3.0))):
        (tmp_path / str(job)).mkdir()
        sections = [
            {"section": "agent", "seconds": 10.0, "us_per_step": 0.0, "share": 0.0},
            {"section": "env", "seconds": env_s, "us_per_step": 0.0, "share": 0.0},
            {"section": "lockstep embedding", "seconds": clip_s, "us_per_step": 0.0, "share": 0.0},
        ]
        profile = {"steps": 1_000_000, "loop_s": 20.0, "sections": sections}
        (tmp_path / str(job) / "profile.json").write_text(json.dumps(profile))
    lines = time_table(tmp_path, 2).splitlines()
    assert lines[0] == "2,000,000 steps; the jobs' loops took 40 s in all, 20 s spread over 2 cores"
    assert "| agent | 20.0 | 10.0 | 10.0 |" in lines
    assert "| env | 8.0 | 4.0 | 4.0 |" in lines
    assert lines[-1] == "| **env + lockstep embedding (no agent change removes it)** | 12.0 | 6.0 | **6.0** |"


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (an orphan's zombie waits for init to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc (Linux) to see the worker")
def test_a_failed_sweep_leaves_no_workers_behind(tmp_path: Path) -> None:
    """A sweep that dies while its workers run (a killed Hydra process, its joblib workers orphaned)
    fails the script, and the workers are ended with it instead of writing on for minutes."""
    spec = importlib.util.spec_from_file_location("bench_multirun", ROOT / "benchmarks" / "multirun.py")
    assert spec is not None and spec.loader is not None
    multirun = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(multirun)
    pid_file = tmp_path / "worker.pid"
    sweep = (
        "import subprocess, sys; "
        "w = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
        f"open({str(pid_file)!r}, 'w').write(str(w.pid)); sys.exit(3)"
    )
    with pytest.raises(subprocess.CalledProcessError) as failed:
        multirun.run_multirun([sys.executable, "-c", sweep])
    assert failed.value.returncode == 3
    worker = int(pid_file.read_text())
    for _ in range(50):
        if not _alive(worker):
            break
        time.sleep(0.1)
    assert not _alive(worker)


def test_changing_world_refuses_a_custom_range_without_its_first_world_in_one_line() -> None:
    """``changing_world.py`` reads ``--split custom --first N`` as the other benchmarks do: a custom
    range without its first world is one line, before any run starts."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "changing_world.py"), "--split", "custom", "--worlds", "3"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1].endswith("(custom worlds have no first of their own)")
