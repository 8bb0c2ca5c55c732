"""Memory under dead-reckoning drift: how the warm gain shrinks as the drift rate grows.

For each drift rate (``env=drift env.odometry_drift_pct=R``: the pose error grows by R% of the
distance travelled, carried across the tasks of a world visit; sonar noise 1.5 m and 10% dropouts),
runs the suite's sequences with the memory agent warm and cold through benchmarks/suite.py, then
prints one row per rate and sequence (later tasks pooled): success and SPL warm and cold, the
warm-minus-cold SPL with a 95% CI that resamples whole worlds, the steps ratio, and the paired
episodes where warm failed and cold succeeded; and plots warm and cold success and the SPL gain
against the rate.

    python benchmarks/drift.py --split test --worlds 20 --rates 0.5,2,5 --jobs 1
    python benchmarks/drift.py --split custom --first 700000 --worlds 10 --rates 2 --jobs 1
    python benchmarks/drift.py --out multirun/drift-test --rates 0.5,2,5 --plot benchmarks/results/drift_test.png  # re-print

Only the benchmark scripts read the test split, to report; choose nothing from it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from suite import ROOT, load_records, lost_to_cold

from embodmem.provenance import Provenance, write_results_markdown
from embodmem.splits import SPLIT_NAMES, choose_worlds
from embodmem.stats import difference_of_means, paired_ci, ratio_of_means


def rate_rows(rate: float, records: list[dict]) -> tuple[list[str], dict[str, tuple[float, float, float]]]:
    """Table rows of one rate, and per sequence (warm success, cold success, SPL gain) for the plot."""
    runs = [r for r in records if r["agent"] == "memory" and r["task_index"] >= 2]
    by_key = {(r["sequence"], r["world_seed"], r["seed"], r["task_index"], r["condition"]): r for r in runs}
    rows, points = [], {}
    for sequence in sorted({r["sequence"] for r in runs}):
        keys = sorted({k[:4] for k in by_key if k[0] == sequence})
        pairs = [
            (by_key[(*k, "warm")], by_key[(*k, "cold")])
            for k in keys
            if (*k, "warm") in by_key and (*k, "cold") in by_key
        ]
        if not pairs:
            continue
        worlds = [w["world_seed"] for w, _ in pairs]
        ws, cs = (np.array([p[i]["success"] for p in pairs], float) for i in (0, 1))
        wspl, cspl = (np.array([p[i]["spl"] for p in pairs]) for i in (0, 1))
        wst, cst = (np.array([p[i]["steps"] for p in pairs], float) for i in (0, 1))
        seen = np.array([bool(w["target_seen_before"]) for w, _ in pairs])
        d = float(difference_of_means(wspl, cspl))
        lo, hi = paired_ci(wspl, cspl, difference_of_means, clusters=worlds)
        q = float(ratio_of_means(wst, cst))
        lost = lost_to_cold(pairs)
        seen_text = f"{ws[seen].mean():.2f} / {cs[seen].mean():.2f}" if seen.any() else "-"
        rows.append(
            f"| {rate:g} | {sequence} | {len(set(worlds))} | {len(pairs)} | {ws.mean():.2f} | {cs.mean():.2f} | {seen_text} | "
            f"{wspl.mean():.2f} | {cspl.mean():.2f} | {d:+.2f} [{lo:+.2f}, {hi:+.2f}] | {q:.2f} | "
            f"{lost.episodes}; {lost.worlds} of {lost.n_worlds} worlds |"
        )
        points[sequence] = (float(ws.mean()), float(cs.mean()), d)
    return rows, points


def plot(points: dict[float, dict[str, tuple[float, float, float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from embodmem.atomic import atomic_write_with

    rates = sorted(points)
    sequences = sorted({s for p in points.values() for s in p})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for s in sequences:
        xs = [r for r in rates if s in points[r]]
        line = axes[0].plot(xs, [points[r][s][0] for r in xs], marker="o", label=s)[0]
        axes[0].plot(xs, [points[r][s][1] for r in xs], marker="x", linestyle="--", color=line.get_color())
        axes[1].plot(xs, [points[r][s][2] for r in xs], marker="o", label=s)
    axes[0].set(xlabel="drift, % of distance travelled", ylabel="success (later tasks)", title="warm (o) and cold (x)")
    axes[1].set(xlabel="drift, % of distance travelled", ylabel="SPL warm - cold", title="the gain of memory")
    axes[1].axhline(0.0, color="grey", linewidth=0.8)
    for ax in axes:
        ax.set_xscale("symlog", linthresh=0.5)  # rate 0 (no drift) on the same axis
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    atomic_write_with(path, lambda fh: fig.savefig(fh, format="png", dpi=110))
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=SPLIT_NAMES)
    parser.add_argument("--worlds", type=int, default=20)
    parser.add_argument("--first", type=int, default=None, help="first world seed (required with --split custom)")
    parser.add_argument("--rates", default="0.5,2,5", help="comma-separated drift rates, %% of distance travelled")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="directory of the runs (one folder per rate)")
    parser.add_argument("--plot", type=Path, default=None, help="write the plot here (PNG)")
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="also write the table here with the command, commit and machine (e.g. benchmarks/results/drift_test.md)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the suite commands and exit")
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides")
    args = parser.parse_args()
    try:
        choose_worlds(args.split, args.worlds, args.first)
        rates = [float(r) for r in args.rates.split(",")]
    except ValueError as err:
        parser.error(str(err))
    if any(r < 0 or r > 100 for r in rates):
        parser.error(f"--rates: {args.rates} is not allowed; allowed: numbers in [0, 100]")
    out = args.out or ROOT / "multirun" / f"drift-{args.split}"
    table = [
        "| drift % | sequence | worlds | n | warm success | cold success | seen: warm / cold success | warm SPL | "
        "cold SPL | SPL warm-cold [95% CI, by world] | steps cold/warm | warm failed, cold succeeded |",
        "|---:|---|---:|---:|---:|---:|---|---:|---:|---|---:|---|",
    ]
    points = {}
    for rate in rates:
        directory = out / f"rate{rate:g}"
        if not any(directory.rglob("metrics.jsonl")):
            cmd = [
                sys.executable, str(ROOT / "benchmarks" / "suite.py"), "--split", args.split, "--worlds", str(args.worlds),
                *(["--first", str(args.first)] if args.first is not None else []),
                "--jobs", str(args.jobs), "--agents", "memory", "--out", str(directory),
                "env=drift", f"env.odometry_drift_pct={rate:g}", *args.overrides,
            ]  # fmt: skip
            print(" ".join(cmd), flush=True)
            if args.dry_run:
                continue
            subprocess.run(cmd, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=subprocess.DEVNULL)
        rows, points[rate] = rate_rows(rate, load_records(directory))
        table += rows
    if args.dry_run:
        return
    print("\n".join(table))
    if args.plot is not None:
        plot(points, args.plot)
    if args.results is not None:
        title = f"Memory under dead-reckoning drift, {args.split} worlds"
        write_results_markdown(args.results, title, "\n".join(table), Provenance.collect())


if __name__ == "__main__":
    main()
