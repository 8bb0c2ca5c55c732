"""Environment speed: steps/s of the underwater env against MiniGrid's own partial RGB view.

Both run in the same process, interleaved in rounds, so machine noise hits them alike; the table
reports the median over rounds and the median of per-round ratios.

    python benchmarks/bench_env.py            # default camera, 32x32 and 128x128 worlds
    python benchmarks/bench_env.py --quick
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
from minigrid.wrappers import RGBImgPartialObsWrapper

import embodmem.envs  # noqa: F401  (registers EmbodMem/*)


def steps_per_second(env: gym.Env, n: int, seed: int) -> float:
    """Random actions for ``n`` steps (resets included, as an agent would see them)."""
    env.reset(seed=seed)
    env.action_space.seed(seed)
    start = time.perf_counter()
    for _ in range(n):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    return n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="steps per round per environment")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 rounds of 500 steps")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.rounds = 500, 3

    baseline = RGBImgPartialObsWrapper(gym.make("MiniGrid-Empty-16x16-v0"), tile_size=8)
    # The benchmark measures the environment, not the agent: STOP would end episodes at once,
    # so the random policy excludes it (as MiniGrid's 'done' action is a no-op there).
    configs = {
        "underwater 32x32, camera 64x64": dict(id="EmbodMem/Wreck-v0", size=32, image_size=64),
        "underwater 32x32, camera 128x128": dict(id="EmbodMem/Wreck-v0", size=32, image_size=128),
        "underwater 128x128, camera 64x64": dict(id="EmbodMem/Wreck-v0", size=128, image_size=64),
    }
    made = {}
    for name, cfg in configs.items():
        cfg = dict(cfg)
        env = gym.make(cfg.pop("id"), **cfg)
        env.action_space = gym.spaces.Discrete(3)  # turn left, turn right, forward
        made[name] = env
    rates: dict[str, list[float]] = {"MiniGrid-Empty-16x16 RGBImgPartialObs (tile 8)": []}
    ratios: dict[str, list[float]] = {name: [] for name in made}
    rates.update({name: [] for name in made})
    for r in range(args.rounds):
        base = steps_per_second(baseline, args.steps, seed=r)
        rates["MiniGrid-Empty-16x16 RGBImgPartialObs (tile 8)"].append(base)
        for name, env in made.items():
            v = steps_per_second(env, args.steps, seed=r)
            rates[name].append(v)
            ratios[name].append(v / base)
    print(f"| environment | steps/s (median of {args.rounds}) | ratio to MiniGrid (median) |")
    print("|---|---:|---:|")
    for name, values in rates.items():
        ratio = f"{statistics.median(ratios[name]):.2f}" if name in ratios else "1.00"
        print(f"| {name} | {statistics.median(values):,.0f} | {ratio} |")


if __name__ == "__main__":
    main()
