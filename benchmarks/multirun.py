"""The Hydra multirun that benchmarks/suite.py and benchmarks/instance_goals.py launch: one
``python -m embodmem -m`` command over chunks of a split's worlds, in parallel through the joblib
launcher, quiet (no progress bars, plots or episode logs), each job's runs in lockstep lanes, and
the run of it.

Why chunks: each Hydra job takes a list of worlds, so ``2 x jobs`` chunks keep every worker busy
without paying a process start per world.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from embodmem.profiling import Profiler, RunProfile

CORE_AGENTS = ("experiment.variants=[memory]", "experiment.baselines=[explorer,oracle]")
"""The core suite's agents (``suite.py --agents core``): the memory agent warm and cold, the explorer
and the oracle; with ``experiment=suite``, the core suite every speed benchmark runs."""

QUIET_LOGGER = ("logger.progress=false", "logger.plots=false", "logger.episode_logs=false")
"""A timed job's logger: no progress bars, plots or episode logs."""


def world_chunks(worlds: Sequence[int], jobs: int) -> list[list[int]]:
    """``worlds`` dealt round-robin into ``2 x jobs`` chunks (fewer when there are fewer worlds)."""
    n_chunks = min(len(worlds), max(1, jobs * 2))
    return [list(worlds[i::n_chunks]) for i in range(n_chunks)]


def add_lanes_argument(parser: argparse.ArgumentParser) -> None:
    """``--lanes`` (default 32): the runs each job advances together (``experiment.lanes``)."""
    parser.add_argument(
        "--lanes",
        type=int,
        default=32,
        help="runs advanced together in each job, their frames embedded in one batched call and their worlds "
        "stepped in one batch (experiment.lanes; default 32; 0: one after another, the app's default; the "
        "records are the same either way)",
    )


def results_title(title: str, overrides: Sequence[str]) -> str:
    """A results file's title with the run's extra Hydra overrides (``env=noisy``, ...): the conditions
    a reader must see before the tables."""
    return ", ".join([title, " ".join(overrides)]) if overrides else title


def multirun_command(
    experiment: Sequence[str],
    split: str,
    worlds: Sequence[int],
    jobs: int,
    out: Path,
    extra: Sequence[str] = (),
    lanes: int = 0,
) -> list[str]:
    """The command: ``experiment`` overrides first, then the split, the world chunks as a sweep, the
    launcher, the sweep directory ``out``, the quiet logger, the lanes, and ``extra`` overrides last."""
    sweep = ",".join("[" + ",".join(map(str, c)) + "]" for c in world_chunks(worlds, jobs))
    return [
        sys.executable,
        "-m",
        "embodmem",
        "-m",
        *experiment,
        f"experiment.split={split}",
        f"experiment.world_seeds={sweep}",
        "hydra/launcher=joblib",
        f"hydra.launcher.n_jobs={jobs}",
        f"hydra.sweep.dir={out}",
        *QUIET_LOGGER,
        f"experiment.lanes={lanes}",
        *extra,
    ]


def run_multirun(cmd: list[str]) -> float:
    """Run ``cmd`` (one BLAS thread per job, its stdout dropped; a failure raises); wall seconds.

    The sweep runs in its own process group, ended when it exits, fails or this script is stopped
    (Ctrl-C, SIGTERM): the launcher's workers must not outlive a killed sweep, still writing records
    into its directory and taking the CPU from whatever runs next.
    """
    t0 = time.perf_counter()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    sweep = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, start_new_session=True)

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        code = sweep.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
        _end_group(sweep)
    if code != 0:
        raise subprocess.CalledProcessError(code, cmd)
    return time.perf_counter() - t0


def _end_group(sweep: subprocess.Popen[bytes]) -> None:
    """SIGTERM to what is left of the sweep's process group (its workers), then reap the sweep."""
    with contextlib.suppress(ProcessLookupError):  # nothing left
        os.killpg(sweep.pid, signal.SIGTERM)
    sweep.wait()


FLOOR_SECTIONS = ("env", "lockstep embedding")
"""What no change to the agents, the planner or the runner takes off a lockstep run's time: its
worlds' steps (the env as built) and the CLIP's batched passes (the model as trained)."""


def time_table(directory: Path, cores: int) -> str:
    """Where a finished multirun's time went: each section of its jobs' ``profile.json`` summed, per
    step and spread over ``cores``, and the floor (:data:`FLOOR_SECTIONS`) that a faster agent,
    planner or runner cannot go under. Empty if no job wrote a profile.

    Spread over ``cores``: the seconds the section would take if the jobs kept every core busy the
    whole run (a lower bound on its share of the wall time)."""
    steps, loop_s = 0, 0.0
    summed = Profiler()  # the jobs' sections added up, tabled as one run's
    for path in sorted(directory.rglob("profile.json")):
        profile: RunProfile = json.loads(path.read_text())
        steps += profile["steps"]
        loop_s += profile["loop_s"]
        for row in profile["sections"]:
            summed.seconds[row["section"]] += row["seconds"]
    if not steps:
        return ""
    lines = [
        f"{steps:,} steps; the jobs' loops took {loop_s:.0f} s in all, {loop_s / cores:.0f} s spread over {cores} cores",
        "",
        f"| section | seconds | us per step | seconds spread over {cores} cores |",
        "|---|---:|---:|---:|",
    ]
    for row in summed.table(steps):
        lines.append(
            f"| {row['section']} | {row['seconds']:.1f} | {row['us_per_step']:.1f} | {row['seconds'] / cores:.1f} |"
        )
    floor = sum(summed.seconds.get(name, 0.0) for name in FLOOR_SECTIONS)
    label = " + ".join(FLOOR_SECTIONS)
    lines.append(
        f"| **{label} (no agent change removes it)** | {floor:.1f} | {1e6 * floor / steps:.1f} | **{floor / cores:.1f}** |"
    )
    return "\n".join(lines)
