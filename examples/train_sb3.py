"""Train Stable-Baselines3 PPO and sb3-contrib RecurrentPPO (an LSTM policy, the usual memory
baseline) on a raw registered id, with nothing but the documented keyword ``mission_encoding="index"``.

    pip install -e '.[test]'          # brings stable-baselines3 and sb3-contrib
    python examples/train_sb3.py      # 2,048 steps each; prints steps/s

This shows the envs plug into RL libraries; 2,048 steps teach a policy nothing about the task.
``tests/envs/test_rl_libraries.py`` runs it (with a smaller camera, so it runs in CI).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import gymnasium as gym
from sb3_contrib import RecurrentPPO
from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm

import embodmem  # noqa: F401  (registers the EmbodMem/* ids)

ALGORITHMS: dict[str, tuple[type[BaseAlgorithm], str]] = {
    "PPO": (PPO, "MultiInputPolicy"),
    "RecurrentPPO": (RecurrentPPO, "MultiInputLstmPolicy"),
}


@dataclass(frozen=True)
class TrainingRun:
    """One algorithm's run: how many steps it took and how fast."""

    algorithm: str
    steps: int
    seconds: float

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds


def train(algorithm: str, env_id: str, steps: int, image_size: int, seed: int) -> TrainingRun:
    """Train ``algorithm`` for ``steps`` env steps on ``env_id`` (mission as its index), on the CPU."""
    env = gym.make(env_id, mission_encoding="index", image_size=image_size, world_seed=1)
    cls, policy = ALGORITHMS[algorithm]
    model = cls(policy, env, n_steps=512, batch_size=128, n_epochs=4, seed=seed, device="cpu", verbose=0)
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    seconds = time.perf_counter() - start
    env.close()
    assert model.num_timesteps == steps, (model.num_timesteps, steps)
    return TrainingRun(algorithm, model.num_timesteps, seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="embodmem:EmbodMem/Wreck-v0", help="a registered id")
    parser.add_argument("--steps", type=int, default=2048, help="env steps per algorithm (a multiple of 512)")
    parser.add_argument("--image-size", type=int, default=64, help="camera pixels (36 is NatureCNN's smallest)")
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=list(ALGORITHMS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for algorithm in args.algorithms:
        run = train(algorithm, args.env, args.steps, args.image_size, args.seed)
        print(f"{run.algorithm}: {run.steps} steps in {run.seconds:.1f} s ({run.steps_per_s:.0f} steps/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
