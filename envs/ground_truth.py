"""The env's ground truth: one read-only view of the privileged state after a reset or a step.

Like POPGym's ``get_state()`` or Habitat's measures reading the simulator, this is the one channel
through which the privileged state leaves the environment for the harness: the episode measures
(:mod:`embodmem.metrics`), the runner (what was seen, where the robot stood, the seen-place bound),
the oracle (the geodesic field it walks down) and the video (the robot, the fish). Agents other than
the oracle never read it. :meth:`embodmem.envs.underwater.UnderwaterEnv.ground_truth` makes one;
Gymnasium's ``info`` dict carries the same numbers for RL code (:meth:`GroundTruth.info`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, SupportsFloat, TypedDict

import numpy as np

from embodmem.envs.changes import ChangeEvent, WorldChanges
from embodmem.envs.geodesic import bfs_distance
from embodmem.envs.spec import Observation, SensorSpec
from embodmem.envs.tasks import Task
from embodmem.envs.world import World


class ResetOptions(TypedDict, total=False):
    """``reset`` options of the underwater env (see :meth:`~embodmem.envs.underwater.UnderwaterEnv.reset`)."""

    task: str
    task_index: int
    next_task: bool
    start: str
    start_pose: tuple[int, int, int] | list[int]
    world_seed: int
    new_visit: bool


class GroundTruthEnv(Protocol):
    """What the harness needs of an environment: Gymnasium's ``reset`` and ``step`` (the observation
    dict the agents read; ``info`` is not read), the sensor datasheet handed to the agents, and
    :meth:`ground_truth`, the one privileged channel. The runner is typed to this, not to the env."""

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[Observation, object]: ...

    def step(self, action: int) -> tuple[Observation, SupportsFloat, bool, bool, object]: ...

    step_count: int
    """Actions taken in the current task (also when an episode stopped half-way)."""

    @property
    def sensor_spec(self) -> SensorSpec: ...

    def ground_truth(self) -> GroundTruth: ...


class StepInfo(TypedDict):
    """Gymnasium's ``info`` of the underwater env (the API asks for a dict): the same numbers as
    :class:`GroundTruth`, for RL code and wrappers."""

    task: str
    task_index: int
    target: str
    mission: str
    world_seed: int
    step: int
    agent_pos: tuple[int, int]
    agent_dir: int
    start_pose: tuple[int, int, int]
    distance_m: float
    geodesic_m: float
    instance_distances_m: list[float]
    path_length_m: float
    collisions: int
    target_in_view: bool
    visible_instances: list[tuple[str, int]]
    success: bool
    wrong_instance: bool


@dataclass(frozen=True)
class GroundTruth:
    """What the simulator knows after the last reset or step (privileged: never for agents)."""

    world_seed: int
    world: World = field(repr=False)
    """The seabed (its digest identifies it in logs)."""
    task: Task
    task_index: int
    mission: str
    step: int
    """Actions taken in this task so far."""
    max_steps: int
    agent_pos: tuple[int, int]
    """The robot's true cell (the observation's ``pose`` is what it believes)."""
    agent_dir: int
    start_pose: tuple[int, int, int]
    distance_m: float
    """Euclidean metres to the nearest target instance."""
    geodesic_m: float
    """Shortest-path metres to the nearest cell from which stopping succeeds (``inf``: none reachable)."""
    instance_distances_m: list[float]
    """Metres to each target instance, in the world's instance order."""
    path_length_m: float
    """Metres travelled in this task so far."""
    collisions: int
    target_in_view: bool
    visible_instances: list[tuple[str, int]]
    """Target instances (kind, instance) clearly visible in the last frame, sorted."""
    visible_target_cells: frozenset[tuple[str, int, int]]
    """(kind, x, y) of the cells of those instances that the last frame shows."""
    success: bool
    """Whether the episode succeeded (meaningful once it ended)."""
    wrong_instance: bool
    """Stopped by another instance of the goal's kind than the one an instance goal named."""
    geodesic_field: np.ndarray = field(repr=False, compare=False)
    """(n, n) shortest-path metres to the task's success cells from every cell (the oracle walks it)."""
    success_cells: np.ndarray = field(repr=False, compare=False)
    """(n, n) bool: cells from which stopping succeeds."""
    cell_size_m: float
    success_distance_m: float
    fish: np.ndarray = field(repr=False, compare=False)
    """(k, 2) fish positions in cells (they drift; the video draws them)."""
    world_changes: tuple[ChangeEvent, ...] = ()
    """Every change of the world in this visit so far, in order (:mod:`embodmem.envs.changes`;
    empty in a static world): which object, from which cells to which, at which task and step."""
    visit_position: int = 0
    """Position (from 0) of the current task in the visit (which changes have happened)."""
    changes: str | None = None
    """Name of the world's change set (None: a static world, every default sequence's)."""
    change_set: WorldChanges | None = field(default=None, repr=False, compare=False)
    """The world's change set itself (the episode log keeps it, so a replay rebuilds the same world)."""

    @classmethod
    def of(cls, **fields: Any) -> GroundTruth:
        """The view from every field by name, set at once: the env makes one a step, and the
        generated ``__init__`` of a frozen dataclass sets the fields one by one through
        ``object.__setattr__``, which costs more than the rest of making the view. Every field must
        be given (no default is applied, no type checked): for the env, which knows them all.

        Example:
            >>> from embodmem.envs.underwater import UnderwaterEnv
            >>> env = UnderwaterEnv(tasks=("wreck",), world_seed=3)
            >>> _ = env.reset(seed=1)
            >>> truth = env.ground_truth()
            >>> GroundTruth(**vars(truth)) == truth, truth.step
            (True, 0)
        """
        truth = object.__new__(cls)
        truth.__dict__.update(fields)
        return truth

    def path_via_cells_m(self, start: tuple[int, int], cells: set[tuple[int, int]]) -> float:
        """Metres walked by an oracle told only ``cells`` of the current target (see
        :func:`path_via_cells_m`)."""
        return path_via_cells_m(
            self.world.free(), self.success_cells, start, cells, self.cell_size_m, self.success_distance_m
        )

    def info(self) -> StepInfo:
        """The same numbers as Gymnasium's ``info``."""
        return StepInfo(
            task=self.task.name,
            task_index=self.task_index,
            target=self.task.target,
            mission=self.mission,
            world_seed=self.world_seed,
            step=self.step,
            agent_pos=self.agent_pos,
            agent_dir=self.agent_dir,
            start_pose=self.start_pose,
            distance_m=self.distance_m,
            geodesic_m=self.geodesic_m,
            instance_distances_m=self.instance_distances_m,
            path_length_m=self.path_length_m,
            collisions=self.collisions,
            target_in_view=self.target_in_view,
            visible_instances=self.visible_instances,
            success=self.success,
            wrong_instance=self.wrong_instance,
        )


