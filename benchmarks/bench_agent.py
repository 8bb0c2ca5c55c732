"""The memory agent's end-to-end step rate, with the profile of where the time goes.

Runs the memory agent (warm and cold) through ``embodmem.app.run`` (the function behind
``embodmem-run``: environment, CLIP on ONNX Runtime, memory, mapping, planning, metrics) on dev
worlds, in this process, with one thread, after untimed warm-up jobs: once with the sequential
runner and once in lockstep (``experiment.lanes``), one right after the other, and says whether the
two wrote the same records. Steps per second are the agent's steps divided by the wall time of the
run's loop (``profile.json``'s ``loop_s``: model loading and the report excluded); the profile
splits that time by section (env, agent/embedding, agent/mapping, ...). Run it alone: a second busy
process on a 2-core machine slows both.

    python benchmarks/bench_agent.py                         # 10 dev worlds, sequential and 32 lanes
    python benchmarks/bench_agent.py --out benchmarks/results/agent_speed.md
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from hydra import compose, initialize_config_module

import embodmem.app as app
from embodmem.metrics_record import TIMING_FIELDS, EpisodeRecord
from embodmem.profiling import RunProfile
from embodmem.provenance import Provenance, write_results_markdown
from embodmem.splits import get_split

SEQUENCES = ("wreck_then_barrel", "shallow_tour6", "deep_pair")


def run_job(worlds: list[int], first: int, extra: list[str]) -> tuple[list[dict], RunProfile]:
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
        profile: RunProfile = json.loads((Path(tmp) / "run" / "profile.json").read_text())
    return [r.plain() for r in records if isinstance(r, EpisodeRecord)], profile


def same_records(a: list[dict], b: list[dict]) -> bool:
    """Whether two runs wrote the same records (every field but wall-clock times), in any order."""

    def keyed(records: list[dict]) -> dict[tuple, dict]:
        return {
            (r["sequence"], r["world_seed"], r["condition"], r["task_index"], r.get("eval_after")): {
                k: v for k, v in r.items() if k not in TIMING_FIELDS and k != "episode_log"
            }
            for r in records
        }

    return keyed(a) == keyed(b)


def section_rows(profile: RunProfile) -> list[str]:
    return [
        f"| {p['section']} | {p['seconds']:.2f} | {p['us_per_step']:.0f} | {p['share']:.1%} |"
        for p in profile["sections"]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=10, help="dev worlds (default 10)")
    parser.add_argument("--first", type=int, default=1400, help="first dev world (default 1400)")
    parser.add_argument("--lanes", type=int, default=32, help="lanes of the lockstep run (default 32; 0: none)")
    parser.add_argument(
        "--out", type=Path, default=None, help="also write the table (Markdown) with the command, commit and machine"
    )
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides, e.g. agent.relocalise=false")
    args = parser.parse_args()
    worlds = get_split("dev").worlds(args.worlds, first=args.first)
    run_job(worlds[:1], args.first, args.overrides)  # warm-up: imports, model files, ONNX sessions
    runs = {"sequential": ["experiment.lanes=0"]}
    if args.lanes:
        run_job(worlds[:1], args.first, [*args.overrides, f"experiment.lanes={args.lanes}"])  # the batch graph
        runs[f"lockstep, {args.lanes} lanes"] = [f"experiment.lanes={args.lanes}"]
    results = {name: run_job(worlds, args.first, [*args.overrides, *extra]) for name, extra in runs.items()}
    records, profile = results["sequential"]
    episodes = [r for r in records if r["condition"] in ("warm", "cold")]
    steps = sum(r["steps"] for r in episodes)
    lines = [
        f"Memory agent, warm and cold, {', '.join(SEQUENCES)} on dev worlds {worlds[0]}-{worlds[-1]}: "
        f"{len(episodes)} episodes, {steps} steps, one thread"
        + (f"; overrides {' '.join(args.overrides)}." if args.overrides else "."),
        "",
        "Steps per second: all steps over the wall time of the run's loop (every episode, building the",
        "agents and envs, writing records and logs; not model loading, not the report).",
        "",
        "| run | loop wall s | steps/s | ratio | records |",
        "|---|---:|---:|---:|---|",
    ]
    base = steps / profile["loop_s"]
    for name, (recs, prof) in results.items():
        rate = steps / prof["loop_s"]
        same = "reference" if name == "sequential" else ("identical" if same_records(records, recs) else "DIFFER")
        lines.append(f"| {name} | {prof['loop_s']:.1f} | **{rate:.0f}** | {rate / base:.2f}x | {same} |")
    for name, (_, prof) in results.items():
        lines += [
            "",
            f"Where the time went, {name} (`profile.json`; agent/* sections are parts of `agent`):",
            "",
            "| section | seconds | us per step | share |",
            "|---|---:|---:|---:|",
            *section_rows(prof),
        ]
    lines += [
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
        f"load average at the end {os.getloadavg()[0]:.1f}.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        write_results_markdown(args.out, "Memory agent step rate", text, Provenance.collect())


if __name__ == "__main__":
    main()
