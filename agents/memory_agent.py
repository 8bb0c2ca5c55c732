"""MemoryAgent: the explorer plus episodic memory and a topological map that outlive a task.

It writes every frame to memory. At a task's start, and every few steps while exploring, it asks
memory for frames that match the mission text; when the best match is confident (its own frame
recognised as the target with high probability) it works out where that frame was looking (its
pose and heading, cast over the occupancy grid it remembers), plans there, and approaches exactly
as the explorer would after seeing the target itself. Otherwise it explores.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from embodmem.agents.base import Observation, Retrieval
from embodmem.agents.explorer import ExplorerConfig, FrontierExplorer
from embodmem.memory import AgentMemory, FrameMeta, MemoryConfig
from embodmem.envs.spec import DIR_TO_VEC, Action, SensorSpec


@dataclass
class MemoryAgentConfig(ExplorerConfig):
    """Explorer thresholds plus when to trust memory."""

    memory_probability: float = 0.7
    """P(target) of a remembered frame above which the agent goes there instead of exploring."""
    memory_k: int = 8
    """Frames retrieved per query."""
    requery_every: int = 20
    """Steps between memory queries while exploring."""


class MemoryAgent(FrontierExplorer):
    """Frontier explorer whose memory (frames, map, occupancy) carries over between tasks."""

    name = "memory"

    def __init__(self, embedder, memory: AgentMemory | None = None, config: MemoryAgentConfig | None = None):
        super().__init__(embedder, config or MemoryAgentConfig())
        self.config: MemoryAgentConfig
        self.memory = memory if memory is not None else AgentMemory(MemoryConfig(dim=embedder.dim))
        self.context = {"run_id": "run", "task": "", "episode": 0}
        self._last_query_step = -10**9
        self.scan_turns = 0
        self.current_node: int | None = None
        self.queries = 0

    def set_context(self, run_id: str, task: str, episode: int) -> None:
        """Labels written with every frame (the runner calls this before each task)."""
        self.context = {"run_id": run_id, "task": task, "episode": episode}

    def reset(self, observation: Observation, spec: SensorSpec) -> None:
        super().reset(observation, spec)
        self._last_query_step = -10**9
        self.scan_turns = 0

    def reset_spatial_memory_if_cold(self) -> None:
        """Warm by default: the occupancy grid survives the task (``reset_memory`` clears it)."""

    def reset_memory(self) -> None:
        """Forget everything: frames, map and occupancy (the cold condition)."""
        self.memory.reset()
        if self.grid is not None:
            self.grid.reset()

    def end_task(self, success: bool) -> None:
        self.memory.flush()

    # ---------------------------------------------------------------- perception + writing

    def update(self, observation: Observation) -> None:
        super().update(observation)
        assert self.last_vector is not None
        x, y, h = self.pose
        meta = FrameMeta(
            run_id=self.context["run_id"],
            task=self.context["task"],
            episode=int(self.context["episode"]),
            step=self.steps,
            x=float(x),
            y=float(y),
            heading=h,
            thumbnail=observation["image"] if self.memory.config.keep_thumbnails else None,
        )
        with self.timed("memory_write"):
            self.current_node = self.memory.observe(self.last_vector, meta)

    # ---------------------------------------------------------------- decisions

    def decide(self, observation: Observation) -> int:
        if self.candidate is None and self.scan_turns > 0 and self.last_probability < self.config.detect_probability:
            self.scan_turns -= 1  # a recalled place disappointed: turn on the spot before exploring
            return int(Action.TURN_LEFT)
        if self.candidate is None and self.last_probability < self.config.detect_probability:
            if self.steps - self._last_query_step >= self.config.requery_every:
                self.candidate = self.recall_target_cell()
                self._last_query_step = self.steps
        return super().decide(observation)

    def recall_target_cell(self) -> tuple[int, int] | None:
        """Ask memory where the mission's target was seen; return the cell to approach, if confident."""
        with self.timed("memory_query"):
            return self._recall_target_cell()

    def _recall_target_cell(self) -> tuple[int, int] | None:
        hits = self.memory.query(self.recognizer.query, self.config.memory_k)
        self.queries += 1
        if not hits:
            return None
        probs = self.recognizer.probability(self.memory.hit_vectors(hits))
        self.trace.query = self.recognizer.mission
        self.trace.retrievals = [
            Retrieval(float(p), h.meta.node, (h.meta.x, h.meta.y, h.meta.heading), h.meta.task, h.meta.step, h.meta.thumbnail)
            for h, p in zip(hits, probs)
        ]
        # Triangulation: every confident frame votes for the cells the map says it could see; cells
        # seen by several confident frames from different places win.
        assert self.spec is not None and self.grid is not None
        rays = np.linspace(-self.half_fov, self.half_fov, 9)
        reach = self.spec.view_range_m / self.spec.cell_size_m
        votes: dict[tuple[int, int], float] = {}
        for hit, p in zip(hits, probs):
            if p < self.config.memory_probability:
                continue
            pose = (int(round(hit.meta.x)), int(round(hit.meta.y)), int(hit.meta.heading))
            cells = [c for c in self.grid.first_hits(pose, rays, reach) if c not in self.rejected]
            for c in cells:
                votes[c] = votes.get(c, 0.0) + float(p) / len(cells)
        if not votes:
            return None
        self.trace.mode = "recall"
        self.scan_turns = 3  # if the guess is wrong, look around there before exploring again
        return max(votes, key=votes.get)


    def goto_node_action(self, node: int) -> int | None:
        """Navigator skill: next action toward the place of topological-map node ``node``."""
        positions = self.memory.map.positions
        if not 0 <= node < len(positions):
            return None
        assert self.grid is not None
        goal = np.zeros_like(self.grid.free)
        gx, gy = (int(round(v)) for v in positions[node])
        if not (0 <= gx < self.grid.size and 0 <= gy < self.grid.size) or (gx, gy) == self.pose[:2]:
            return None
        goal[gy, gx] = True
        return self.goto_cell_action(goal, f"node{node}")

    def episode_stats(self) -> dict[str, float]:
        stats = self.memory.stats()
        return {"memory_queries": self.queries, "memory_nodes": stats.get("nodes", 0)}
