"""Environment speed: the underwater env alone and batched, against MiniGrid's own partial RGB view.

Everything runs in one process on one thread (OMP/MKL/OpenBLAS threads are set to 1 before numpy
loads), interleaved in rounds so machine noise hits every row alike; the table reports the median
steps/s over rounds and the median of the per-round ratios to MiniGrid's
``RGBImgPartialObsWrapper`` on ``MiniGrid-Empty-16x16-v0`` (tile 8). Batched rows count env steps
across the batch per second (``UnderwaterVectorEnv``: B worlds, 64x64 RGB camera, sonar and pose,
autoreset), so B=64 at 8,000 steps/s is 125 batch steps per second. Random turn/forward actions
(STOP would end episodes at once; MiniGrid's 'done' is a no-op there).

    python benchmarks/bench_env.py --out benchmarks/results/env.md   # the README's speed figures (machine alone)
    python benchmarks/bench_env.py --quick                            # a smoke run
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
from minigrid.wrappers import RGBImgPartialObsWrapper  # noqa: E402

import embodmem  # noqa: E402, F401  (registers EmbodMem/*)
from embodmem.envs.vector import UnderwaterVectorEnv  # noqa: E402
from embodmem.provenance import Provenance, write_results_markdown  # noqa: E402

MINIGRID = "MiniGrid-Empty-16x16 RGBImgPartialObs (tile 8)"
BATCH_SIZES = (1, 16, 64, 256)
BATCH_BAR = (64, 8000.0)
"""The bar for B=64 batched worlds: one process, >= 8,000 env steps/s."""
SINGLE_BAR = 2.0
"""The bar for the single env (32x32 world, 64x64 camera): >= 2.0x MiniGrid's RGB wrapper."""
SINGLE = "underwater 32x32, camera 64x64"


@dataclass
class Row:
    """One benchmarked environment: ``run(steps, seed)`` returns env steps per second."""

    name: str
    run: Callable[[int, int], float]


def single_env_rate(env: gym.Env) -> Callable[[int, int], float]:
    def run(steps: int, seed: int) -> float:
        env.reset(seed=seed)
        actions = np.random.default_rng(seed).integers(0, 3, steps).tolist()
        start = time.perf_counter()
        for action in actions:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
        return steps / (time.perf_counter() - start)

    return run


def batched_rate(envs: UnderwaterVectorEnv) -> Callable[[int, int], float]:
    def run(steps: int, seed: int) -> float:
        envs.reset(seed=seed)
        batch_steps = max(8, steps // envs.num_envs)
        actions = np.random.default_rng(seed).integers(0, 3, (batch_steps, envs.num_envs))
        start = time.perf_counter()
        for batch in actions:
            envs.step(batch)
        return batch_steps * envs.num_envs / (time.perf_counter() - start)

    return run


def build_rows() -> list[Row]:
    rows = [Row(MINIGRID, single_env_rate(RGBImgPartialObsWrapper(gym.make("MiniGrid-Empty-16x16-v0"), tile_size=8)))]
    singles = {
        SINGLE: dict(size=32, image_size=64),
        "underwater 32x32, camera 128x128": dict(size=32, image_size=128),
        "underwater 128x128, camera 64x64": dict(size=128, image_size=64),
    }
    for name, settings in singles.items():
        rows.append(Row(name, single_env_rate(gym.make("EmbodMem/Wreck-v0", world_seed=0, **settings))))
    for b in BATCH_SIZES:
        envs = UnderwaterVectorEnv(num_envs=b, world_seeds=list(range(b)), task="wreck", mission_encoding="index")
        rows.append(Row(f"batched B={b}, 32x32 worlds, camera 64x64 + sonar + pose", batched_rate(envs)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4000, help="env steps per round per row")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 rounds of 500 steps")
    parser.add_argument("--out", help="also write the table here (markdown)")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.rounds = 500, 3
    if args.steps < 1 or args.rounds < 1:
        parser.error(f"--steps={args.steps} and --rounds={args.rounds} must be >= 1")
    load_before = os.getloadavg()
    rows = build_rows()
    for row in rows:  # warm-up: column atlases, caches, first allocations
        row.run(200, 999)
    rates: dict[str, list[float]] = {row.name: [] for row in rows}
    ratios: dict[str, list[float]] = {row.name: [] for row in rows}
    for r in range(args.rounds):
        base = 0.0
        for row in rows:
            rate = row.run(args.steps, r)
            base = rate if row.name == MINIGRID else base
            rates[row.name].append(rate)
            ratios[row.name].append(rate / base)
    lines = [
        f"| environment | steps/s (median of {args.rounds}) | ratio to MiniGrid (median) |",
        "|---|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row.name} | {statistics.median(rates[row.name]):,.0f} | {statistics.median(ratios[row.name]):.2f} |"
        )
    b, bar = BATCH_BAR
    batched = statistics.median(rates[f"batched B={b}, 32x32 worlds, camera 64x64 + sonar + pose"])
    single = statistics.median(ratios[SINGLE])
    lines += [
        "",
        f"- batched B={b}: {batched:,.0f} steps/s (bar >= {bar:,.0f}): {'met' if batched >= bar else 'NOT met'}",
        f"- single env / MiniGrid: {single:.2f}x (bar >= {SINGLE_BAR}): {'met' if single >= SINGLE_BAR else 'NOT met'}",
        f"- {args.rounds} rounds of {args.steps} env steps per row, one process, one thread; load average "
        f"before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}",
    ]
    table = "\n".join(lines) + "\n"
    print(table, end="")
    if args.out:
        write_results_markdown(args.out, "Environment speed against MiniGrid", table, Provenance.collect())


if __name__ == "__main__":
    main()
