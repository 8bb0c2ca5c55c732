"""The fully observed twin (a memory-need control): the memory agent's skeleton handed the
object map.

Like the oracle, it is given the environment, and reads one privileged thing from it: where the
goal is (every instance of the kind for a category goal, the named instance for a description or
image goal). Everything else is the memory agent's: its recall sends the robot to the nearest such
place on its own map, and the same explorer, occupancy grid, approach and recogniser confirmation
take it there and decide when to stop. Its SPL is what a perfect memory of every object could give
this skeleton, so beside frame memory and cold it shows how much of each goal family memory can
possibly recover. Not an agent to compare with as one: a control.
"""

from __future__ import annotations

import numpy as np

from embodmem.agents.base import RecognitionEmbedder
from embodmem.agents.config import MemoryAgentConfig
from embodmem.agents.memory_agent import MemoryAgent, RecalledPlace
from embodmem.envs.goals import goal_instance
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.memory import AgentMemory


class MappedAgent(MemoryAgent):
    """The memory agent whose recall is the true object map of the goal (privileged; a control)."""

    name = "mapped"

    def __init__(
        self, embedder: RecognitionEmbedder, memory: AgentMemory, config: MemoryAgentConfig, env: UnderwaterEnv
    ):
        super().__init__(embedder, memory, config)
        self.env = env

    def recall_target_place(self) -> RecalledPlace | None:
        """The goal's cell nearest on the robot's map that is not yet rejected."""
        env = self.env
        assert env.world is not None
        cells = env.world.instance_cells(env.task.target)
        if env.task.instance_goal:
            cells = [cells[goal_instance(env.world, env.task)]]
        rejected = self.rejected_places.get(self.recognizer.mission or "", set()) | self.rejected
        candidates = [(int(x), int(y)) for part in cells for x, y in part if (int(x), int(y)) not in rejected]
        if not candidates:
            return None
        distance = self.grid_distance()
        best = min(candidates, key=lambda c: (float(distance[c[1], c[0]]), c))
        self.trace.mode = "recall"
        extent = frozenset(c for c in candidates if np.hypot(c[0] - best[0], c[1] - best[1]) <= 5)
        return RecalledPlace(best, 1.0, 1, frozenset(), extent)
