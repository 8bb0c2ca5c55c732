"""Transfer bars of the main job: does memory of task 1 make task 2 fast?

For each world seed (never used for calibration: seeds 1000+), runs wreck_then_barrel with the
memory agent warm and cold, the explorer and the oracle, from the same starts. Sequences are split
by whether the barrel was clearly in view during the warm run's first task. Reports, for task 2:
success, SPL and steps per condition, and the end-to-end speed of the memory agent with the
breakdown of where its time goes.

    python benchmarks/bench_transfer.py --worlds 1000-1079
    python benchmarks/bench_transfer.py --quick          # 8 worlds
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from hydra import compose, initialize_config_dir
from tqdm import tqdm

from embodmem.app import CONFIG_DIR, build_agent, build_embedder, build_env
from embodmem.runner import Profiler, SequenceSpec, run_sequence


def parse_range(text: str) -> list[int]:
    a, _, b = text.partition("-")
    return list(range(int(a), int(b) + 1)) if b else [int(a)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", default="1000-1079", help="world seeds, e.g. 1000-1079")
    parser.add_argument("--sequence", default="wreck_then_barrel")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/transfer.json"))
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. agent.memory_probability=0.7")
    args = parser.parse_args()
    worlds = parse_range(args.worlds)[: 8 if args.quick else None]
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[f"experiment.sequence={args.sequence}", *args.overrides])
    from embodmem.envs.tasks import get_sequence

    tasks = get_sequence(args.sequence)
    embedder = build_embedder(cfg)
    profiler = Profiler()
    rows: list[dict] = []
    memory_steps = 0
    memory_seconds = 0.0
    for world in tqdm(worlds, desc="worlds"):
        env = build_env(cfg, tasks, world)
        starts = None
        seen_second = None
        for name, condition in (("memory", "warm"), ("memory", "cold"), ("explorer", "single"), ("oracle", "single")):
            agent = build_agent(name, cfg, embedder, env, 0)
            if name == "memory":
                agent.profiler = profiler
            spec = SequenceSpec(args.sequence, tasks, world, 0, condition, "fixed0", starts)
            t0 = time.perf_counter()
            results = run_sequence(env, agent, spec, "bench", profiler if name == "memory" else None)
            if name == "memory":
                memory_seconds += time.perf_counter() - t0
                memory_steps += sum(r.record["steps"] for r in results)
            if starts is None:
                starts = [tuple(r.log["start_pose"]) for r in results]
                seen_second = results[1].record["target_seen_before"]
            for r in results:
                rows.append({**r.record, "group": "seen" if seen_second else "not_seen"})

    def summarise(group: str) -> list[dict]:
        out = []
        for agent, condition in (("memory", "warm"), ("memory", "cold"), ("explorer", "single"), ("oracle", "single")):
            sel = [r for r in rows if r["group"] == group and r["agent"] == agent and r["condition"] == condition and r["task_index"] == 2]
            if not sel:
                continue
            out.append(
                {
                    "group": group,
                    "agent": f"{agent} ({condition})",
                    "n": len(sel),
                    "success": statistics.mean(r["success"] for r in sel),
                    "spl": statistics.mean(r["spl"] for r in sel),
                    "steps_mean": statistics.mean(r["steps"] for r in sel),
                    "steps_median": statistics.median(r["steps"] for r in sel),
                }
            )
        return out

    table = summarise("seen") + summarise("not_seen")
    for group in ("seen", "not_seen"):
        warm = [r["steps"] for r in rows if r["group"] == group and r["condition"] == "warm" and r["task_index"] == 2]
        cold = [r["steps"] for r in rows if r["group"] == group and r["condition"] == "cold" and r["task_index"] == 2]
        if warm:
            for t in table:
                if t["group"] == group and t["agent"] == "memory (warm)":
                    t["steps_ratio_cold_over_warm"] = statistics.mean(cold) / statistics.mean(warm)
    print(f"\nTask 2 of {args.sequence} over {len(worlds)} worlds ({worlds[0]}-{worlds[-1]})\n")
    print("| target 2 seen in task 1 | agent | n | success | SPL | steps (mean) | steps (median) | steps cold/warm |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for t in table:
        ratio = f"{t['steps_ratio_cold_over_warm']:.2f}" if "steps_ratio_cold_over_warm" in t else ""
        print(
            f"| {t['group'].replace('_', ' ')} | {t['agent']} | {t['n']} | {t['success']:.2f} | {t['spl']:.2f} | "
            f"{t['steps_mean']:.1f} | {t['steps_median']:.0f} | {ratio} |"
        )
    speed = memory_steps / memory_seconds
    print(f"\nMemory agent end to end: {speed:.0f} steps/s ({memory_steps} steps, env + embedding + memory + planning)\n")
    print("| section | us/step | share |")
    print("|---|---:|---:|")
    for row in profiler.table(memory_steps):
        print(f"| {row['section']} | {row['us_per_step']:.0f} | {row['share']:.2f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    from embodmem.atomic import atomic_write_json

    atomic_write_json(args.out, {"worlds": worlds, "table": table, "steps_per_s": speed, "profile": profiler.table(memory_steps), "rows": rows})


if __name__ == "__main__":
    main()
