"""The one protocol every policy follows.

The runner owns the loop; an agent only sees observations::

    agent.reset(obs, spec)          # start of a task: obs["mission"] says what to find
    while not done:
        action = agent.act(obs)
        obs, reward, terminated, truncated, info = env.step(action)
    agent.end_task(success)         # memory agents flush / keep what they saw

Only the oracle is given the environment itself; every other agent works from observations alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from embodmem.envs.spec import SensorSpec

Observation = dict[str, Any]
"""``image`` (H, W, 3) uint8 camera, ``sonar`` (beams,) float32 metres, ``pose`` (3,) float32
[x, y, heading] in cells, ``mission`` str; optionally ``image_left`` / ``image_right`` /
``image_back`` and ``topdown``."""


@dataclass
class Retrieval:
    """One memory hit an agent looked at, kept for logs, videos and VLM prompts."""

    score: float
    node: int | None
    pose: tuple[float, float, float]
    task: str
    step: int
    thumbnail: np.ndarray | None = None


@dataclass
class AgentTrace:
    """What the agent did and why at the last step (read by the recorder, never by the env)."""

    query: str | None = None
    retrievals: list[Retrieval] = field(default_factory=list)
    goal_cell: tuple[int, int] | None = None
    mode: str = ""
    reported: bool = False
    """Whether the agent reports the target in the frame it just judged (its recogniser at or above
    its detect threshold); the reference distance score credits the best reported position."""
    extra: dict[str, Any] = field(default_factory=dict)


class Agent:
    """Base class: override :meth:`reset` and :meth:`act`."""

    name: str = "agent"
    memory: Any | None = None
    """The agent's memory object, if it has one (the runner resets, consolidates or saves it)."""

    def __init__(self) -> None:
        self.trace = AgentTrace()

    def reset(self, observation: Observation, spec: SensorSpec) -> None:
        """Start a new task; ``observation["mission"]`` names the target."""
        self.trace = AgentTrace()

    def act(self, observation: Observation) -> int:
        """Return the next action (an ``embodmem.envs.spec.Action`` value)."""
        raise NotImplementedError

    def end_task(self, success: bool) -> None:
        """Called once when a task ends (success or not). Default: nothing."""

    def episode_stats(self) -> dict[str, float]:
        """Extra per-episode numbers for ``metrics.jsonl`` (e.g. VLM calls). Default: none."""
        return {}


class Navigator:
    """Low-level skills a high-level policy (e.g. a VLM choosing "go to node 7") can call.

    Implemented by the frontier explorer's planner; a high-level policy asks for one action at a time
    and switches skill whenever it likes. Every method returns ``None`` when the skill is finished or
    impossible (no frontier left, node reached or unreachable).
    """

    def update(self, observation: Observation) -> None:
        """Fold one observation into the occupancy grid and pose estimate."""
        raise NotImplementedError

    def frontier_action(self) -> int | None:
        """Next action toward the nearest unexplored frontier."""
        raise NotImplementedError

    def goto_node_action(self, node: int) -> int | None:
        """Next action toward the place of topological-map node ``node``."""
        raise NotImplementedError

    def map_summary(self) -> str:
        """A few lines of text describing the explored map (for prompts)."""
        raise NotImplementedError
