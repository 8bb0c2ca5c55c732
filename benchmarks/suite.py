"""The benchmark suite: does memory of earlier tasks make later tasks fast, on worlds never tuned on?

Runs ``experiment=suite`` (the fixed sequences; the memory agent and its ablations warm and cold, the
explorer and the oracle) as a Hydra multirun over chunks of a split's worlds, in parallel through the
joblib launcher, then prints one table per sequence: every later task, split by whether its target
was seen in an earlier task of the same (world, seed), per agent, with paired bootstrap 95% CIs for the warm-minus-cold figures that resample whole worlds (a world's
later tasks are not independent), and the count of paired episodes where warm failed and cold
succeeded.

    python benchmarks/suite.py --split test --worlds 100          # everything on 100 test worlds
    python benchmarks/suite.py --split test --worlds 100 --agents core      # benchmarks/results/suite_test_core.md
    python benchmarks/suite.py --split test --worlds 20 --agents ablations  # the ablation table
    python benchmarks/suite.py --split dev --worlds 30 --agents quick    # iteration: memory + explorer only
    python benchmarks/suite.py --from-dir multirun/suite-test-core      # re-print tables (and where the time went)
    python benchmarks/suite.py --split test --worlds 100 --agents core --lanes 0 --out multirun/suite-sequential
    python benchmarks/suite.py --compare multirun/suite-test-core multirun/suite-sequential   # side by side
    python benchmarks/suite.py --split test --worlds 100 --agents core experiment.resume=true  # finish a stopped run

Each run writes to its own directory (default ``multirun/suite-<split>-<agents>``); a new run into a
directory that holds records is refused (they would mix), unless it resumes that run. Each job runs
32 lanes in lockstep (``--lanes``; embodmem/lockstep.py): on the test split they write the sequential
runner's records (benchmarks/results/lockstep_test_core.md).

Only this script reads the test split, to report; choose nothing from it.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from multirun import CORE_AGENTS, add_lanes_argument, multirun_command, results_title, run_multirun, time_table

from embodmem.provenance import Provenance, write_results_markdown
from embodmem.splits import SPLIT_NAMES, choose_worlds
from embodmem.stats import difference_of_means, paired_ci, ratio_of_means

ROOT = Path(__file__).resolve().parent.parent


def load_records(directory: Path) -> list[dict]:
    """Every record of the ``metrics.jsonl`` files below ``directory`` (a run or a multirun)."""
    return [record for path in sorted(directory.rglob("metrics.jsonl")) for record in file_records(path)]


def file_records(path: Path) -> list[dict]:
    """The records of one ``metrics.jsonl``."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass(frozen=True)
class LostToCold:
    """Paired episodes where warm failed and cold succeeded: a fast warm failure that "warm takes
    over 1.5x cold's steps" cannot see (it took few steps)."""

    episodes: int
    worlds: int
    """Worlds with at least one such episode."""
    n_worlds: int


def lost_to_cold(pairs: list[tuple[dict, dict]]) -> LostToCold:
    """Count the (warm, cold) record pairs where warm failed and cold succeeded.

    >>> lost_to_cold([({"success": 0, "world_seed": 1}, {"success": 1}), ({"success": 1, "world_seed": 2}, {"success": 1})])
    LostToCold(episodes=1, worlds=1, n_worlds=2)
    """
    lost = [w for w, c in pairs if not w["success"] and c["success"]]
    return LostToCold(len(lost), len({w["world_seed"] for w in lost}), len({w["world_seed"] for w, _ in pairs}))


