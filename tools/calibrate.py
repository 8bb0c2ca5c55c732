"""Calibrate the agents' confidence thresholds on worlds kept apart from every reported figure.

Calibration worlds are 500-529 (the `calibration` split, embodmem/splits.py); reported figures come
from the test split (benchmarks/suite.py). The chosen values are the defaults in agents/config.py
(ExplorerConfig, MemoryAgentConfig; the Hydra agent group extends them).

- Recognition thresholds: for each setting the memory agent runs wreck_then_barrel warm; the score is
  mean task-2 success x SPL plus mean task-1 success.
- ``--centre``: the centre-of-view check (``agent.centre_probability``). The robot is placed two cells
  straight in front of every target cell (positives) and of every other object cell within two cells
  of a target whose frame shows the target (negatives: judging them by the whole frame would stop
  the robot beside the target, too far off); the table gives, per threshold, the share of each
  that the middle of the view confirms. The chosen threshold is the lowest with at most 1% false
  confirmations.

    python tools/calibrate.py
    python tools/calibrate.py --centre
"""

from __future__ import annotations

import argparse
import itertools
import statistics

import numpy as np
from hydra import compose, initialize_config_dir
from tqdm import tqdm

from embodmem.agents.recognizer import TargetRecognizer, centre_view
from embodmem.app import CONFIG_DIR, build_agent, build_embedder, build_env
from embodmem.atomic import atomic_write_text
from embodmem.condition import Condition
from embodmem.envs.spec import DIR_TO_VEC
from embodmem.envs.tasks import TASKS, get_sequence
from embodmem.runner import SequenceSpec, run_sequence
from embodmem.splits import get_split

CALIBRATION_WORLDS = get_split("calibration").worlds()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detect", default="0.5,0.7,0.9")
    parser.add_argument("--memory", default="0.5,0.7,0.9")
    parser.add_argument("--worlds", type=int, default=len(CALIBRATION_WORLDS))
    parser.add_argument("--out", default=None, help="default tools/results/calibration[_centre].md")
    parser.add_argument("--centre", action="store_true", help="calibrate the centre-of-view check instead")
    args = parser.parse_args()
    if args.centre:
        calibrate_centre(args.worlds, args.out or "tools/results/calibration_centre.md")
        return
    args.out = args.out or "tools/results/calibration.md"
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
            res = run_sequence(
                env, agent, SequenceSpec("wreck_then_barrel", tasks, world, 0, Condition.warm), "calibrate"
            )
            s1.append(res[0].record.success)
            s2.append(res[1].record.success)
            spl2.append(res[1].record.spl)
        score = statistics.mean(a * b for a, b in zip(s2, spl2)) + statistics.mean(s1)
        lines.append(
            f"| {d} | {m} | {statistics.mean(s1):.2f} | {statistics.mean(s2):.2f} | {statistics.mean(spl2):.2f} | {score:.3f} |"
        )
        if best is None or score > best[0]:
            best = (score, d, m)
    assert best is not None
    lines.append(f"\nbest: detect_probability={best[1]} memory_probability={best[2]} (score {best[0]:.3f})")
    print("\n".join(lines))
    atomic_write_text(args.out, "\n".join(lines) + "\n")


def calibrate_centre(n_worlds: int, out: str, distance: int = 2) -> None:
    """P(target) of the whole frame and of its middle, two cells straight in front of target cells and
    of object cells beside a target; the lowest centre threshold with at most 1% false confirmations."""
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config")
    embedder = build_embedder(cfg)
    recognizer = TargetRecognizer(embedder)
    confirm = cfg.agent.confirm_probability
    whole: dict[bool, list[float]] = {True: [], False: []}
    centre: dict[bool, list[float]] = {True: [], False: []}
    worlds = list(CALIBRATION_WORLDS)[:n_worlds]
    for world, task in tqdm(list(itertools.product(worlds, TASKS)), desc="centre-of-view study"):
        env = build_env(cfg, (task,), world)
        env.reset(seed=0, options={"task": task})
        recognizer.set_mission(env.mission)
        assert env.world is not None
        n, free, occupied = env.world.size, env.world.free(), env.world.kinds > 0
        target = {(int(x), int(y)) for x, y in np.concatenate(env.world.instance_cells(env.task.target))}
        beside = {
            (x + dx, y + dy)
            for x, y in target
            for dx in range(-distance, distance + 1)
            for dy in range(-distance, distance + 1)
            if 0 <= x + dx < n and 0 <= y + dy < n and occupied[y + dy, x + dx] and (x + dx, y + dy) not in target
        }
        for cell, is_target in [(c, True) for c in sorted(target)] + [(c, False) for c in sorted(beside)]:
            for heading, (hx, hy) in enumerate(DIR_TO_VEC):
                viewer = (cell[0] - distance * hx, cell[1] - distance * hy)
                between = [(cell[0] - k * hx, cell[1] - k * hy) for k in range(1, distance)]
                if not all(0 <= x < n and 0 <= y < n and free[y, x] for x, y in [viewer, *between]):
                    continue
                env.agent_pos, env.agent_dir = viewer, heading
                image = env.gen_obs()["image"]
                vectors = embedder.embed_images(np.stack([image, centre_view(image)]))
                p_whole, p_centre = (float(p) for p in recognizer.probability(vectors))
                if not is_target and p_whole < confirm:
                    continue  # the whole frame already rules it out: no call for the centre check
                whole[is_target].append(p_whole)
                centre[is_target].append(p_centre)
    thresholds = [0.3, 0.5, 0.7, 0.8, 0.9, 0.95]
    lines = [
        f"Calibration worlds {worlds[0]}-{worlds[-1]}, every task, the robot {distance} cells straight in front "
        f"of a cell (`python tools/calibrate.py --centre --worlds {n_worlds}`): {len(centre[True])} views of "
        f"target cells, {len(centre[False])} views of object cells within {distance} cells of a target whose whole "
        f"frame shows the target (P >= confirm_probability = {confirm}).",
        "",
        "| threshold | whole frame: target cells confirmed | whole frame: cells beside confirmed | "
        "middle of the view: target cells confirmed | middle of the view: cells beside confirmed |",
        "|---:|---:|---:|---:|---:|",
    ]

    def rate(values: list[float], t: float) -> float:
        return float(np.mean(np.asarray(values) >= t)) if values else float("nan")

    for t in thresholds:
        lines.append(
            f"| {t} | {rate(whole[True], t):.3f} | {rate(whole[False], t):.3f} | "
            f"{rate(centre[True], t):.3f} | {rate(centre[False], t):.3f} |"
        )
    chosen = next((t for t in thresholds if rate(centre[False], t) <= 0.01), thresholds[-1])
    lines.append(f"\nchosen: centre_probability={chosen} (lowest threshold with at most 1% of cells beside confirmed)")
    print("\n".join(lines))
    atomic_write_text(out, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
