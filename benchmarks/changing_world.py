"""What a stale memory costs: the memory agent in a world that changes halfway through a sequence.

Runs ``revisit_shallow8`` (every goal asked for twice) with ``world/changes=moved_half`` (both
sunken ships and the oil drums moved far away before the second round; the mining robots and the
electrical box stay) on worlds of one split, three ways, with the same seeds and starts:

- **stale**: the changes happen before task 5, after the agent has seen the old places;
- **fresh** (the fresh-memory control): the same changes hoisted before task 1
  (``world.changes.hoist=true``), so the last world is the same but nothing seen of it is stale;
- **mapped** (the ground-truth-map control) runs in both, reading the live world.

Each memory-update policy of the stock memory is a row (``memory`` is keep-first). It writes
``benchmarks/results/changing_world_<changes>_<split>.md``: warm SPL on changed vs unchanged goals
of the second round with world-clustered 95% CIs, stale-target visits, the steps lost to a stale
memory against both controls and the steps each policy saves against keep-first (paired by
episode, clustered by world), the update policies' compute, and steps to correct (from the first
observation contradicting a place memory sent the robot to, to the memory's update).

Usage::

    python benchmarks/changing_world.py --split dev --worlds 6
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from hydra import compose, initialize_config_module

from embodmem.app import run
from embodmem.metrics_record import EpisodeRecord
from embodmem.provenance import Provenance, write_results_markdown
from embodmem.splits import SPLIT_NAMES, choose_worlds
from embodmem.staleness import correction_summary, spl_by_goal, steps_lost

RESULTS = Path(__file__).resolve().parent / "results"


def run_records(
    out: Path,
    changes: str,
    worlds: list[int],
    split: str,
    hoist: bool,
    variants: list[str],
    conditions: list[str],
    lanes: int,
) -> list[EpisodeRecord]:
    overrides = [
        "experiment.sequence=revisit_shallow8",
        f"world/changes={changes}",
        f"world.changes.hoist={str(hoist).lower()}",
        f"experiment.world_seeds=[{','.join(map(str, worlds))}]",
        f"experiment.split={split}",
        f"experiment.variants=[{','.join(variants)}]",
        "experiment.baselines=[mapped]",
        f"experiment.conditions=[{','.join(conditions)}]",
        f"experiment.lanes={lanes}",
        "logger.plots=false",
        "logger.progress=false",
        "logger.episode_logs=false",
    ]
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    records = run(cfg, out)
    return [r for r in records if isinstance(r, EpisodeRecord)]


KEEP_FIRST = "memory"
"""The row every update policy is paired with: the stock memory, which never updates."""

_UPDATE_FIELDS = ("memory_update_removed", "memory_update_compared", "memory_update_bytes_freed", "memory_update_s")


def _key(r: EpisodeRecord) -> tuple[object, ...]:
    return (r.world_seed, r.seed, r.task_index)


def fmt_ci(ci: tuple[float, float], digits: int = 2) -> str:
    return f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def tables(stale: list[EpisodeRecord], fresh: list[EpisodeRecord], variants: list[str]) -> str:
    lines = [
        "| memory | world | goals (tasks 5-8) | episodes | worlds | warm SPL | 95% CI (worlds) | stale-target visits / ep |",
        "|---|---|---|---:|---:|---:|---|---:|",
    ]
    stale_all = stale
    changed_keys = {_key(r) for r in stale if r.stat("goal_changed")}
    stale = [r for r in stale if (r.task_index or 0) > 4]  # the second round: every goal seen before
    fresh = [r for r in fresh if (r.task_index or 0) > 4]
    for name in variants:
        for label, recs in (("stale", stale), ("fresh", fresh)):
            for row in spl_by_goal(recs, name, changed=lambda r: _key(r) in changed_keys):
                lines.append(
                    f"| {name} | {label} | {row.goals} | {row.episodes} | {row.worlds} | {row.spl:.3f} | "
                    f"{fmt_ci(row.ci)} | {row.stale_target_visits:.2f} |"
                )
    lines += [
        "",
        "| memory | goals | control | paired episodes | worlds | steps lost (mean) | 95% CI (worlds) |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for name in variants:
        for changed in (True, False):
            for control, ctl_agent, ctl_cond, ctl_recs in (
                ("fresh memory", name, "warm", fresh),
                ("ground-truth map", "mapped", "single", stale),
            ):
                row = steps_lost(
                    stale, ctl_recs, name, ctl_agent, control, control_condition=ctl_cond, goals_changed=changed
                )
                if row is not None:
                    lines.append(
                        f"| {name} | {'changed' if changed else 'unchanged'} | {control} | {row.episodes} | "
                        f"{row.worlds} | {row.steps_lost:.1f} | {fmt_ci(row.ci, 1)} |"
                    )
    lines += [
        "",
        "| memory | goals | paired episodes | worlds | steps saved vs keep-first (mean) | 95% CI (worlds) |",
        "|---|---|---:|---:|---:|---|",
    ]
    for name in variants:
        if name == KEEP_FIRST:
            continue
        for changed in (True, False):
            row = steps_lost(stale, stale, KEEP_FIRST, name, "keep-first", goals_changed=changed)
            if row is not None:  # keep-first's steps minus this policy's, episode by episode
                lines.append(
                    f"| {name} | {'changed' if changed else 'unchanged'} | {row.episodes} | {row.worlds} | "
                    f"{row.steps_lost:.1f} | {fmt_ci(row.ci, 1)} |"
                )
    lines += [
        "",
        "| memory | records removed as contradicted | pairs compared | bytes freed | seconds (update checks) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in variants:
        last = {}  # the counts are cumulative: each world's last episode holds its total
        for r in sorted(stale_all, key=lambda r: r.task_index or 0):
            if r.agent == name and r.stat("memory_update_removed") is not None:
                last[r.world_seed] = r
        totals = [sum(float(r.stat(f) or 0) for r in last.values()) for f in _UPDATE_FIELDS]
        lines.append(f"| {name} | {totals[0]:.0f} | {totals[1]:.0f} | {totals[2]:.0f} | {totals[3]:.2f} |")
    lines += [
        "",
        "| memory | episodes with a corrected place | median steps to correct |",
        "|---|---:|---:|",
    ]
    for name in variants:
        n, median = correction_summary(stale, name)
        lines.append(f"| {name} | {n} | {'-' if median is None else f'{median:.0f}'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=SPLIT_NAMES, help="world split (tune on dev; report on test)")
    parser.add_argument("--worlds", type=int, default=6)
    parser.add_argument("--first", type=int, default=None, help="first world seed (default: the split's first)")
    parser.add_argument(
        "--variants",
        default="memory,memory_overwrite,memory_recency,memory_decay,memory_consolidate",
        help="comma-separated memory-agent variants (the update policies' rows by default)",
    )
    parser.add_argument("--changes", default="moved_half", help="a world/changes file for revisit_shallow8")
    parser.add_argument("--conditions", default="warm", help="comma-separated: warm, cold")
    parser.add_argument("--lanes", type=int, default=0, help="runs advanced together (experiment.lanes)")
    parser.add_argument(
        "--suffix", default="", help="appended to the results file's name (e.g. _24 for a 24-world run beside the 8)"
    )
    args = parser.parse_args(argv)
    variants = args.variants.split(",")
    try:
        worlds = choose_worlds(args.split, args.worlds, args.first)
    except ValueError as err:
        parser.error(str(err))
    facts = Provenance.collect(
        ["python", "benchmarks/changing_world.py", *(argv if argv is not None else sys.argv[1:])]
    )
    with tempfile.TemporaryDirectory(prefix="embodmem-changing-") as tmp:
        conditions = args.conditions.split(",")
        common = (variants, conditions, args.lanes)
        stale = run_records(Path(tmp) / "stale", args.changes, worlds, args.split, False, *common)
        fresh = run_records(Path(tmp) / "fresh", args.changes, worlds, args.split, True, *common)
    body = (
        f"`revisit_shallow8` with `world/changes={args.changes}` on {args.split} worlds {worlds[0]}-{worlds[-1]} "
        f"({len(worlds)} worlds), seed 0, random starts (drawn in the unchanged world, so the three runs "
        "start every task from the same pose). Stale: the changes happen during the sequence; fresh: the same "
        "changes before task 1 (`world.changes.hoist=true`); mapped: the ground-truth-map control. "
        "Changed goals: sunken ship, oil drums; unchanged: mining robot, electrical box. Second round "
        "(tasks 5-8) only: every goal of it was asked for once before.\n\n" + tables(stale, fresh, variants)
    )
    path = write_results_markdown(
        RESULTS / f"changing_world_{args.changes}_{args.split}{args.suffix}.md",
        "Changing world: stale memory",
        body,
        facts,
    )
    print(body)
    print(f"\nwritten: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
