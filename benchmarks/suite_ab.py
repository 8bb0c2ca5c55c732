"""The core suite at this tree against an earlier commit, paired in one sitting, with the same records.

``floor.py`` measures this tree against its floor; the machine's speed drifts between sittings, so
its figures from two sittings do not tell how much a change saved. This script runs the same core
suite (``benchmarks/suite.py --agents core``: the same multirun, jobs and lanes) in the two trees in
turn (A B A B, one warm-up each), each laid out as installed with its own bytecode cache, and
reports the medians of wall and CPU seconds and of the pair-by-pair ratios (this tree / the earlier
one). It also checks that both trees wrote the same records, timing fields aside: a speed change
that changes what the agents do is not a speed change.

    python benchmarks/suite_ab.py --before 12a077d --split dev --worlds 6 --pairs 3

Writes ``benchmarks/results/suite_ab.md`` (or ``--results``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from multirun import CORE_AGENTS, multirun_command
from startup import Tree, link_tree, short_commit, worktree

from embodmem.metrics_record import TIMING_FIELDS
from embodmem.provenance import Provenance, git_commit, write_results_markdown
from embodmem.splits import SPLIT_NAMES, choose_worlds

ROOT = Path(__file__).resolve().parent.parent
CORE = ["experiment=suite", *CORE_AGENTS]


def run_suite(tree: Tree, command: list[str], out: Path) -> tuple[float, float]:
    """Wall and CPU seconds (every process of the sweep) of ``command`` run in ``tree``'s layout."""
    if out.exists():
        shutil.rmtree(out)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        command,
        cwd=tree.layout,
        env={**tree.environment(), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
        check=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def records(out: Path) -> list[str]:
    """The sweep's records, timing fields and run ids aside, sorted: what the two trees must share."""
    rows = []
    for path in sorted(out.rglob("metrics.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            rows.append(
                json.dumps(
                    {k: v for k, v in record.items() if k not in TIMING_FIELDS and k != "run_id"}, sort_keys=True
                )
            )
    return sorted(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="12a077d", help="the earlier commit")
    parser.add_argument("--split", default="dev", choices=SPLIT_NAMES)
    parser.add_argument("--worlds", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--lanes", type=int, default=32)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results" / "suite_ab.md")
    args = parser.parse_args()
    facts = Provenance.collect()
    before_commit = short_commit(args.before)
    after_commit = git_commit()
    worlds = choose_worlds(args.split, args.worlds, None)
    scratch = Path(tempfile.mkdtemp(prefix="embodmem-suite-ab-"))
    load = [os.getloadavg()[0]]
    times: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
    try:
        with worktree(args.before, scratch / "before-src") as source:
            trees = {
                "before": Tree("before", link_tree(scratch / "before", source), scratch / "pyc-before"),
                "after": Tree("after", link_tree(scratch / "after", ROOT), scratch / "pyc-after"),
            }
            outs = {label: scratch / f"run-{label}" for label in trees}
            commands = {
                label: multirun_command(CORE, args.split, worlds, args.jobs, outs[label], lanes=args.lanes)
                for label in trees
            }
            for round_ in range(args.pairs + 1):  # the first round warms the caches and is not counted
                for label, tree in trees.items():
                    measured = run_suite(tree, commands[label], outs[label])
                    if round_:
                        times[label].append(measured)
                    print(f"{label} round {round_}: {measured[0]:.1f} s wall, {measured[1]:.1f} s CPU", flush=True)
                load.append(os.getloadavg()[0])
            same = records(outs["before"]) == records(outs["after"])
            n_records = len(records(outs["after"]))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    def median(label: str, i: int) -> float:
        return statistics.median(t[i] for t in times[label])

    def ratio(i: int) -> float:
        return statistics.median(a[i] / b[i] for b, a in zip(times["before"], times["after"]))

    body = "\n".join(
        [
            f"Core suite (memory warm and cold, explorer, oracle) on {args.split} worlds {worlds[0]}-{worlds[-1]} "
            f"({len(worlds)} worlds), {args.jobs} jobs, {args.lanes} lanes, at `{after_commit}` against "
            f"`{before_commit}`: the two trees in turn (A B A B), one warm-up each, {args.pairs} pairs; medians of "
            "the runs and of the pair-by-pair ratios (this tree / the earlier one). Seconds are the whole sweep's, "
            "process starts included; CPU is the user + system seconds of all its processes. 1-minute load "
            f"average: {', '.join(f'{x:.1f}' for x in load)} (before, then after each pair).",
            "",
            "| tree | wall s | CPU s |",
            "|---|---:|---:|",
            f"| `{before_commit}` | {median('before', 0):.1f} | {median('before', 1):.1f} |",
            f"| `{after_commit}` | {median('after', 0):.1f} | {median('after', 1):.1f} |",
            f"| **ratio** | **{ratio(0):.2f}** | **{ratio(1):.2f}** |",
            "",
            f"Records ({n_records:,}, timing fields aside): "
            + ("**identical** in the two trees." if same else "**they differ**: this is not a pure speed change."),
        ]
    )
    print(body)
    write_results_markdown(args.results, "The core suite against an earlier commit (paired)", body, facts)
    print(f"\nwritten: {args.results}")


if __name__ == "__main__":
    main()
