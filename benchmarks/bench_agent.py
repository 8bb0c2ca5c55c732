"""The memory agent's end-to-end step rate, with the profile of where the time goes.

Runs the memory agent (warm and cold) through ``embodmem.app.run`` (the function behind
``embodmem-run``: environment, CLIP on ONNX Runtime, memory, mapping, planning, metrics) on dev
worlds, in this process, with one thread, after one untimed warm-up job. Steps per second are the
agent's steps divided by the episodes' own wall time (model loading and report writing excluded);
the profile splits that time by section (env, agent/embedding, agent/mapping, ...). Run it alone: a
second busy process on a 2-core machine slows both.

    python benchmarks/bench_agent.py                         # 10 dev worlds, two sequences
    python benchmarks/bench_agent.py --worlds 20 --out benchmarks/results/agent_speed.md
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from hydra import compose, initialize_config_module

import embodmem.app as app
from embodmem.atomic import atomic_write_text
from embodmem.metrics_record import EpisodeRecord
from embodmem.splits import get_split

SEQUENCES = ("wreck_then_barrel", "shallow_tour6", "deep_pair")


def run_job(worlds: list[int], first: int, extra: list[str]) -> tuple[list[dict], dict]:
    """Records and profile of one job over ``worlds`` (dev split)."""
    overrides = [
        f"experiment.sequences=[{','.join(SEQUENCES)}]",
        f"experiment.world_seeds=[{','.join(map(str, worlds))}]",
        "experiment.split=dev",
        "experiment.baselines=[]",
        "logger.progress=false",
        "logger.plots=false",
        "logger.episode_logs=false",
        *extra,
    ]
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    with tempfile.TemporaryDirectory(prefix="bench-agent-") as tmp, contextlib.redirect_stdout(io.StringIO()):
        records = app.run(cfg, Path(tmp) / "run")
        profile = json.loads((Path(tmp) / "run" / "profile.json").read_text())
    return [r.plain() for r in records if isinstance(r, EpisodeRecord)], profile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=10, help="dev worlds (default 10)")
    parser.add_argument("--first", type=int, default=1400, help="first dev world (default 1400)")
    parser.add_argument("--out", type=Path, default=None, help="also write the table (Markdown)")
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides, e.g. agent.relocalise=false")
    args = parser.parse_args()
    worlds = get_split("dev").worlds(args.worlds, first=args.first)
    run_job(worlds[:1], args.first, args.overrides)  # warm-up: imports, model files, ONNX session
    start = time.perf_counter()
    records, profile = run_job(worlds, args.first, args.overrides)
    wall = time.perf_counter() - start
    episodes = [r for r in records if r["condition"] in ("warm", "cold")]
    steps = sum(r["steps"] for r in episodes)
    episode_s = sum(r["wall_time_s"] for r in episodes)
    per_episode = [r["steps"] / r["wall_time_s"] for r in episodes if r["wall_time_s"] > 0 and r["steps"] >= 20]
    by_condition = {
        c: sum(r["steps"] for r in episodes if r["condition"] == c)
        / sum(r["wall_time_s"] for r in episodes if r["condition"] == c)
        for c in ("warm", "cold")
    }
    rows = [
        f"| {p['section']} | {p['seconds']:.2f} | {p['us_per_step']:.0f} | {p['share']:.1%} |"
        for p in profile["sections"]
    ]
    lines = [
        f"Memory agent, warm and cold, {', '.join(SEQUENCES)} on dev worlds {worlds[0]}-{worlds[-1]}: "
        f"{len(episodes)} episodes, {steps} steps; job wall time {wall:.1f} s (model loading included)"
        + (f"; overrides {' '.join(args.overrides)}." if args.overrides else "."),
        "",
        "| measure | steps/s |",
        "|---|---:|",
        f"| all steps / episode wall time | **{steps / episode_s:.0f}** |",
        f"| warm episodes | {by_condition['warm']:.0f} |",
        f"| cold episodes | {by_condition['cold']:.0f} |",
        f"| median over episodes of >= 20 steps | {statistics.median(per_episode):.0f} |",
        "",
        "Where the time went (`profile.json`; agent/* sections are parts of `agent`):",
        "",
        "| section | seconds | us per step | share |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
        f"load average at the end {os.getloadavg()[0]:.1f}.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        atomic_write_text(args.out, text + "\n")


if __name__ == "__main__":
    main()
