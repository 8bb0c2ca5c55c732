"""The memory search's chosen settings, scored on the test split against the defaults.

    python benchmarks/searched_settings.py --search DIR/optimization_results.yaml --worlds 30

The search (``embodmem-run -m experiment=memory_search``; docs/sweeps.md) chose its settings on dev
worlds. This runs the suite's multirun (benchmarks/multirun.py, as benchmarks/suite.py does) twice on
the same test worlds, the memory agent warm and cold on the sequence the search tuned on: once with
the default memory settings, once with the study's ``best_params``. It writes
benchmarks/results/searched_settings.md: the search's best settings, the suite's warm-minus-cold
tables of both runs (paired bootstrap 95% CIs over worlds), and the mean warm SPL of both with the
paired CI of their difference (best minus defaults, resampling worlds).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml
from multirun import multirun_command, run_multirun
from suite import load_records, tables

from embodmem.provenance import Provenance, write_results_markdown
from embodmem.splits import choose_worlds
from embodmem.stats import difference_of_means, paired_ci

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "searched_settings.md"


def warm_spl_by_world(records: list[dict]) -> dict[int, float]:
    """Mean warm SPL per world (the search's objective, world by world)."""
    by_world: dict[int, list[float]] = {}
    for r in records:
        if r.get("condition") == "warm" and r.get("spl") is not None:
            by_world.setdefault(int(r["world_seed"]), []).append(float(r["spl"]))
    return {world: float(np.mean(v)) for world, v in sorted(by_world.items())}


def run_suite(overrides: list[str], worlds: list[int], sequence: str, jobs: int, out: Path) -> list[dict]:
    cmd = multirun_command(["experiment=suite"], "test", worlds, jobs, out, lanes=32)
    cmd += ["experiment.variants=[memory]", "experiment.baselines=[]", f"experiment.sequences=[{sequence}]"]
    cmd += overrides
    print(" ".join(cmd), flush=True)
    run_multirun(cmd)
    return load_records(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--search", type=Path, required=True, help="the search's optimization_results.yaml")
    parser.add_argument("--worlds", type=int, default=30, help="test worlds (the split's first N)")
    parser.add_argument("--sequence", default="shallow_tour6", help="the sequence the search tuned on")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    study = yaml.safe_load(args.search.read_text())
    best = [f"{key}={value}" for key, value in study["best_params"].items()]
    worlds = choose_worlds("test", args.worlds, None)
    with tempfile.TemporaryDirectory() as work:
        default_records = run_suite([], worlds, args.sequence, args.jobs, Path(work) / "defaults")
        best_records = run_suite(best, worlds, args.sequence, args.jobs, Path(work) / "best")
    default_spl, best_spl = warm_spl_by_world(default_records), warm_spl_by_world(best_records)
    common = sorted(set(default_spl) & set(best_spl))
    a = [best_spl[w] for w in common]
    b = [default_spl[w] for w in common]
    lo, hi = paired_ci(a, b, difference_of_means)
    body = [
        f"Search: `{args.search}` (dev worlds), best value {study['best_value']:.4f} (mean warm SPL on dev)  ",
        f"Best settings: `{' '.join(best)}`  ",
        f"Scored on test worlds {worlds[0]}-{worlds[-1]} ({len(common)} worlds), sequence {args.sequence}, "
        "memory agent warm and cold.",
        "",
        "| settings | mean warm SPL (test) | best minus defaults [paired 95% CI over worlds] |",
        "|---|---|---|",
        f"| defaults | {np.mean(b):.3f} | |",
        f"| search's best | {np.mean(a):.3f} | {np.mean(a) - np.mean(b):+.3f} [{lo:+.3f}, {hi:+.3f}] |",
        "",
        "## Defaults: warm minus cold, later tasks",
        "",
        tables(default_records),
        "",
        "## Search's best settings: warm minus cold, later tasks",
        "",
        tables(best_records),
    ]
    path = write_results_markdown(
        args.out, "Memory search: the chosen settings on the test split", "\n".join(body), Provenance.collect()
    )
    print("\n".join(body))
    print(f"\nwrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
