"""How the core suite grows: peak memory and wall per additional world and per additional task, and
the peak memory of a one-million-frame memory store.

    python benchmarks/scale.py                                  # all three parts on dev worlds
    python benchmarks/scale.py --parts memory --frames 1000000  # the store alone

- ``worlds``: the core suite (``benchmarks/suite.py --agents core``, the same multirun, jobs and
  lanes) on ``--worlds`` sizes of the dev split; wall seconds and the largest process's peak RSS (a
  job's worker: each holds one job at a time), and the slope per additional world (least squares
  over the sizes).
- ``tasks``: one sequence of the first N tasks of ``shallow_tour6`` (``--tasks`` sizes) on
  ``--task-worlds`` dev worlds, the same agents; the slope per additional task of the sequence.
- ``memory``: a :class:`~embodmem.memory.store.LongTermStore` (the ``memory`` config's default
  index, and ``--factories``) filled with ``--frames`` synthetic 128-d unit vectors with their
  metadata (benchmarks/bench_memory.py's clustered vectors), each in a fresh process; its peak RSS
  against the same process before the store, and the store's own bytes per frame.

Each size runs in its own process, so each peak is its own. After one uncounted warm-up run, the
sizes are run ``--repeats`` times, in rounds (ascending, then descending, alternately, so a drift of
the machine's load tilts no slope one way); each round gives its own least-squares slope, and the table reports the median
slope with a bootstrap 95% interval over the rounds (:func:`embodmem.stats.mean_ci`), for the wall
and for the CPU seconds of the suite's processes (which other work on the machine inflates far
less). Writes ``benchmarks/results/scale.md``. The memory figures do not depend on the load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from multirun import CORE_AGENTS, multirun_command, run_multirun

from embodmem.provenance import Provenance, write_results_markdown
from embodmem.splits import choose_worlds
from embodmem.stats import mean_ci

ROOT = Path(__file__).resolve().parent.parent
CORE = list(CORE_AGENTS)


def peak_mib() -> float:
    """The largest finished descendant's peak resident set (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def resident_mib() -> float:
    """This process's resident set now (Linux ``/proc/self/statm``)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def child(argv: list[str]) -> dict[str, float]:
    """Run this script's ``--child`` mode in a fresh process; what it printed last (JSON)."""
    out = subprocess.run([sys.executable, __file__, "--child", *argv], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_suite(experiment: list[str], worlds: list[int]) -> dict[str, float]:
    """(in the child) One core-suite multirun: its wall and its largest process's peak."""
    with tempfile.TemporaryDirectory() as scratch:
        cmd = multirun_command(experiment + CORE, "dev", worlds, 2, Path(scratch) / "run", lanes=32)
        wall = run_multirun(cmd)
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        steps = 0
        for path in Path(scratch).rglob("profile.json"):
            steps += json.loads(path.read_text())["steps"]
    return {
        "wall_s": wall,
        "cpu_s": used.ru_utime + used.ru_stime,
        "peak_mib": peak_mib(),
        "steps": steps,
        "load": os.getloadavg()[0],
    }


def fill_store(factory: str, frames: int) -> dict[str, float]:
    """(in the child) A store of ``frames`` synthetic records: peak RSS before and after, bytes."""
    from bench_memory import columns, synthetic

    from embodmem.memory import MemoryConfig
    from embodmem.memory.store import LongTermStore

    config = MemoryConfig(dim=128, index_factory=factory) if factory else MemoryConfig(dim=128)
    base, _, place = synthetic(frames, 1, 128, seed=0)
    before = resident_mib()
    store = LongTermStore(config)
    started = time.perf_counter()
    for lo in range(0, frames, 10_000):
        hi = min(lo + 10_000, frames)
        store.add(base[lo:hi], columns(store, place, lo, hi), np.arange(lo, hi))
    seconds = time.perf_counter() - started
    vectors_mib = base.nbytes / 2**20
    del base, place
    return {
        "before_mib": before,
        "after_mib": resident_mib(),
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "vectors_mib": vectors_mib,
        "records": float(len(store)),
        "fill_s": seconds,
        "index": config.index_factory,
    }  # type: ignore[dict-item]


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ``ys`` over ``xs``."""
    return float(np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)[0])


def round_slopes(rounds: list[list[tuple[int, dict[str, float]]]], key: str) -> list[float]:
    """Each round's least-squares slope of ``key`` over the sizes."""
    return [slope([float(n) for n, _ in runs], [r[key] for _, r in runs]) for runs in rounds]


def slope_summary(per_round: list[float]) -> str:
    """The median of the rounds' slopes and the bootstrap 95% interval of their mean."""
    low, high = mean_ci(per_round)
    interval = f" (95% CI {low:.1f} to {high:.1f}, {len(per_round)} rounds)" if len(per_round) > 1 else " (1 round)"
    return f"{float(np.median(per_round)):.1f}{interval}"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        what = sys.argv[2]
        if what == "suite":
            print(json.dumps(run_suite(json.loads(sys.argv[3]), json.loads(sys.argv[4]))))
        else:
            print(json.dumps(fill_store(sys.argv[3], int(sys.argv[4]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="memory,worlds,tasks")
    parser.add_argument("--worlds", default="4,8,12", help="world counts for the per-world slope")
    parser.add_argument("--tasks", default="2,4,6", help="sequence lengths for the per-task slope")
    parser.add_argument("--task-worlds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3, help="rounds over the sizes (a slope per round)")
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--factories", default=",SQ8", help="index factories ('' = the memory config's default)")
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results" / "scale.md")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats={args.repeats} is not allowed; allowed: >= 1")
    parts = args.parts.split(",")
    lines: list[str] = []
    if "memory" in parts:
        lines += [
            f"### A memory store of {args.frames:,} frames (synthetic 128-d unit vectors with metadata)",
            "",
            "| index | records kept | RSS before the store (with the input vectors) MiB | input vectors MiB | RSS after (store kept, vectors freed) MiB | the store's own MiB | per 1M frames MiB | process peak RSS MiB | fill s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for factory in args.factories.split(","):
            m = child(["memory", factory, str(args.frames)])
            grown = m["after_mib"] - (m["before_mib"] - m["vectors_mib"])
            lines.append(
                f"| {m['index']} | {m['records']:,.0f} | {m['before_mib']:,.0f} | {m['vectors_mib']:,.0f} | {m['after_mib']:,.0f} "
                f"| {grown:,.0f} | {grown * 1e6 / args.frames:,.0f} | {m['peak_mib']:,.0f} | {m['fill_s']:.1f} |"
            )
            print(lines[-1], flush=True)
        lines.append("")
        lines.append(
            "The input vectors are generated before the store and freed after it is filled: the store's own memory is "
            "the resident set after, less the resident set before without the vectors."
        )
    for part, sizes, label in (("worlds", args.worlds, "world"), ("tasks", args.tasks, "task")):
        if part not in parts:
            continue
        counts = [int(n) for n in sizes.split(",")]
        runs: dict[int, list[dict[str, float]]] = {n: [] for n in counts}
        per_round: list[list[tuple[int, dict[str, float]]]] = []

        def suite_of_size(n: int, part: str = part) -> dict[str, float]:
            if part == "worlds":
                experiment = ["experiment=suite"]
                worlds = choose_worlds("dev", n, None)
            else:
                tour = ["wreck", "barrel", "mining_robot", "electrical_box", "aircraft", "wind_station"][:n]
                experiment = ["experiment=suite", "experiment.sequences=[]", f"experiment.tasks=[{','.join(tour)}]"]
                worlds = choose_worlds("dev", args.task_worlds, None)
            return child(["suite", json.dumps(experiment), json.dumps(worlds)])

        # One uncounted run first: the first sweep after a change pays for reading the files and the
        # compiled kernels' cache, which would tilt the first round's slope.
        print(f"{part} {counts[0]} (warm-up, not counted): {suite_of_size(counts[0])}", flush=True)
        for round_ in range(args.repeats):
            this_round = []
            for n in counts if round_ % 2 == 0 else counts[::-1]:
                r = suite_of_size(n)
                runs[n].append(r)
                this_round.append((n, r))
                print(f"{part} {n} (round {round_ + 1}): {r}", flush=True)
            per_round.append(this_round)
        what = (
            "dev worlds, the six sequences of the suite"
            if part == "worlds"
            else f"tasks of one sequence (the first N of shallow_tour6), {args.task_worlds} dev worlds"
        )
        lines += [
            "",
            f"### Per additional {label}: core suite (memory warm and cold, explorer, oracle), 2 jobs, 32 lanes; N = {what}",
            "",
            f"Medians over {args.repeats} rounds, after one uncounted warm-up run:",
            "",
            "| N | agent steps | wall s | CPU s (the suite's processes) | largest process peak RSS MiB | load average at the ends |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        for n in counts:
            rs = runs[n]
            loads = [r["load"] for r in rs]
            lines.append(
                f"| {n} | {np.median([r['steps'] for r in rs]):,.0f} | {np.median([r['wall_s'] for r in rs]):.1f} "
                f"| {np.median([r['cpu_s'] for r in rs]):.1f} | {np.median([r['peak_mib'] for r in rs]):,.0f} "
                f"| {min(loads):.1f}-{max(loads):.1f} |"
            )

        lines += [
            "",
            f"Slope per additional {label} (least squares over {len(counts)} sizes in each round; median of the "
            f"rounds' slopes, bootstrap 95% interval of their mean): **{slope_summary(round_slopes(per_round, 'wall_s'))} s wall**, "
            f"**{slope_summary(round_slopes(per_round, 'cpu_s'))} CPU s**, {slope_summary(round_slopes(per_round, 'peak_mib'))} MiB peak RSS, "
            f"{float(np.median(round_slopes(per_round, 'steps'))):,.0f} agent steps.",
        ]
    body = "\n".join(lines)
    print(body)
    write_results_markdown(args.results, "How the suite and the memory grow", body, Provenance.collect())
    print(f"\nwritten: {args.results}")


if __name__ == "__main__":
    main()
