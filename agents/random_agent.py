"""RandomAgent: uniformly random moves, stopping rarely. The floor every other agent must beat."""

from __future__ import annotations

import numpy as np

from embodmem.agents.base import Agent, Observation
from embodmem.envs.spec import Action, SensorSpec


class RandomAgent(Agent):
    """Random turns and moves; issues ``stop`` with probability ``stop_probability`` per step."""

    name = "random"

    def __init__(self, seed: int = 0, stop_probability: float = 0.01):
        super().__init__()
        if not 0.0 <= stop_probability <= 1.0:
            raise ValueError(f"stop_probability={stop_probability} must lie in [0, 1]")
        self.rng = np.random.default_rng(seed)
        self.stop_probability = stop_probability

    def reset(self, observation: Observation, spec: SensorSpec) -> None:
        super().reset(observation, spec)

    def act(self, observation: Observation) -> int:
        if self.rng.random() < self.stop_probability:
            return int(Action.STOP)
        return int(self.rng.choice([Action.TURN_LEFT, Action.TURN_RIGHT, Action.FORWARD, Action.FORWARD]))