def path_via_cells_m(
    free: np.ndarray,
    success: np.ndarray,
    start: tuple[int, int],
    cells: set[tuple[int, int]],
    cell_size_m: float,
    success_distance_m: float,
) -> float:
    """Metres walked by an oracle told only ``cells`` of the current target (e.g. the parts seen
    earlier): the shortest path toward the success cells near those cells, ending as soon as any
    success cell is reached (``inf`` if none can be).

    This bounds what an agent that only remembers where it saw the target can do: a long pipeline
    seen at its far end is reached there, even if its near end was closer.
    """
    if not cells:
        return float("inf")
    n = free.shape[1]
    yy, xx = np.mgrid[0:n, 0:n]
    told = np.array(sorted(cells), dtype=np.float32)
    near = np.min(np.hypot(xx[None] - told[:, 0, None, None], yy[None] - told[:, 1, None, None]), axis=0)
    goal = success & (near * cell_size_m <= success_distance_m + 1e-6)
    distance = bfs_distance(free, goal)
    x, y = start
    walked = 0
    while not success[y, x]:
        if not np.isfinite(distance[y, x]):
            return float("inf")
        x, y = min(
            ((x + dx, y + dy) for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1)) if 0 <= x + dx < n and 0 <= y + dy < n),
            key=lambda c: distance[c[1], c[0]],
        )
        walked += 1
    return walked * cell_size_m
