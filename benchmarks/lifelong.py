"""Lifelong memory: a tour of 50 tasks in one world, warm against cold, and memory under byte budgets.

Runs ``experiment=lifelong`` (sequence ``lifelong50``: 50 tasks drawn with repetition from all
twelve, sleep between tasks) as a Hydra multirun over a split's worlds, then prints and plots,
against the task number: success, SPL and steps (warm vs cold, means with 95% CIs over worlds),
memory frames and bytes, the median memory-query latency and the step rate. With ``--budgets`` it
runs the warm tour under each byte budget and eviction policy and plots warm SPL against the budget.

    python benchmarks/lifelong.py --split test --worlds 20 --env world64                  # the tour
    python benchmarks/lifelong.py --split test --worlds 10 --env world64 --budgets 16384,65536,262144,none
    python benchmarks/lifelong.py --split test --worlds 5 --env world64 --jobs 1 --out multirun/lifelong-rate \
        experiment.conditions=[warm]                                                     # step rate, run alone
    python benchmarks/lifelong.py --from-dir multirun/lifelong-test-world64              # re-print and re-plot
    python benchmarks/lifelong.py --from-dir multirun/lifelong-budgets-test-world64 --tour-dir multirun/lifelong-test-world64
        # the budget table and plot, with the tour's unlimited warm runs of the same worlds beside them

Only this script and suite.py read the test split, to report; choose nothing from it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml
from suite import ROOT

from embodmem.atomic import atomic_write_with
from embodmem.provenance import Provenance, write_results_markdown
from embodmem.splits import SPLIT_NAMES, choose_worlds
from embodmem.stats import mean_ci, ratio_of_means

LAST = range(41, 51)
"""The tour's last ten tasks, where the bars are read."""


def load_runs(directory: Path) -> list[dict]:
    """Every record of a multirun, with the job's ``memory.byte_budget`` and ``memory.eviction``."""
    import json

    records = []
    for path in sorted(directory.rglob("metrics.jsonl")):
        overrides_file = path.parent / ".hydra" / "overrides.yaml"
        overrides = yaml.safe_load(overrides_file.read_text()) if overrides_file.exists() else []
        settings = dict(o.split("=", 1) for o in overrides if "=" in o)
        for line in path.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                record["byte_budget"] = settings.get("memory.byte_budget", "null")
                record["eviction"] = settings.get("memory.eviction", "fifo")
                records.append(record)
    return records


def per_task(records: list[dict], condition: str, field: str) -> dict[int, np.ndarray]:
    """``field`` of every world's record, per task number, for one condition."""
    out: dict[int, list[float]] = {}
    for r in records:
        if r["condition"] == condition and r.get(field) is not None:
            out.setdefault(int(r["task_index"]), []).append(float(r[field]))
    return {t: np.array(v) for t, v in sorted(out.items())}


def step_rate(r: dict) -> float:
    return r["steps"] / r["wall_time_s"] if r["wall_time_s"] > 0 else float("nan")


def tour_report(records: list[dict]) -> str:
    """The bars' figures: tasks 41-50 warm SPL and steps against cold, and the step rate."""
    for r in records:
        r["step_rate"] = step_rate(r)
    warm = {(r["world_seed"], r["task_index"]): r for r in records if r["condition"] == "warm"}
    cold = {(r["world_seed"], r["task_index"]): r for r in records if r["condition"] == "cold"}
    worlds = sorted({w for w, _ in warm})
    keys = [k for k in warm if k[1] in LAST and k in cold]
    rates = per_task(records, "warm", "step_rate")
    r5, r50 = float(np.median(rates[5])), float(np.median(rates[max(rates)]))
    lines = [f"worlds: {len(worlds)} ({worlds[0]}-{worlds[-1]}), tasks per tour: {max(t for _, t in warm)}", ""]
    if keys:  # warm against cold (a warm-only run, e.g. for the step rate, has no cold records)
        w_spl = np.array([warm[k]["spl"] for k in keys])
        w_steps = np.array([warm[k]["steps"] for k in keys], float)
        c_steps = np.array([cold[k]["steps"] for k in keys], float)
        # Worlds are the unit of resampling: mean over each world's last ten tasks first.
        by_world = {w: [k for k in keys if k[0] == w] for w in worlds}
        world_spl = np.array([np.mean([warm[k]["spl"] for k in ks]) for ks in by_world.values() if ks])
        lo, hi = mean_ci(world_spl)
        w_succ, c_succ = np.mean([warm[k]["success"] for k in keys]), np.mean([cold[k]["success"] for k in keys])
        ratio = float(ratio_of_means(w_steps, c_steps))
        lines += [
            "| measure (tasks 41-50) | warm | cold | bar |",
            "|---|---:|---:|---|",
            f"| success | {w_succ:.2f} | {c_succ:.2f} | |",
            f"| SPL [95% CI over worlds] | {w_spl.mean():.2f} [{lo:.2f}, {hi:.2f}] | "
            f"{np.mean([cold[k]['spl'] for k in keys]):.2f} | warm >= 0.80 |",
            f"| mean steps | {w_steps.mean():.1f} | {c_steps.mean():.1f} | warm <= cold / 3 (cold/warm {ratio:.2f}) |",
            "",
        ]
    lines.append(
        f"step rate (warm, median over worlds): task 5 {r5:.0f} steps/s, task {max(rates)} {r50:.0f} steps/s, "
        f"ratio {r50 / r5:.2f} (bar >= 0.80); tasks 1-10 {np.median(np.concatenate([rates[t] for t in range(1, 11)])):.0f}, "
        f"tasks 41-50 {np.median(np.concatenate([rates[t] for t in LAST])):.0f} steps/s"
    )
    return "\n".join(lines)


