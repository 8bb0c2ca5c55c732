"""False memories: what K implanted frames of the target (seen in other worlds, stored at places far
from every drum) cost the memory agent, against having no memory at all.

For each placement (``experiment.poison_place``: ``far``, random free cells; ``trail``, cells the robot
really passed in task 1) and each K, runs wreck_then_barrel with the memory agent warm (K false
memories implanted before task 2) and cold (no memory), through benchmarks/suite.py's multirun, and
prints task 2's success and SPL with bootstrap 95% CIs over worlds, split by whether the drums were
really seen in task 1, and pooled.

    python benchmarks/poison.py --split test --worlds 100 --k 0,1,5,20,100 --places far,trail
    python benchmarks/poison.py --split custom --first 700000 --worlds 20 --k 20 --places trail --jobs 1
    python benchmarks/poison.py --split test --worlds 100 --k 20 --places trail --variants memory,textlog,memory_keep_all

With ``--variants`` naming more than one memory system, the table gets an ``agent`` column and a row
group per system, each against its own cold run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from multirun import results_title
from suite import ROOT, load_records

from embodmem.provenance import Provenance, write_results_markdown
from embodmem.splits import SPLIT_NAMES, choose_worlds
from embodmem.stats import difference_of_means, mean_ci, paired_ci


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=SPLIT_NAMES)
    parser.add_argument("--worlds", type=int, default=50)
    parser.add_argument(
        "--first", type=int, default=None, help="first world seed (default: the split's first; required with custom)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="parallel jobs of each multirun (joblib launcher)")
    parser.add_argument("--dry-run", action="store_true", help="print the multirun commands and exit")
    parser.add_argument("--k", default="0,1,5,20,100")
    parser.add_argument("--places", default="far", help="comma-separated experiment.poison_place values: far,trail")
    parser.add_argument(
        "--variants", default="memory", help="comma-separated memory systems (experiment.variants): memory,textlog,..."
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="also write the table here with the command, commit and machine (e.g. benchmarks/results/poison_test.md)",
    )
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides, e.g. agent.min_viewpoints=3")
    args = parser.parse_args()
    try:
        choose_worlds(args.split, args.worlds, args.first)  # refuse a bad range before any run starts
    except ValueError as err:
        parser.error(str(err))
    out = args.out or ROOT / "multirun" / f"poison-{args.split}"
    variants = args.variants.split(",")
    named = len(variants) > 1  # an agent column only when the table holds more than one system
    rows = [
        ("| agent " if named else "")
        + "| placed | K | drums seen in task 1 | n | warm success [95% CI] | cold success | warm SPL [95% CI] | "
        "cold SPL | warm - cold SPL [95% CI] |",
        ("|---" if named else "") + "|---|---:|---|---:|---|---:|---|---:|---|",
    ]
    for place in args.places.split(","):
        for k in [int(v) for v in args.k.split(",")]:
            directory = out / (f"k{k}" if place == "far" else f"{place}-k{k}")
            if not any(directory.rglob("metrics.jsonl")):
                cmd = [
                    sys.executable,
                    str(ROOT / "benchmarks" / "suite.py"),
                    "--split",
                    args.split,
                    "--worlds",
                    str(args.worlds),
                    *(["--first", str(args.first)] if args.first is not None else []),
                    "--jobs",
                    str(args.jobs),
                    "--agents",
                    "quick",
                    "--sequences",
                    "wreck_then_barrel",
                    "--out",
                    str(directory),
                    f"experiment.poison_k={k}",
                    f"experiment.poison_place={place}",
                    "experiment.baselines=[]",
                    f"experiment.variants=[{args.variants}]",
                    *args.overrides,
                ]
                if args.dry_run:
                    print(" ".join(cmd), flush=True)
                    continue
                subprocess.run(cmd, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=subprocess.DEVNULL)
            task2 = [r for r in load_records(directory) if r["task_index"] == 2]
            for variant in variants:
                rows += _rows([r for r in task2 if r["agent"] == variant], f"| {variant} " if named else "", place, k)
    if not args.dry_run:
        print("\n".join(rows))
        if args.results is not None:
            title = results_title(f"False memories, {args.split} worlds", args.overrides)
            write_results_markdown(args.results, title, "\n".join(rows), Provenance.collect())


def _rows(recs: list[dict], prefix: str, place: str, k: int) -> list[str]:
    """Task 2's rows for one memory system: seen, not seen and pooled, warm against cold."""
    out: list[str] = []
    warm = {r["world_seed"]: r for r in recs if r["condition"] == "warm"}
    cold = {r["world_seed"]: r for r in recs if r["condition"] == "cold"}
    for group in ("seen", "not seen", "all"):
        worlds = sorted(
            w
            for w in warm
            if w in cold and (group == "all" or bool(warm[w]["target_seen_before"]) == (group == "seen"))
        )
        if len(worlds) < 2:
            continue
        ws = np.array([warm[w]["success"] for w in worlds], float)
        cs = np.array([cold[w]["success"] for w in worlds], float)
        wspl = np.array([warm[w]["spl"] for w in worlds])
        cspl = np.array([cold[w]["spl"] for w in worlds])
        slo, shi = mean_ci(ws)
        plo, phi = mean_ci(wspl)
        dlo, dhi = paired_ci(wspl, cspl, difference_of_means)
        out.append(
            f"{prefix}| {place} | {k} | {group} | {len(worlds)} | {ws.mean():.2f} [{slo:.2f}, {shi:.2f}] | {cs.mean():.2f} | "
            f"{wspl.mean():.2f} [{plo:.2f}, {phi:.2f}] | {cspl.mean():.2f} | "
            f"{float(difference_of_means(wspl, cspl)):+.2f} [{dlo:+.2f}, {dhi:+.2f}] |"
        )
    return out


if __name__ == "__main__":
    main()
