"""What a video is drawn from: the fixed scene of an episode and one small snapshot per step.

Rendering happens after the episode from these records, so that one code path serves the live
recorder (driven by the runner) and the replay tool (driven by an episode log), and so that an
episode nobody wants to watch costs no drawing and no encoding.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from embodmem.agents.base import AgentTrace, Retrieval
from embodmem.envs.changes import ChangeEvent
from embodmem.envs.ground_truth import GroundTruth, GroundTruthEnv
from embodmem.envs.tasks import SEQUENCES
from embodmem.retrieval import RetrievalEvent

if TYPE_CHECKING:  # the memory package (FAISS) is not needed to draw a replay
    from embodmem.memory import TopologicalMap


@dataclass(frozen=True)
class MapSnapshot:
    """The topological map at one moment: node anchor poses and edges (shared while unchanged)."""

    positions: np.ndarray
    """(n, 2) float node poses (x, y) in cells."""
    edges: np.ndarray
    """(m, 2) int node pairs."""

    @classmethod
    def of(cls, topo_map: TopologicalMap) -> MapSnapshot:
        """Copy what drawing needs from a topological map."""
        edges = np.asarray(list(topo_map.graph.edges()), dtype=np.int64).reshape(-1, 2)
        return cls(np.array(topo_map.positions, dtype=np.float64), edges)


@dataclass
class StepRecord:
    """What one step contributes to a video: the camera frame, the pose, the running measures and
    the agent's trace. Small (about 12 kB at 64 px), so a whole episode can wait for its verdict."""

    step: int
    image: np.ndarray
    action: int | None
    pos: tuple[int, int]
    heading: int
    distance_m: float
    path_length_m: float
    collisions: int
    target_in_view: bool
    fish: np.ndarray | None = None
    mode: str = ""
    goal_cell: tuple[int, int] | None = None
    p_target: float | None = None
    query: str | None = None
    retrievals: list[Retrieval] | None = None
    """Memory hits the agent looked at *at this step* (None: no query this step)."""
    graph: MapSnapshot | None = None
    current_node: int | None = None
    changes: tuple[ChangeEvent, ...] = ()
    """A changing world's changes by this step (``GroundTruth.world_changes``; the map draws them)."""

    @classmethod
    def capture(
        cls,
        truth: GroundTruth,
        obs: Mapping[str, Any],
        action: int | None,
        trace: AgentTrace | None = None,
        graph: MapSnapshot | None = None,
        current_node: int | None = None,
    ) -> StepRecord:
        """Snapshot the state after ``env.step(action)`` from the env's ground truth (``trace``: the agent's, if any)."""
        p = None if trace is None else trace.extra.get("p_target")
        goal = None if trace is None or trace.goal_cell is None else (int(trace.goal_cell[0]), int(trace.goal_cell[1]))
        x, y = truth.agent_pos
        return cls(
            step=truth.step,
            image=np.array(obs["image"], dtype=np.uint8, copy=True),
            action=None if action is None else int(action),
            pos=(int(x), int(y)),
            heading=truth.agent_dir,
            distance_m=truth.distance_m,
            path_length_m=float(truth.path_length_m),
            collisions=truth.collisions,
            target_in_view=truth.target_in_view,
            fish=np.array(truth.fish, dtype=np.float32, copy=True),
            mode="" if trace is None else trace.mode,
            goal_cell=goal,
            p_target=None if p is None else float(p),
            graph=graph,
            current_node=current_node,
            changes=truth.world_changes,
        )


@dataclass
class Scene:
    """What stays fixed during an episode: the seabed, the targets, the start and the task."""

    kinds: np.ndarray
    """(n, n) kind id per cell."""
    target_mask: np.ndarray
    """(n, n) bool: cells of the task's target instances."""
    start_pose: tuple[int, int, int]
    mission: str
    task: str
    task_number: int
    """The task's number in the reference benchmark (1-12), not its place in the sequence."""
    world_seed: int
    max_steps: int
    position: int | None = None
    """1-based place of this task in the run's sequence (None: unknown)."""
    sequence_length: int | None = None
    """Tasks in the run's sequence (None: unknown)."""

    @classmethod
    def from_env(cls, env: GroundTruthEnv) -> Scene:
        """Read the scene from an env's ground truth during an episode (privileged: for humans).

        The place in the sequence is left unknown: the env cannot tell two runs of the same task
        apart; :meth:`placed` sets it from the episode's record.
        """
        return cls.from_truth(env.ground_truth())

    @classmethod
    def from_truth(cls, truth: GroundTruth) -> Scene:
        """The scene of the episode ``truth`` belongs to."""
        world = truth.world
        mask = np.zeros(world.kinds.shape, dtype=bool)
        for cells in world.instance_cells(truth.task.target):
            mask[cells[:, 1], cells[:, 0]] = True
        sx, sy, sd = truth.start_pose
        return cls(
            kinds=world.kinds.copy(),
            target_mask=mask,
            start_pose=(int(sx), int(sy), int(sd)),
            mission=str(truth.mission),
            task=truth.task.name,
            task_number=int(truth.task.number),
            world_seed=int(truth.world_seed),
            max_steps=int(truth.max_steps),
        )

    def placed(self, record: Mapping[str, Any]) -> Scene:
        """This scene with its place in the sequence read from a metrics record (``task_index``,
        ``sequence``); keys the record lacks leave the place unknown.

        >>> scene = Scene(np.zeros((2, 2), np.uint8), np.zeros((2, 2), bool), (0, 0, 0), "find x", "wreck", 4, 0, 10)
        >>> s = scene.placed({"task_index": 1, "sequence": "wreck_then_barrel"})
        >>> (s.position, s.sequence_length), scene.placed({"task_index": 2, "sequence": "wreck+barrel+aircraft"}).sequence_length
        ((1, 2), 3)
        """
        index = record.get("task_index")
        return dataclasses.replace(
            self,
            position=None if index is None else int(index),
            sequence_length=sequence_length(record.get("sequence")),
        )


def sequence_length(sequence: str | None) -> int | None:
    """Tasks in a run's sequence: a named one, or an explicit list (``"wreck+barrel"``, as the app
    names it); None when unknown."""
    if not sequence:
        return None
    return len(SEQUENCES[sequence]) if sequence in SEQUENCES else len(sequence.split("+"))


def retrievals_from_log(entries: Iterable[Mapping[str, Any]]) -> dict[int, tuple[str | None, list[Retrieval]]]:
    """Step -> (query, hits) from an episode log's ``retrievals`` (no thumbnails: logs keep none)."""
    events = [RetrievalEvent.from_log(e) for e in entries]
    return {e.step: (e.query, list(e.hits)) for e in events}