def plot_tour(records: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for r in records:
        r["step_rate"] = step_rate(r)
        r["memory_kib"] = r.get("memory_bytes", 0) / 1024
    panels = [
        ("success", "success"),
        ("spl", "SPL"),
        ("steps", "steps"),
        ("memory_frames", "memory frames"),
        ("memory_kib", "memory code (KiB)"),
        ("memory_query_ms", "query latency (ms, median)"),
        ("step_rate", "steps/s"),
    ]
    fig, axes = plt.subplots(2, 4, figsize=(16, 7))
    for ax, (field, label) in zip(axes.flat, panels):
        for condition, color in (("warm", "tab:blue"), ("cold", "tab:orange")):
            series = per_task(records, condition, field)
            if not series or (condition == "cold" and field.startswith("memory")):
                continue
            tasks = np.array(list(series))
            means = np.array([v.mean() for v in series.values()])
            cis = np.array([mean_ci(v) if len(v) > 1 else (m, m) for v, m in zip(series.values(), means)])
            ax.plot(tasks, means, color=color, label=condition)
            ax.fill_between(tasks, cis[:, 0], cis[:, 1], color=color, alpha=0.2)
        ax.set_title(label)
        ax.set_xlabel("task number")
    axes.flat[0].legend()
    axes.flat[-1].axis("off")
    fig.suptitle("Lifelong tour (lifelong50): means over worlds, 95% CIs")
    fig.tight_layout()
    atomic_write_with(path, lambda fh: fig.savefig(fh, format="png", dpi=90))
    plt.close(fig)


def budget_report(records: list[dict], path: Path | None) -> str:
    """Warm SPL of tasks 2-50 and 41-50 per (byte budget, eviction)."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        if r["condition"] == "warm" and r["task_index"] >= 2:
            groups.setdefault((r["byte_budget"], r["eviction"]), []).append(r)

    def budget_key(b: str) -> float:
        return float("inf") if b in ("null", "none", "None") else float(b)

    lines = [
        "| byte budget | eviction | frames kept (task 50) | warm SPL tasks 2-50 [95% CI] | warm SPL tasks 41-50 |",
        "|---:|---|---:|---|---:|",
    ]
    curves: dict[str, list[tuple[float, float]]] = {}
    for (budget, eviction), rows in sorted(groups.items(), key=lambda kv: (budget_key(kv[0][0]), kv[0][1])):
        worlds = sorted({r["world_seed"] for r in rows})
        per_world = np.array([np.mean([r["spl"] for r in rows if r["world_seed"] == w]) for w in worlds])
        lo, hi = mean_ci(per_world)
        last = np.mean([r["spl"] for r in rows if r["task_index"] in LAST])
        frames = np.median([r["memory_frames"] for r in rows if r["task_index"] == max(x["task_index"] for x in rows)])
        label = "unlimited" if budget_key(budget) == float("inf") else f"{int(budget) // 1024} KiB"
        lines.append(
            f"| {label} | {eviction} | {frames:.0f} | {per_world.mean():.2f} [{lo:.2f}, {hi:.2f}] | {last:.2f} |"
        )
        curves.setdefault(eviction, []).append((budget_key(budget), per_world.mean()))
    # An unlimited memory evicts nothing: its one point ends every policy's curve.
    shared = curves.pop("any (unlimited)", [])
    for pts in curves.values():
        pts.extend(shared)
    if not curves and shared:
        curves["unlimited"] = shared
    if path is not None and curves:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        finite = [b for pts in curves.values() for b, _ in pts if np.isfinite(b)]
        top = max(finite) * 4 if finite else 1.0
        for eviction, pts in curves.items():
            xs = [b if np.isfinite(b) else top for b, _ in pts]
            ax.plot(xs, [s for _, s in pts], marker="o", label=eviction)
        ax.set_xscale("log")
        ax.set_xlabel("byte budget of vector code (rightmost point: unlimited)")
        ax.set_ylabel("warm SPL, tasks 2-50")
        ax.legend()
        ax.set_title("What a robot with N bytes can still reuse")
        fig.tight_layout()
        atomic_write_with(path, lambda fh: fig.savefig(fh, format="png", dpi=90))
        plt.close(fig)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=SPLIT_NAMES)
    parser.add_argument("--worlds", type=int, default=20)
    parser.add_argument(
        "--first",
        type=int,
        default=None,
        help="first world seed (default: the split's first; required with --split custom)",
    )
    parser.add_argument("--env", default="world64", help="env config: default (32), world64, large (128)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--budgets", default=None, help="comma-separated byte budgets ('none': unlimited): warm tours under each"
    )
    parser.add_argument("--evictions", default="fifo,least_used,places,kinds")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--from-dir", type=Path, default=None)
    parser.add_argument(
        "--tour-dir",
        type=Path,
        default=None,
        help="with budgets: a tour run whose warm records of the same worlds are the unlimited reference",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="also write the report here with the command, commit and machine "
        "(e.g. benchmarks/results/lifelong_test_world64.md)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the multirun command and exit")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    budgets = args.budgets is not None
    directory = (
        args.from_dir
        or args.out
        or ROOT / "multirun" / f"lifelong{'-budgets' if budgets else ''}-{args.split}-{args.env}"
    )
    if args.from_dir is None:
        try:
            worlds = choose_worlds(args.split, args.worlds, args.first)
        except ValueError as err:
            parser.error(str(err))
        chunks = [worlds[i :: args.jobs] for i in range(min(len(worlds), args.jobs))]
        cmd = [
            sys.executable,
            "-m",
            "embodmem",
            "-m",
            "experiment=lifelong",
            f"env={args.env}",
            f"experiment.split={args.split}",
            "experiment.world_seeds=" + ",".join("[" + ",".join(map(str, c)) + "]" for c in chunks),
            "hydra/launcher=joblib",
            f"hydra.launcher.n_jobs={args.jobs}",
            f"hydra.sweep.dir={directory}",
            "logger.progress=false",
            "logger.plots=false",
            "logger.episode_logs=false",
        ]
        if budgets:
            values = ",".join("null" if b.lower() == "none" else str(int(b)) for b in args.budgets.split(","))
            cmd += ["experiment.conditions=[warm]", f"memory.byte_budget={values}", f"memory.eviction={args.evictions}"]
        cmd += args.overrides
        print(" ".join(cmd), flush=True)
        if args.dry_run:
            return
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=subprocess.DEVNULL)
        print(f"\n{len(worlds)} worlds of {args.split}: {time.perf_counter() - t0:.0f} s wall", flush=True)
    records = load_runs(directory)
    budgets = budgets or any(r["byte_budget"] != "null" for r in records)
    if budgets and args.tour_dir is not None:
        worlds = {r["world_seed"] for r in records}
        unlimited = [r for r in load_runs(args.tour_dir) if r["condition"] == "warm" and r["world_seed"] in worlds]
        for r in unlimited:
            r["eviction"] = "any (unlimited)"
        records += unlimited
    if budgets:
        report = budget_report(records, directory / "lifelong_budgets.png")
        print(report)
        print(f"\nplot: {directory / 'lifelong_budgets.png'}")
    else:
        report = tour_report(records)
        print(report)
        plot_tour(records, directory / "lifelong_tour.png")
        print(f"\nplot: {directory / 'lifelong_tour.png'}")
    if args.results is not None:
        title = f"Lifelong memory{' under byte budgets' if budgets else ''}, {directory.name}"
        write_results_markdown(args.results, title, report, Provenance.collect())


if __name__ == "__main__":
    main()