def tables(records: list[dict]) -> str:
    """Markdown tables, one per sequence, later tasks only."""
    runs = [r for r in records if r["condition"] != "eval"]
    by_key = {(r["sequence"], r["world_seed"], r["seed"], r["task_index"], r["agent"], r["condition"]): r for r in runs}
    # "seen" is decided by the full memory agent's warm run (what the robot actually saw earlier).
    seen = {
        (r["sequence"], r["world_seed"], r["seed"], r["task_index"]): bool(r["target_seen_before"])
        for r in runs
        if r["agent"] == "memory" and r["condition"] == "warm"
    }
    agents = sorted(
        {(r["agent"], r["condition"]) for r in runs}, key=lambda a: (a[0] != "memory", a[0], a[1] != "warm")
    )
    out = []
    for sequence in sorted({r["sequence"] for r in runs}):
        n_tasks = max(r["task_index"] for r in runs if r["sequence"] == sequence)
        worlds = sorted({r["world_seed"] for r in runs if r["sequence"] == sequence})
        out.append(f"\n### {sequence} ({len(worlds)} worlds, tasks 2-{n_tasks} pooled)\n")
        out.append(
            "| target seen earlier | agent | n | success | SPL | steps (mean) | SPL warm-cold [95% CI] | "
            "steps cold/warm [95% CI] | warm > 1.5x cold steps | warm failed, cold succeeded (episodes; worlds) |"
        )
        out.append("|---|---|---:|---:|---:|---:|---|---|---:|---:|")
        for group in (True, False):
            keys = [k for k, s in seen.items() if k[0] == sequence and k[3] >= 2 and s == group]
            for agent, condition in agents:
                rows = [by_key.get((*k[:4], agent, condition)) for k in keys]
                rows = [r for r in rows if r is not None]
                if not rows:
                    continue
                line = (
                    f"| {'seen' if group else 'not seen'} | {agent} ({condition}) | {len(rows)} | "
                    f"{np.mean([r['success'] for r in rows]):.2f} | {np.mean([r['spl'] for r in rows]):.2f} | "
                    f"{np.mean([r['steps'] for r in rows]):.1f} |"
                )
                if condition == "warm":
                    pairs = [(by_key[(*k[:4], agent, "warm")], by_key.get((*k[:4], agent, "cold"))) for k in keys]
                    pairs = [(w, c) for w, c in pairs if c is not None]
                    w_spl = np.array([w["spl"] for w, _ in pairs])
                    c_spl = np.array([c["spl"] for _, c in pairs])
                    w_steps = np.array([w["steps"] for w, _ in pairs], float)
                    c_steps = np.array([c["steps"] for _, c in pairs], float)
                    world_of = [
                        w["world_seed"] for w, _ in pairs
                    ]  # the cluster: records of a world are not independent
                    d = difference_of_means(w_spl, c_spl)
                    dlo, dhi = paired_ci(w_spl, c_spl, difference_of_means, clusters=world_of)
                    q = ratio_of_means(w_steps, c_steps)
                    qlo, qhi = paired_ci(w_steps, c_steps, ratio_of_means, clusters=world_of)
                    worse = float(np.mean(w_steps > 1.5 * c_steps))
                    lost = lost_to_cold(pairs)
                    line += (
                        f" {float(d):+.2f} [{dlo:+.2f}, {dhi:+.2f}] | {float(q):.2f} [{qlo:.2f}, {qhi:.2f}] | {worse:.1%} | "
                        f"{lost.episodes} ({lost.episodes / len(pairs):.1%}); {lost.worlds} of {lost.n_worlds} "
                        f"({lost.worlds / max(lost.n_worlds, 1):.1%}) |"
                    )
                else:
                    line += " | | | |"
                out.append(line)
            reported = [by_key[(*k[:4], "memory", "warm")].get("target_reported_before") for k in keys]
            if any(r is not None for r in reported):  # detection-based: the recogniser reported it earlier
                out.append(
                    f"| {'seen' if group else 'not seen'} | memory (warm): recogniser reported the target earlier | "
                    f"{sum(r is not None for r in reported)} | {np.mean([bool(r) for r in reported if r is not None]):.2f} "
                    "(share) | | | | | | |"
                )
            bounds = [by_key[(*k[:4], "memory", "warm")].get("seen_place_spl_bound") for k in keys]
            bounds = [b for b in bounds if b is not None]
            if group and bounds:  # what knowing exactly where the target was seen allows (an SPL bound)
                out.append(
                    f"| seen | oracle told the seen places (bound) | {len(bounds)} | 1.00 | {np.mean(bounds):.2f} | | | | | |"
                )
    return "\n".join(out)


def lost_to_cold_table(records: list[dict]) -> str:
    """Per sequence and agent, all later tasks pooled (seen and not seen): paired episodes where warm
    failed and cold succeeded, and the worlds with at least one."""
    runs = [r for r in records if r["condition"] in ("warm", "cold") and r["task_index"] >= 2]
    by_key = {(r["sequence"], r["world_seed"], r["seed"], r["task_index"], r["agent"], r["condition"]): r for r in runs}
    out = [
        "| sequence | agent | paired episodes | warm failed, cold succeeded | worlds with one |",
        "|---|---|---:|---:|---:|",
    ]
    for sequence, agent in sorted({(r["sequence"], r["agent"]) for r in runs if r["condition"] == "warm"}):
        pairs = [
            (w, by_key[(*k[:5], "cold")])
            for k, w in by_key.items()
            if k[0] == sequence and k[4] == agent and k[5] == "warm" and (*k[:5], "cold") in by_key
        ]
        if pairs:
            lost = lost_to_cold(pairs)
            out.append(
                f"| {sequence} | {agent} | {len(pairs)} | {lost.episodes} ({lost.episodes / len(pairs):.1%}) | "
                f"{lost.worlds} of {lost.n_worlds} ({lost.worlds / max(lost.n_worlds, 1):.1%}) |"
            )
    return "\n".join(out)


