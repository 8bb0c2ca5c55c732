"""OracleAgent: the shortest path with privileged knowledge of the world. The upper bound (SPL 1).

It is the only agent handed the environment itself: it reads the env's ground truth (the geodesic
distance field of the current target, its true pose) and walks down the field, turning to face each
step, then stops.
"""

from __future__ import annotations

from embodmem.agents.base import Agent, Observation
from embodmem.agents.mapping import step_toward
from embodmem.envs.ground_truth import GroundTruthEnv
from embodmem.envs.spec import Action, SensorSpec


class OracleAgent(Agent):
    """Follows the true geodesic distance field to the nearest success cell."""

    name = "oracle"

    def __init__(self, env: GroundTruthEnv):
        super().__init__()
        self.env = env

    def reset(self, observation: Observation, spec: SensorSpec) -> None:
        super().reset(observation, spec)

    def act(self, observation: Observation) -> int:
        truth = self.env.ground_truth()
        field = truth.geodesic_field
        x, y = truth.agent_pos
        if field[y, x] == 0:
            return int(Action.STOP)
        best = min(
            ((x + dx, y + dy) for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1))),
            key=lambda c: field[c[1], c[0]],
        )
        return step_toward((x, y, truth.agent_dir), best)
