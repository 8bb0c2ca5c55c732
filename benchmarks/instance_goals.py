"""Instance goals (GOAT-style): which memory design helps when a goal names one instance by words or
by picture, and same-kind distractors are everywhere?

Runs ``experiment=instance_goals`` (sequences ``goat_*``: 6-10 goals in one world with appearance
variants, each a category, a description or an image; frame memory, keep-everything, naive
retrieval and the text log warm and cold, the explorer, the oracle and the fully observed twin
``mapped`` (the memory agent's skeleton handed the object map: how much of each goal family memory
can possibly recover); every agent with the variants
CLIP, ``embedder.pretrained=variants``) as a Hydra multirun over a split's worlds, then prints per goal modality and per group (goal instance seen in an earlier task
of the same world and seed, judged by frame memory's warm run, or not): each row's success, SPL,
``wrong_instance`` rate, bytes per frame and query time; frame memory's warm SPL minus each other
row's warm SPL with a paired bootstrap 95% CI over (world, seed) pairs; and keep-everything against
frame memory (SPL and bytes per frame side by side).

    python benchmarks/instance_goals.py --split dev --worlds 3              # a try on 3 dev worlds
    python benchmarks/instance_goals.py --split test --worlds 100 --jobs 2 --results benchmarks/results/instance_goals_test.md
    python benchmarks/instance_goals.py --from-dir multirun/instance-goals-test

Only this script reads the test split, to report; choose nothing from it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from multirun import add_lanes_argument, multirun_command, results_title, run_multirun

from embodmem.envs.tasks import get_task
from embodmem.provenance import Provenance, write_results_markdown
from embodmem.splits import SPLIT_NAMES, choose_worlds
from embodmem.stats import difference_of_means, paired_ci

ROOT = Path(__file__).resolve().parent.parent
FRAME_MEMORY = "memory"
MIN_CI_WORLDS = 3
"""Fewer worlds than this give no interval (the report's rule for small n)."""
ROWS = ("memory", "memory_keep_all", "memory_naive", "textlog", "explorer", "mapped", "oracle")


@dataclass(frozen=True)
class Episode:
    """The fields of one metrics record this report reads."""

    sequence: str
    world_seed: int
    seed: int
    task_index: int
    task: str
    agent: str
    condition: str
    success: int
    spl: float
    steps: int
    wrong_instance: int
    target_seen_before: bool
    memory_frames: int
    memory_bytes: int
    memory_query_ms: float | None

    @property
    def key(self) -> tuple[str, int, int, int]:
        return (self.sequence, self.world_seed, self.seed, self.task_index)

    @property
    def modality(self) -> str:
        return get_task(self.task).modality


def load_episodes(directory: Path) -> list[Episode]:
    """Every warm, cold and single record under ``directory`` (eval rows left out)."""
    out = []
    for path in sorted(directory.rglob("metrics.jsonl")):
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("condition") not in ("warm", "cold", "single") or r.get("aborted"):
                continue
            out.append(
                Episode(
                    r["sequence"],
                    r["world_seed"],
                    r["seed"],
                    r["task_index"],
                    r["task"],
                    r["agent"],
                    r["condition"],
                    int(r["success"]),
                    float(r["spl"]),
                    int(r["steps"]),
                    int(r.get("wrong_instance") or 0),
                    bool(r.get("target_seen_before")),
                    int(r.get("memory_frames") or 0),
                    int(r.get("memory_bytes") or 0),
                    r.get("memory_query_ms"),
                )
            )
    return out


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def tables(episodes: list[Episode]) -> str:
    """Markdown: one table per modality and group (later tasks, all sequences pooled)."""
    by_key = {(*e.key, e.agent, e.condition): e for e in episodes}
    # Frames seen so far in the run (one per step): a warm memory has seen every earlier task's.
    seen_frames = {
        k: sum(by_key[(*k[:3], i, *k[4:])].steps for i in range(1, k[3] + 1) if (*k[:3], i, *k[4:]) in by_key)
        if k[5] == "warm"
        else by_key[k].steps
        for k in by_key
    }
    seen = {e.key: e.target_seen_before for e in episodes if e.agent == FRAME_MEMORY and e.condition == "warm"}
    rows = sorted(
        {(e.agent, e.condition) for e in episodes},
        key=lambda a: (ROWS.index(a[0]) if a[0] in ROWS else 99, a[1] != "warm"),
    )
    out = []
    for modality in ("category", "description", "image"):
        for group in (True, False):
            keys = sorted(
                k
                for k, s in seen.items()
                if s == group and k[3] >= 2 and get_task(by_key[(*k, FRAME_MEMORY, "warm")].task).modality == modality
            )
            if not keys:
                continue
            out.append(
                f"\n### {modality} goals, goal {'seen' if group else 'not seen'} earlier ({len(keys)} episodes)\n"
            )
            out.append(
                "| row | n | success | SPL | wrong_instance | steps | B/frame kept | B/frame seen | query ms (median) | "
                "frame memory warm SPL minus this row [95% CI, resampling worlds] |"
            )
            out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
            for agent, condition in rows:
                eps = [by_key[(*k, agent, condition)] for k in keys if (*k, agent, condition) in by_key]
                if not eps:
                    continue
                frames = sum(e.memory_frames for e in eps)
                memory_bytes = sum(e.memory_bytes for e in eps)
                bpf = f"{memory_bytes / frames:.0f}" if frames else ""
                seen_n = sum(seen_frames[(*k, agent, condition)] for k in keys if (*k, agent, condition) in by_key)
                bps = f"{memory_bytes / seen_n:.0f}" if frames and seen_n else ""
                q = [e.memory_query_ms for e in eps if e.memory_query_ms is not None]
                line = (
                    f"| {agent} ({condition}) | {len(eps)} | {_mean([e.success for e in eps]):.2f} | "
                    f"{_mean([e.spl for e in eps]):.2f} | {_mean([e.wrong_instance for e in eps]):.2f} | "
                    f"{_mean([e.steps for e in eps]):.1f} | {bpf} | {bps} | {f'{np.median(q):.2f}' if q else ''} |"
                )
                if condition in ("warm", "single") and agent != FRAME_MEMORY:
                    pairs = [
                        (by_key[(*k, FRAME_MEMORY, "warm")], by_key[(*k, agent, condition)])
                        for k in keys
                        if (*k, agent, condition) in by_key
                    ]
                    a = np.array([p[0].spl for p in pairs])
                    b = np.array([p[1].spl for p in pairs])
                    worlds = [p[0].world_seed for p in pairs]  # episodes of one world are not independent
                    diff = f"{float(difference_of_means(a, b)):+.2f}"
                    if len(set(worlds)) < MIN_CI_WORLDS:
                        line += f" {diff} (n too small: {len(set(worlds))} worlds) |"
                    else:
                        lo, hi = paired_ci(a, b, difference_of_means, clusters=worlds)
                        line += f" {diff} [{lo:+.2f}, {hi:+.2f}] |"
                else:
                    line += " |"
                out.append(line)
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=SPLIT_NAMES)
    parser.add_argument(
        "--worlds", type=int, default=3, help="worlds per sequence (N worlds of the split from --first)"
    )
    parser.add_argument("--first", type=int, default=None, help="first world seed (default: the split's first)")
    parser.add_argument("--jobs", type=int, default=1, help="parallel jobs (joblib launcher)")
    add_lanes_argument(parser)
    parser.add_argument(
        "--out", type=Path, default=None, help="multirun directory (default multirun/instance-goals-<split>)"
    )
    parser.add_argument("--from-dir", type=Path, default=None, help="only print the tables of a finished run")
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="also write the tables here with the command, commit and machine (e.g. benchmarks/results/instance_goals_test.md)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the multirun command and exit")
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides, e.g. experiment.variants=[memory,textlog]")
    args = parser.parse_args()
    if args.from_dir is None:
        try:
            worlds = choose_worlds(args.split, args.worlds, args.first)
        except ValueError as err:
            parser.error(str(err))
        out = args.out or ROOT / "multirun" / f"instance-goals-{args.split}"
        experiment = ["experiment=instance_goals", "env.instance_goals=true", "embedder.pretrained=variants"]
        cmd = multirun_command(experiment, args.split, worlds, args.jobs, out, args.overrides, args.lanes)
        print(" ".join(cmd), flush=True)
        if args.dry_run:
            return
        seconds = run_multirun(cmd)
        print(f"\ninstance goals on {args.split} worlds {worlds[0]}-{worlds[-1]}: {seconds:.0f} s wall")
        directory = out
    else:
        directory = args.from_dir
    text = tables(load_episodes(directory))
    print(text)
    if args.results is not None:
        title = f"Instance goals, {args.split} worlds" if args.from_dir is None else f"Instance goals, {directory}"
        title = results_title(title, args.overrides)
        write_results_markdown(args.results, title, text, Provenance.collect())


if __name__ == "__main__":
    main()