def ablation_table(records: list[dict]) -> str:
    """Per sequence and group: each variant's warm-minus-cold SPL (later tasks) with its CI, then the
    share of the full agent's gain lost without a component (1 - gain without it / full gain)."""
    runs = [r for r in records if r["condition"] in ("warm", "cold")]
    by_key = {(r["sequence"], r["world_seed"], r["seed"], r["task_index"], r["agent"], r["condition"]): r for r in runs}
    seen = {
        (r["sequence"], r["world_seed"], r["seed"], r["task_index"]): bool(r["target_seen_before"])
        for r in runs
        if r["agent"] == "memory" and r["condition"] == "warm"
    }
    variants = [
        v
        for v in (
            "memory",
            "memory_no_recall",
            "memory_no_map",
            "memory_no_consolidation",
            "memory_fifo_only",
            "textlog",
        )
        if any(r["agent"] == v for r in runs)
    ]
    head = "| sequence | seen | n | " + " | ".join(f"{v} SPL warm-cold [95% CI]" for v in variants) + " |"
    out = [head, "|---|---|---:|" + "---|" * len(variants)]
    others = [v for v in variants if v != "memory"]
    share_head = (
        "| sequence | seen | full gain | "
        + " | ".join("lost with textlog for frames" if v == "textlog" else f"lost: {v}" for v in others)
        + " |"
    )
    shares = [share_head, "|---|---|---:|" + "---:|" * len(others)]
    for sequence in sorted({r["sequence"] for r in runs}):
        for group in (True, False):
            keys = [k for k, s in seen.items() if k[0] == sequence and k[3] >= 2 and s == group]
            cells, gains = [], {}
            for v in variants:
                pairs = [(by_key.get((*k, v, "warm")), by_key.get((*k, v, "cold"))) for k in keys]
                pairs = [(w, c) for w, c in pairs if w is not None and c is not None]
                w = np.array([a["spl"] for a, _ in pairs])
                c = np.array([b["spl"] for _, b in pairs])
                lo, hi = paired_ci(w, c, difference_of_means, clusters=[a["world_seed"] for a, _ in pairs])
                if len(pairs):
                    gains[v] = float(difference_of_means(w, c))
                cells.append(f"{gains[v]:+.2f} [{lo:+.2f}, {hi:+.2f}]" if len(pairs) else "")
            label = f"| {sequence} | {'seen' if group else 'not seen'} |"
            out.append(f"{label} {len(keys)} | " + " | ".join(cells) + " |")
            full = gains.get("memory")
            if full is not None and abs(full) >= 0.02:  # a share of a gain near zero means nothing
                lost = [f"{1 - gains[v] / full:.0%}" if v in gains else "" for v in others]
                shares.append(f"{label} {full:+.2f} | " + " | ".join(lost) + " |")
    note = (
        "\n\nShare of the full agent's warm-minus-cold SPL lost without each component "
        "(1 - gain of the variant / full gain; over 100%: the variant is worse than cold; negative: it "
        "gains more than the full agent; rows whose full gain is under 0.02 left out):\n\n"
    )
    return "\n".join(out) + note + "\n".join(shares)


NOT_COMPARED = frozenset({"wall_time_s", "memory_query_ms", "run_id", "episode_log"})
"""Record fields that measure the machine or name files, not the episode (as tools/same_records.py)."""


def _differs(a: dict, b: dict) -> bool:
    return any(a.get(k) != b.get(k) for k in (set(a) | set(b)) - NOT_COMPARED)


