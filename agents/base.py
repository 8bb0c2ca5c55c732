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

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from embodmem.envs.spec import Observation, SensorSpec
from embodmem.profiling import Profiler
from embodmem.retrieval import Retrieval

if TYPE_CHECKING:
    from embodmem.memory.protocol import Memory


@runtime_checkable
class Embedder(Protocol):
    """Text and image embedding into one space (:class:`embodmem.embedding.embedder.ClipEmbedder` is one)."""

    def embed_texts(self, texts: list[str]) -> np.ndarray: ...

    def embed_images(self, images: np.ndarray) -> np.ndarray: ...


class RecognitionEmbedder(Embedder, Protocol):
    """An embedder a recogniser can score frames with: its vector size and the softmax temperature its
    model was trained with (CLIP's learnt logit scale)."""

    @property
    def dim(self) -> int: ...

    @property
    def logit_scale(self) -> float: ...


@dataclass
class AgentTrace:
    """What the agent did and why at the last step (read by the recorder, never by the env)."""

    query: str | None = None
    retrievals: list[Retrieval] = field(default_factory=list)
    """What the last memory query returned (:mod:`embodmem.retrieval`; the runner logs the best 5)."""
    goal_cell: tuple[int, int] | None = None
    mode: str = ""
    reported: bool = False
    """Whether the agent reports the target in the frame it just judged (its recogniser at or above
    its detect threshold); the reference distance score credits the best reported position."""
    kinds_reported: frozenset[str] = frozenset()
    """Target kinds the agent's recogniser reported in the frame it just judged, whatever the mission
    (an agent that labels its frames; empty otherwise): the runner's ``target_reported_before``."""
    extra: dict[str, float | bool | str | None] = field(default_factory=dict)
    """Per-agent details for the video's caption (e.g. ``p_target``, ``vlm_choice``)."""


class Agent:
    """Base class: override :meth:`reset` and :meth:`act`."""

    name: str = "agent"
    memory: Memory | None = None
    """The agent's frame memory, if it has one (the runner reads its ``stats`` and calls its
    ``sleep``; :class:`embodmem.api.Memory` is everything asked of it)."""
    profiler: Profiler | None = None
    """Set by the runner to time the agent's parts (embedding, mapping, memory, planning)."""

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

    def episode_stats(self) -> Mapping[str, float | str]:
        """Extra per-episode numbers (or a short text) for ``metrics.jsonl`` (e.g. VLM calls). Default: none."""
        return {}


@runtime_checkable
class Policy(Protocol):
    """The agent protocol: every member the runner uses on an agent, and nothing more.

    :class:`Agent` is the stock base to subclass. A plug-in agent (``agent=my_pkg.agents:make_agent``)
    is built by calling its class or factory with the run's build context
    (:class:`embodmem.agents.registry.BuildContext`); the runner then sets ``profiler`` and ``name``
    (its records carry the plug-in's name), and calls :meth:`reset` at each task's start, :meth:`act`
    every step and :meth:`end_task` and :meth:`episode_stats` at its end. One that keeps what it saw
    between tasks also subclasses :class:`MemoryCarrier` (then it runs warm and cold).

    Example:
        >>> from embodmem.agents.random_agent import RandomAgent
        >>> isinstance(RandomAgent(seed=0), Policy), isinstance(object(), Policy)
        (True, False)
    """

    name: str
    trace: AgentTrace
    """What it did and why at the last step (the runner logs ``query``, ``retrievals``, ``reported``)."""
    memory: Memory | None
    """Its frame memory, or None."""
    profiler: Profiler | None

    def reset(self, observation: Observation, spec: SensorSpec) -> None:
        """Start a new task; ``observation["mission"]`` names the target."""
        ...

    def act(self, observation: Observation) -> int:
        """The next action (an ``embodmem.envs.spec.Action`` value)."""
        ...

    def end_task(self, success: bool) -> None:
        """The task ended."""
        ...

    def episode_stats(self) -> Mapping[str, float | str]:
        """Extra per-episode numbers for the record."""
        ...


AGENT_METHODS: tuple[str, ...] = ("reset", "act", "end_task", "episode_stats")
"""The methods of :class:`Policy` (a plug-in class lacking one is refused by name)."""
AGENT_ATTRIBUTES: tuple[str, ...] = ("trace", "memory")
"""The attributes a built agent must have (``name`` and ``profiler`` are set by the runner)."""


class MemoryCarrier(ABC):
    """An agent whose experience outlives a task (the warm condition).

    The runner resets it before each task of the cold condition, labels what it writes, and, for
    evaluation episodes, saves its state and loads it into a fresh agent built from the same config, so
    evaluation never touches the agent being carried.
    """

    @abstractmethod
    def reset_memory(self) -> None:
        """Forget everything carried between tasks (the cold condition)."""

    @abstractmethod
    def set_context(self, run_id: str, task: str, episode: int) -> None:
        """Labels written with every frame (called before each task)."""

    @abstractmethod
    def save_state(self, directory: Path) -> None:
        """Write everything carried between tasks (memory, map) into ``directory``."""

    @abstractmethod
    def load_state(self, directory: Path) -> None:
        """Replace the carried state by the one :meth:`save_state` wrote."""

    def steps_to_correct(self) -> int | None:
        """In a changing world: steps from the first observation that contradicted a place its
        memory sent it to in this task, to its memory's update (None: none, or not updated)."""
        return None

    @abstractmethod
    def implant(self, images: np.ndarray, poses: list[tuple[int, int, int]]) -> None:
        """Store ``images`` as if they had been seen at ``poses`` (false memories, for the
        poisoning experiments: the harness implants them, the agent must cope)."""


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
