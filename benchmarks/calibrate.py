"""Calibrate the agents' confidence thresholds on worlds kept apart from every reported figure.

Calibration worlds are 500-529 (the `calibration` split, embodmem/splits.py); reported figures come from the test split (benchmarks/suite.py). For each
threshold setting the memory agent runs wreck_then_barrel warm; the score is mean task-2
success x SPL plus mean task-1 success. The best setting is printed; it is the default in
agents/config.py (ExplorerConfig, MemoryAgentConfig; the Hydra agent group extends them).

    python benchmarks/calibrate.py
"""

from __future__ import annotations

import argparse
import itertools
import statistics

from hydra import compose, initialize_config_dir
from tqdm import tqdm

from embodmem.app import CONFIG_DIR, build_agent, build_embedder, build_env
from embodmem.envs.tasks import get_sequence
from embodmem.runner import SequenceSpec, run_sequence
from embodmem.splits import get_split

CALIBRATION_WORLDS = get_split("calibration").worlds()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detect", default="0.5,0.7,0.9")
    parser.add_argument("--memory", default="0.5,0.7,0.9")
    parser.add_argument("--worlds", type=int, default=len(CALIBRATION_WORLDS))
    parser.add_argument("--out", default="benchmarks/results/calibration.md")
    args = parser.parse_args()
    tasks = get_sequence("wreck_then_barrel")
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        base = compose("config")
    embedder = build_embedder(base)
    worlds = list(CALIBRATION_WORLDS)[: args.worlds]
    lines = [
        "| detect_probability | memory_probability | task-1 success | task-2 success | task-2 SPL | score |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    best = None
    for d, m in itertools.product(
        [float(x) for x in args.detect.split(",")], [float(x) for x in args.memory.split(",")]
    ):
        with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
            cfg = compose("config", overrides=[f"agent.detect_probability={d}", f"agent.memory_probability={m}"])
        s1, s2, spl2 = [], [], []
        for world in tqdm(worlds, desc=f"detect={d} memory={m}", leave=False):
            env = build_env(cfg, tasks, world)
            agent = build_agent("memory", cfg, embedder, env, 0)
            res = run_sequence(env, agent, SequenceSpec("wreck_then_barrel", tasks, world, 0, "warm"), "calibrate")
            s1.append(res[0].record["success"])
            s2.append(res[1].record["success"])
            spl2.append(res[1].record["spl"])
        score = statistics.mean(a * b for a, b in zip(s2, spl2)) + statistics.mean(s1)
        lines.append(
            f"| {d} | {m} | {statistics.mean(s1):.2f} | {statistics.mean(s2):.2f} | {statistics.mean(spl2):.2f} | {score:.3f} |"
        )
        if best is None or score > best[0]:
            best = (score, d, m)
    assert best is not None
    lines.append(f"\nbest: detect_probability={best[1]} memory_probability={best[2]} (score {best[0]:.3f})")
    print("\n".join(lines))
    from embodmem.atomic import atomic_write_text

    atomic_write_text(args.out, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