def compare_table(a: list[dict], b: list[dict], names: tuple[str, str]) -> str:
    """Side by side, per sequence and (agent, condition), later tasks pooled: success, SPL and steps of
    run A and run B on the same episodes (e.g. sequential and lockstep), and how many records differ."""
    keys = ("sequence", "world_seed", "seed", "task_index", "agent", "condition")
    by_b = {tuple(r[k] for k in keys): r for r in b if r["condition"] != "eval"}
    pairs = [(r, by_b[tuple(r[k] for k in keys)]) for r in a if tuple(r[k] for k in keys) in by_b]
    fields = ("success", "spl", "steps")
    x, y = names
    out = [
        f"| sequence | agent | n | success {x} | success {y} | SPL {x} | SPL {y} | steps {x} | steps {y} | "
        f"SPL {y} - {x} [95% CI] | records differing |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for sequence, agent, condition in sorted({(r["sequence"], r["agent"], r["condition"]) for r, _ in pairs}):
        rows = [(r, q) for r, q in pairs if (r["sequence"], r["agent"], r["condition"]) == (sequence, agent, condition)]
        rows = [(r, q) for r, q in rows if r["task_index"] >= 2]
        if not rows:
            continue
        cells = [f"{np.mean([r[f] for r, _ in rows]):.2f} | {np.mean([q[f] for _, q in rows]):.2f}" for f in fields]
        spl_a, spl_b = np.array([r["spl"] for r, _ in rows]), np.array([q["spl"] for _, q in rows])
        lo, hi = paired_ci(spl_b, spl_a, difference_of_means, clusters=[r["world_seed"] for r, _ in rows])
        diff = f"{float(difference_of_means(spl_b, spl_a)):+.3f} [{lo:+.3f}, {hi:+.3f}]"
        differing = sum(_differs(r, q) for r, q in rows)
        out.append(
            f"| {sequence} | {agent} ({condition}) | {len(rows)} | " + " | ".join(cells) + f" | {diff} | {differing} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=SPLIT_NAMES)
    parser.add_argument(
        "--worlds", type=int, default=100, help="worlds per sequence (N worlds of the split from --first)"
    )
    parser.add_argument(
        "--first",
        type=int,
        default=None,
        help="first world seed (default: the split's first; required with --split custom)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="parallel jobs (joblib launcher)")
    add_lanes_argument(parser)
    parser.add_argument(
        "--agents",
        choices=("all", "core", "ablations", "quick", "memory"),
        default="all",
        help="core: memory warm/cold + explorer + oracle; ablations: every memory variant warm/cold; quick: memory + "
        "explorer; memory: the memory agent warm/cold only",
    )
    parser.add_argument("--sequences", default=None, help="comma-separated subset of the suite's sequences")
    parser.add_argument(
        "--out", type=Path, default=None, help="multirun directory (default multirun/suite-<split>-<agents>)"
    )
    parser.add_argument("--from-dir", type=Path, default=None, help="only print the tables of a finished run")
    parser.add_argument(
        "--compare",
        type=Path,
        nargs=2,
        metavar=("DIR_A", "DIR_B"),
        default=None,
        help="print two finished runs of the same worlds side by side (e.g. sequential and --lanes 32)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="also write the tables here with the command, commit and machine (e.g. benchmarks/results/suite_test_core.md)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the multirun command and exit")
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides, e.g. agent.min_viewpoints=3")
    args = parser.parse_args()
    if args.compare is not None:
        a, b = args.compare
        print(compare_table(load_records(a), load_records(b), (a.name, b.name)))
        return
    if args.from_dir is None:
        try:
            worlds = choose_worlds(args.split, args.worlds, args.first)
        except ValueError as err:
            parser.error(str(err))
        out = args.out or ROOT / "multirun" / f"suite-{args.split}-{args.agents}"
        cmd = multirun_command(["experiment=suite"], args.split, worlds, args.jobs, out, lanes=args.lanes)
        cmd += {
            "all": [],
            "core": list(CORE_AGENTS),
            "ablations": ["experiment.baselines=[]"],
            "quick": ["experiment.variants=[memory]", "experiment.baselines=[explorer]"],
            "memory": ["experiment.variants=[memory]", "experiment.baselines=[]"],
        }[args.agents]
        if args.sequences:
            cmd.append(f"experiment.sequences=[{args.sequences}]")
        cmd += args.overrides
        print(" ".join(cmd), flush=True)
        if args.dry_run:
            return
        seconds = run_multirun(cmd)
        print(
            f"\nsuite on {args.split} worlds {worlds[0]}-{worlds[-1]}: {seconds:.0f} s wall",
            flush=True,
        )
        directory = out
    else:
        directory = args.from_dir
    records = load_records(directory)
    parts = [tables(records), "\n### Warm failed where cold succeeded, all later tasks\n", lost_to_cold_table(records)]
    if any(r["agent"] != "memory" and r["condition"] == "warm" for r in records):
        parts += ["\n### Ablations: warm-minus-cold SPL of later tasks, per variant\n", ablation_table(records)]
    profile = time_table(directory, args.jobs)
    if profile:
        parts += [
            f"\n### Where the time went (the jobs' profile.json, spread over --jobs {args.jobs} cores)\n",
            profile,
        ]
    text = "\n".join(parts)
    print(text)
    if args.results is not None:
        title = f"Benchmark suite, {args.split} worlds" if args.from_dir is None else f"Benchmark suite, {directory}"
        title = results_title(title, args.overrides)
        write_results_markdown(args.results, title, text, Provenance.collect())


if __name__ == "__main__":
    main()
