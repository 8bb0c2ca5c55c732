"""The underwater survey environment: a MiniGrid world seen through a first-person camera and sonar.

Example::

    >>> import gymnasium as gym, embodmem
    >>> env = gym.make("EmbodMem/Wreck-v0", world_seed=3)
    >>> obs, info = env.reset(seed=0)
    >>> obs["image"].shape, obs["mission"]
    ((64, 64, 3), 'find a sunken ship')
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from typing import Any, cast

import cv2
import numpy as np
from gymnasium import spaces
from minigrid.core.constants import TILE_PIXELS
from minigrid.core.grid import Grid
from minigrid.core.mission import MissionSpace
from minigrid.minigrid_env import MiniGridEnv

from embodmem.envs.camera import BatchVisibility, Camera, Sonar, WaterLook, pad_kinds
from embodmem.envs.changes import ChangeEvent, Due, WorldChanges, apply_changes
from embodmem.envs.config import EXTRA_VIEWS, EnvConfig
from embodmem.envs.fauna import drift
from embodmem.envs.geodesic import bfs_distance
from embodmem.envs.goals import goal_instance, instance_distance_maps, render_goal_view
from embodmem.envs.ground_truth import GroundTruth, StepInfo, path_via_cells_m
from embodmem.envs.objects import KIND_COLORS, KIND_SYMBOLS, KINDS
from embodmem.envs.odometry import DeadReckoning, degrade_sonar
from embodmem.envs.seabed_object import SeabedObject
from embodmem.envs.spec import ACTION_NAMES, DIR_TO_VEC, Action, Observation, SensorSpec
from embodmem.envs.tasks import ALL_MISSIONS, Task, get_task
from embodmem.envs.world import World, generate_world
from embodmem.envs.wrappers import ObservationSpace

VISIBLE_FRACTION = 0.01
"""A target counts as "in view" when its fog-weighted pixels cover this fraction of the image."""
START_MODES = ("fixed0", "fixed1", "random", "continue")


_IS_TARGET = np.array([k.is_target for k in KINDS])
_KIND_NAMES = tuple(k.name for k in KINDS)
_MAX_INSTANCES = 64
"""Instances of one kind a world may hold (the slots of :func:`visible_targets_of`'s sums)."""


def shows_target_kind(kind: np.ndarray, kind2: np.ndarray) -> np.ndarray:
    """Whether each frame, from the kinds of its columns' two layers (..., N), shows a target kind:
    a frame that does not shows no target instance (:func:`visible_targets_of` skips it)."""
    return _IS_TARGET[kind].any(axis=-1) | _IS_TARGET[kind2].any(axis=-1)


def layered_columns(
    vis: Mapping[str, np.ndarray], width: int, height: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Both layers of frames' columns one after the other along the last axis (a frame's (N,) or a
    batch's (B, N) visibility arrays): kind, cell x, cell y (wrapped into the world) and fog-weighted
    visible pixels; the world's instances at those cells complete :data:`FrameColumns`."""
    return (
        np.concatenate([vis["kind"], vis["kind2"]], axis=-1),
        np.concatenate([vis["cell_x"], vis["cell_x2"]], axis=-1) % width,
        np.concatenate([vis["cell_y"], vis["cell_y2"]], axis=-1) % height,
        np.concatenate([vis["pixels"], vis["pixels2"]], axis=-1),
    )


VisibleTargets = tuple[set[tuple[str, int]], frozenset[tuple[str, int, int]]]
"""A frame's clearly visible target instances (kind, instance) and the cells of theirs that it
shows (kind, x, y): what the ground truth's ``visible_instances`` and ``visible_target_cells`` hold."""


def visible_targets_of(
    kinds: np.ndarray, xs: np.ndarray, ys: np.ndarray, instances: np.ndarray, pixels: np.ndarray, frame_size: int
) -> list[VisibleTargets]:
    """The :data:`VisibleTargets` of each of R frames of ``frame_size`` pixels that show a target
    kind, from their columns (arrays (R, N): kind, cell x and y, the world's instance at the cell hit
    (-1: none), fog-weighted visible pixels). An instance is clearly visible when its pixels cover
    ``VISIBLE_FRACTION`` of the frame; its cells shown are those of its columns with pixels. One
    ``bincount`` serves every frame, and each frame's sums add its own columns in their order, as
    the frame alone would: the batched env gets the single env's sets.
    """
    rows = len(kinds)
    keep = (instances >= 0) & (kinds > 0) & (pixels > 0)
    per_frame = len(KINDS) * _MAX_INSTANCES
    key = (np.arange(rows)[:, None] * len(KINDS) + kinds) * _MAX_INSTANCES + instances
    kept = key[keep]
    clear = np.bincount(kept, weights=pixels[keep]) >= VISIBLE_FRACTION * frame_size**2
    found: list[set[tuple[str, int]]] = [set() for _ in range(rows)]
    for k in np.flatnonzero(clear).tolist():
        row, slot = divmod(k, per_frame)
        found[row].add((_KIND_NAMES[slot // _MAX_INSTANCES], slot % _MAX_INSTANCES))
    cells: list[set[tuple[str, int, int]]] = [set() for _ in range(rows)]
    if any(found):
        shown = np.zeros_like(keep)
        shown[keep] = clear[kept]  # a column with pixels of a clearly visible instance
        r, c = np.nonzero(shown)
        for row, kind, x, y in zip(r.tolist(), kinds[r, c].tolist(), xs[r, c].tolist(), ys[r, c].tolist()):
            cells[row].add((_KIND_NAMES[kind], x, y))
    return [(seen, frozenset(shown_cells)) for seen, shown_cells in zip(found, cells)]


def robot_triangle(center: tuple[float, float], heading: int, radius: float) -> np.ndarray:
    """Corners (int32, 3x2) of the arrow that marks the robot on top-down maps."""
    cx, cy = center
    dx, dy = DIR_TO_VEC[heading % 4]
    r = radius
    return np.array(
        [
            (cx + dx * r, cy + dy * r),
            (cx - dx * r * 0.6 - dy * r * 0.6, cy - dy * r * 0.6 + dx * r * 0.6),
            (cx - dx * r * 0.6 + dy * r * 0.6, cy - dy * r * 0.6 - dx * r * 0.6),
        ],
        dtype=np.int32,
    )


@functools.lru_cache(maxsize=64)
def _world_of(seed: int, size: int, obstacle_density: float, variants: bool) -> World:
    """The seabed of ``seed``, generated once per process and shared by every env of that world (the
    lockstep runner builds several envs per world). Worlds are values: a change copies its world
    (:mod:`embodmem.envs.changes`), and the shared arrays are read-only, so a write into one fails
    rather than reaching the other envs."""
    world = generate_world(seed, size, obstacle_density, variants=variants)
    for array in (world.kinds, world.instances, world.looks):
        if array is not None:
            array.flags.writeable = False
    return world


def task_maps(world: World, task: Task, cell_size_m: float, success_distance_m: float) -> dict[str, np.ndarray]:
    """Distance maps of a task's target in ``world``: metres to each instance (only the goal instance
    for an instance goal) and to the nearest one, the cells from which stopping succeeds, and the
    shortest-path metres to those cells.

    Example:
        >>> from embodmem.envs.tasks import TASKS
        >>> env = UnderwaterEnv(tasks=("wreck",), world_seed=3)
        >>> maps = task_maps(env.world, TASKS["wreck"], env.cell_size_m, env.success_distance_m)
        >>> sorted(maps), bool(maps["success"].any())
        (['geodesic', 'instances', 'nearest', 'success'], True)
    """
    inst = instance_distance_maps(world, task.target, cell_size_m)
    if task.instance_goal:  # only THAT instance counts
        inst = inst[[goal_instance(world, task)]]
    free = world.free()
    success = free & (inst.min(axis=0) <= success_distance_m + 1e-6)
    geodesic = bfs_distance(free, success) * cell_size_m
    return {"instances": inst, "nearest": inst.min(axis=0), "geodesic": geodesic, "success": success}


_SHARED_TASK_MAPS: dict[tuple[object, ...], dict[str, np.ndarray]] = {}
""":func:`task_maps` of the unchanged worlds, by (:func:`_world_of`'s arguments, task, cell size,
success distance): the lockstep runner starts each task of a world in several envs (one per agent
and condition), which then share one copy. Emptied when it reaches :data:`SHARED_TASK_MAPS`."""
SHARED_TASK_MAPS = 256


def _shared_task_maps(
    world: World, world_key: tuple[int, int, float, bool], task: Task, cell_size_m: float, success_distance_m: float
) -> dict[str, np.ndarray]:
    """:func:`task_maps` in the unchanged world ``world`` of ``world_key`` (whose generation makes the
    same world from the same key), made once per process; read-only, as the world's arrays are."""
    key = (world_key, task, cell_size_m, success_distance_m)
    maps = _SHARED_TASK_MAPS.get(key)
    if maps is None:
        maps = task_maps(world, task, cell_size_m, success_distance_m)
        for array in maps.values():
            array.flags.writeable = False
        if len(_SHARED_TASK_MAPS) >= SHARED_TASK_MAPS:
            _SHARED_TASK_MAPS.clear()
        _SHARED_TASK_MAPS[key] = maps
    return maps


def _mission_text(mission: str) -> str:
    return mission


def _check(cond: bool, name: str, value: Any, why: str) -> None:
    if not cond:
        raise ValueError(f"{name}={value!r}: {why}")


FrameColumns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""A frame's columns, both layers: kind, cell x, cell y, instance at that cell (-1: none), pixels."""

BatchRow = tuple[BatchVisibility, int]
"""A frame's row of a batch's visibility (the batched env's frames; cut out only when read)."""


class UnderwaterEnv(MiniGridEnv):
    """
    ## Description

    A survey robot swims over a procedurally generated seabed (rock outcrops, reefs, cables, tower
    wreckage, metal debris, a collapsed tower, a rock arch, fish) and has to find a target and stop
    next to it. The seabed holds the eight target kinds of the reference underwater benchmark with
    their instance counts: mining robots (2), oil pipelines (3), oil drums (1), sunken ships (2), an
    electrical box (1), a wind power station (1), aircraft wreckage (3) and an H-marked landing
    platform (1). The world depends only on `world_seed`; the episode seed drives fish, particles,
    random starts and sensor noise. Tasks of a sequence run in one persistent world, so what the
    robot saw in one task is still there in the next. The reference benchmark's depth axis
    (ascend/descend) is left out: the world is 2-D. This environment is useful for studying memory
    that transfers between tasks.

    ## Arguments

    `task` (or `tasks`, a sequence run in one world), `world_seed`, and every field of
    `embodmem.envs.config.EnvConfig` as a keyword (`size`, `max_steps`, `image_size`, ...; or a whole
    `config=EnvConfig(...)`); `render_size` and `render_mode` for `render()`.

    ## Mission Space

    "find {target}" or "find {target} in deep water", e.g. "find a sunken ship" (one mission per
    task, listed in `embodmem.envs.tasks.MISSIONS`); instance goals (`envs/tasks.py`) say "find the
    capsized sunken ship" (description) or "find what the goal image shows" (image). RL libraries that need numeric observations
    use `embodmem.envs.wrappers.MissionToIndex` (the mission's index) or `DropMission`.

    ## Action Space

    | Num | Name         | Action                    |
    |-----|--------------|---------------------------|
    | 0   | turn_left    | Turn left                 |
    | 1   | turn_right   | Turn right                |
    | 2   | forward      | Move forward              |
    | 3   | stop         | Stop: ends the episode    |
    | 4   | backward     | Move backward             |
    | 5   | strafe_left  | Move left, keep heading   |
    | 6   | strafe_right | Move right, keep heading  |

    ## Observation Encoding

    - A dict: `image` (S, S, 3) uint8, the first-person camera; optional `image_left`,
        `image_right`, `image_back`; optional `topdown`, MiniGrid's 7x7 egocentric view as 56x56 RGB;
        `sonar` (beams,) float32 ranges in metres over a fan centred on the heading; `pose` float32
        [x, y, heading] in cells (heading 0 east, 1 south, 2 west, 3 north): what the robot believes,
        so with odometry noise or drift (`envs/odometry.py`) x and y are off the truth by an error
        that grows with the distance travelled; `mission` str; with `instance_goals`, `goal_image`
        (S, S, 3) uint8: the goal instance of an image goal seen from a fixed pose, zeros for other
        goals. Nothing privileged: no map, no target positions, no instance's variant.
    - MiniGrid's grid (`FullyObsWrapper`, `ViewSizeWrapper`, `SymbolicObsWrapper`) encodes each
        tile as `(OBJECT_IDX, COLOR_IDX, STATE)` in MiniGrid's type indices: a target is a `box`,
        every other seabed kind a `wall`; `COLOR_IDX` is the project's own, 6 + kind id - 1 (see
        `embodmem.envs.objects.KINDS`), beyond MiniGrid's colours 0-5; `STATE` is 0.
    - `OneHotPartialObsWrapper`, `DictObservationSpaceWrapper`, `FlatObsWrapper` and
        `DirectionObsWrapper` do not fit this env: wrapping it in one raises
        `embodmem.envs.wrappers.UnsupportedWrapperError` with the reason and the alternative
        (`embodmem.envs.wrappers.UNSUPPORTED`).

    ## Rewards

    A reward of '1' is given when the robot stops within `success_distance_m` of an instance of the
    target (for a description or image goal: of *that* instance; stopping by a sibling sets
    `info["wrong_instance"]`), and '0' otherwise.

    ## Termination

    The episode ends if any one of the following conditions is met:

    1. The robot stops (`stop`), next to the target or not.
    2. Timeout (see `max_steps`).

    `info` carries `distance_m`, `geodesic_m`, `instance_distances_m`, `path_length_m`,
    `collisions`, `target_in_view` and `success` (agents must not read it); the harness reads the
    same privileged state through `ground_truth()` (`embodmem.envs.ground_truth.GroundTruth`).

    ## Registered Configurations

    - `EmbodMem/MiningRobot-v0`
    - `EmbodMem/Pipeline-v0`
    - `EmbodMem/Barrel-v0`
    - `EmbodMem/Wreck-v0`
    - `EmbodMem/ElectricalBox-v0`
    - `EmbodMem/WindStation-v0`
    - `EmbodMem/Aircraft-v0`
    - `EmbodMem/LandingPlatform-v0`
    - `EmbodMem/DeepPipeline-v0`
    - `EmbodMem/DeepBarrel-v0`
    - `EmbodMem/DeepWreck-v0`
    - `EmbodMem/DeepWindStation-v0`
    - `EmbodMem/Sequence-v0` (wreck, then barrel)

    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 10}
    observation_space: spaces.Dict
    world: World
    """The seabed of ``world_seed`` (built in ``__init__``, replaced by ``reset(options={"world_seed": ...})``)."""

    def __init__(
        self,
        task: str = "wreck",
        tasks: tuple[str, ...] | list[str] | None = None,
        world_seed: int = 0,
        config: EnvConfig | None = None,
        render_size: int = 256,
        render_mode: str | None = None,
        changes: WorldChanges | None = None,
        **settings: Any,
    ):
        """``settings`` are :class:`~embodmem.envs.config.EnvConfig` fields (over ``config``, if given);
        ``changes``: how the world changes over the tasks of a visit (:mod:`embodmem.envs.changes`)."""
        c = dataclasses.replace(config or EnvConfig(), **settings)  # an unknown setting is a TypeError naming it
        self.config = c
        """The world's settings (checked by EnvConfig)."""
        self.tasks: tuple[str, ...] = tuple(tasks) if tasks else (task,)
        self.instance_goals = bool(c.instance_goals) or any(get_task(name).instance_goal for name in self.tasks)
        """A world whose instances wear appearance variants, with ``goal_image`` in the observation
        (``EnvConfig.instance_goals``, or any instance goal among ``tasks``)."""
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode={render_mode!r}: valid modes are {self.metadata['render_modes']}")

        super().__init__(
            mission_space=MissionSpace(mission_func=_mission_text, ordered_placeholders=[list(ALL_MISSIONS)]),
            grid_size=c.size,
            max_steps=c.step_budget,
            render_mode=render_mode,
        )
        self.world_seed = int(world_seed)
        self.cell_size_m = float(c.cell_size_m)
        self.success_distance_m = float(c.success_distance_m)
        self.extra_views = tuple(c.extra_views)
        self.topdown = c.topdown
        self.sonar_range_cells = c.sonar_range_m / c.cell_size_m
        self.sonar_noise_m = c.sonar_noise_m
        self.odometry_noise = c.odometry_noise
        self.sonar_dropout = c.sonar_dropout
        self.dead_reckoning = DeadReckoning(c.odometry_noise, c.odometry_drift_pct, c.odometry_carry)
        """The robot's believed position (envs/odometry.py); the truth stays in ``agent_pos``."""
        self.view_range_cells = c.view_range_m / c.cell_size_m
        self.deep_view_range_cells = c.deep_view_range_m / c.cell_size_m
        self.n_fish = c.fish
        self.obstacle_density = c.obstacle_density
        self.start_min_distance_m = float(c.start_min_distance_m)
        self.render_size = render_size
        self.camera = Camera(c.image_size, c.fov_deg)
        self.spec_sensors = SensorSpec(
            cell_size_m=self.cell_size_m,
            image_size=c.image_size,
            camera_fov_deg=c.fov_deg,
            view_range_m=c.view_range_m,
            sonar_beams=c.sonar_beams,
            sonar_fov_deg=c.sonar_fov_deg,
            sonar_max_range_m=c.sonar_range_m,
            grid_size=c.size,
            extra_views=self.extra_views,
            odometry_drift_pct=c.odometry_drift_pct,
            odometry_noise_cells=c.odometry_noise,
        )
        self.sonar = Sonar(np.array(self.spec_sensors.sonar_angles()), self.sonar_range_cells)
        self._pad = max(self.sonar.reach, int(math.ceil(max(self.view_range_cells, self.deep_view_range_cells))) + 2)

        self.actions = Action
        self.action_space = spaces.Discrete(len(Action))
        img_space = spaces.Box(0, 255, (c.image_size, c.image_size, 3), np.uint8)
        obs_spaces: dict[str, spaces.Space] = {
            "image": img_space,
            "sonar": spaces.Box(0.0, c.sonar_range_m, (c.sonar_beams,), np.float32),
            "pose": spaces.Box(
                np.array([-c.size, -c.size, 0], np.float32),
                np.array([2 * c.size, 2 * c.size, 3], np.float32),
                dtype=np.float32,
            ),
            "mission": self.observation_space["mission"],
        }
        for view in self.extra_views:
            obs_spaces[view] = img_space
        if c.topdown:
            obs_spaces["topdown"] = spaces.Box(0, 255, (56, 56, 3), np.uint8)
        if self.instance_goals:
            obs_spaces["goal_image"] = img_space  # the goal instance seen from a fixed pose; zeros otherwise
        self.observation_space = ObservationSpace(obs_spaces)

        self.task_index = 0
        self.task: Task = get_task(self.tasks[0])
        self.mission = self.task.mission
        self._task_cache: dict[str, dict[str, np.ndarray]] = {}
        self._goal_images: dict[str, np.ndarray] = {}
        self._last_end_pose: tuple[int, int, int] | None = None
        self.changes = changes if changes is not None and changes.active else None
        """The world's changes over a visit (None: a static world, as every default sequence has)."""
        self.change_events: list[ChangeEvent] = []
        """Changes applied in this visit so far, in order (privileged: ground truth, logs, video)."""
        self.visit_position = 0
        """Position (from 0) of the current task in the visit: which changes have happened."""
        self._success_now = False
        self._targets_now: VisibleTargets | None = None
        """The last frame's visible targets once found (:meth:`_visible_targets`)."""
        self._build_world(self.world_seed)

    # ------------------------------------------------------------------ world and task

    def _build_world(self, world_seed: int) -> None:
        self.world_seed = int(world_seed)
        self._world_key = (self.world_seed, self.width, float(self.obstacle_density), self.instance_goals)
        """:func:`_world_of`'s arguments for this world."""
        self.world = _world_of(*self._world_key)
        self._base_world = self.world
        self.change_events = []
        self.visit_position = 0
        self._applied = 0
        self._adopt_world(self.world)
        self._check_goals_exist()
        self._last_end_pose = None

    def _adopt_world(self, world: World) -> None:
        """Make ``world`` the one the sensors see and the measures read (a new world, or a change)."""
        self.world = world
        self._padded = pad_kinds(self.world.look_map, self._pad)
        self._task_cache.clear()
        self._goal_images.clear()
        self._grid = None  # MiniGrid's grid of the new world, built when read

    def _schedule(self) -> list[Due]:
        assert self.changes is not None
        return self.changes.schedule(max(len(self.tasks), self.visit_position + 1))

    def _catch_up(self, due: int) -> None:
        """Apply the schedule's first ``due`` applications (from the base world if fewer are applied now)."""
        if due < self._applied:
            world, self.change_events, self._applied = self._base_world, [], 0
        else:
            world = self.world
        if due > self._applied:
            assert self.changes is not None
            world, events = apply_changes(world, self.changes, self._schedule()[self._applied : due])
            self.change_events = [*self.change_events, *events]
            self._applied = due
        if world is not self.world:
            self._adopt_world(world)

    def _go_to_position(self, position: int) -> None:
        """The world as it is before task ``position`` (from 0) of the visit starts: the base world
        with every change of earlier tasks and this task's step-0 changes (:mod:`embodmem.envs.changes`)."""
        self.visit_position = position
        if self.changes is not None:
            self._catch_up(
                sum(d.task - 1 < position or (d.task - 1 == position and d.step == 0) for d in self._schedule())
            )

    def _apply_changes_now(self) -> None:
        """Changes due during the current task by this step (``WorldChange.step``)."""
        p, k = self.visit_position, self.step_count
        due = sum(d.task - 1 < p or (d.task - 1 == p and d.step <= k) for d in self._schedule())
        if due > self._applied:
            self._catch_up(due)
            self._maps = self._task_maps(self.task)

    def _nearest_free(self, x: int, y: int) -> tuple[int, int]:
        """``(x, y)`` if it is open water, else the nearest open-water cell reachable from the fixed
        start (an object a change put on the robot's cell pushes it aside, like a current)."""
        free = self.world.free()
        if free[y, x]:
            return x, y
        sx, sy, _ = self.world.fixed_starts[0]
        source = np.zeros_like(free)
        source[sy, sx] = True
        ys, xs = np.nonzero(np.isfinite(bfs_distance(free, source)))
        i = int(np.argmin(np.abs(xs - x) + np.abs(ys - y) + 1e-3 * (ys * self.width + xs)))
        return int(xs[i]), int(ys[i])

    @property
    def grid(self) -> Grid:
        """MiniGrid's grid of the world (:meth:`_gen_grid`), built when first read: MiniGrid's
        top-down views and wrappers read it, the harness never does."""
        if self._grid is None:
            self._gen_grid(self.width, self.height)
        assert self._grid is not None
        return self._grid

    @grid.setter
    def grid(self, grid: Grid) -> None:
        self._grid = grid

    def _gen_grid(self, width: int, height: int) -> None:
        """Copy the world into MiniGrid's grid (used by MiniGrid's top-down views)."""
        assert self.world is not None
        self.grid = Grid(width, height)
        ys, xs = np.nonzero(self.world.kinds)
        for x, y in zip(xs.tolist(), ys.tolist()):
            kind = KINDS[int(self.world.kinds[y, x])].name
            self.grid.set(x, y, SeabedObject(kind, int(self.world.instances[y, x])))

    def _task_maps(self, task: Task, world: World | None = None) -> dict[str, np.ndarray]:
        """Distance maps for a target kind (:func:`task_maps`): in the current world (cached; shared
        by every env of the process while it is the unchanged world of its seed), or in ``world``."""
        key = task.target if not task.instance_goal else f"{task.target}.{task.variant}"
        cached = self._task_cache.get(key) if world is None else None
        if cached is None:
            where = self.world if world is None else world
            assert where is not None
            if where is self._base_world:
                cached = _shared_task_maps(where, self._world_key, task, self.cell_size_m, self.success_distance_m)
            else:
                cached = task_maps(where, task, self.cell_size_m, self.success_distance_m)
            if world is None:
                self._task_cache[key] = cached
        return cached

    def _start_field(self, task: Task) -> np.ndarray:
        """The geodesic field random starts are drawn from: the current world's; in a changing
        world the unchanged (base) world's, so that a changing world and its controls (the same
        changes hoisted to the first task, or none) start each task from the same pose."""
        if self.changes is None or self.world is self._base_world:
            return self._task_maps(task)["geodesic"]
        try:
            return self._task_maps(task, self._base_world)["geodesic"]
        except ValueError:  # the goal (an added or re-dressed instance) is not in the base world
            return self._task_maps(task)["geodesic"]

    def _random_start(self, geodesic_m: np.ndarray) -> tuple[int, int, int]:
        """A free cell from which the nearest success cell is at least ``start_min_distance_m`` away
        by the shortest path (the farthest reachable cells if none is), and a random heading."""
        reachable = np.isfinite(geodesic_m)
        far = reachable & (geodesic_m >= self.start_min_distance_m)
        if not far.any():
            far = reachable & (geodesic_m >= geodesic_m[reachable].max())
        ys, xs = np.nonzero(far)
        i = int(self.np_random.integers(len(xs)))
        return int(xs[i]), int(ys[i]), int(self.np_random.integers(4))

    @property
    def sensor_spec(self) -> SensorSpec:
        """What agents may know about the sensors (no world state). The visibility is that of the
        current task's light (deep water: ``deep_view_range_m``), as the robot's own light sensor says."""
        if self.task is not None and self.task.deep:
            return dataclasses.replace(self.spec_sensors, view_range_m=self.deep_view_range_cells * self.cell_size_m)
        return self.spec_sensors

    # ------------------------------------------------------------------ gymnasium API

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[Observation, StepInfo]:
        """Start a task. ``options`` may hold:

        - ``task`` (a task name) or ``task_index`` (position in ``tasks``) or ``next_task`` (bool);
          without them the current task is repeated.
        - ``start``: one of ``fixed0``, ``fixed1``, ``random`` (a free cell at least
          ``start_min_distance_m`` from the nearest success cell by the shortest path, random heading,
          drawn from ``seed``), ``continue`` (where the previous episode ended). Default: ``fixed0``
          for the first task, ``continue`` afterwards.
        - ``start_pose``: an explicit (x, y, heading), used by replays.
        - ``world_seed``: switch to another world (the world persists otherwise).
        - ``new_visit``: the first task of a visit: with ``odometry_carry`` the pose error restarts
          from zero here (and on a new world) and is kept across the tasks in between.
        """
        super(MiniGridEnv, self).reset(seed=seed)
        options = dict(options or {})
        unknown = set(options) - {"task", "task_index", "next_task", "start", "start_pose", "world_seed", "new_visit"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}")
        new_visit = bool(options.get("new_visit", False))
        if "world_seed" in options and int(options["world_seed"]) != self.world_seed:
            self._build_world(int(options["world_seed"]))
            new_visit = True
        position = self.visit_position
        if "task_index" in options:
            position = int(options["task_index"])
        elif new_visit:
            position = 0
        elif "task" in options or options.get("next_task"):
            position += 1
        if "task" in options:
            self.task = get_task(options["task"])
            if options["task"] in self.tasks:
                self.task_index = self.tasks.index(options["task"])
        elif "task_index" in options or options.get("next_task"):
            idx = int(options["task_index"]) if "task_index" in options else self.task_index + 1
            _check(0 <= idx < len(self.tasks), "task_index", idx, f"must lie in [0, {len(self.tasks) - 1}]")
            self.task_index = idx
            self.task = get_task(self.tasks[idx])
        self.mission = self.task.mission
        self._go_to_position(position)
        assert self.world is not None
        self._check_goal_world(self.task)

        default_start = "fixed0" if self.task_index == 0 and "task" not in options else "continue"
        start = options.get("start", default_start)
        _check(start in START_MODES, "start", start, f"valid: {list(START_MODES)}")
        if "start_pose" in options:
            x, y, d = (int(v) for v in options["start_pose"])
            _check(
                0 <= x < self.width and 0 <= y < self.height and bool(self.world.free()[y, x]) and 0 <= d < 4,
                "start_pose",
                options["start_pose"],
                "must be a free cell (x, y) with heading in 0..3",
            )
        elif start == "continue" and self._last_end_pose is not None:
            x, y, d = self._last_end_pose
        elif start == "random":
            x, y, d = self._random_start(self._start_field(self.task))
        else:
            x, y, d = self.world.fixed_starts[1 if start == "fixed1" else 0]
        if self.changes is not None:
            x, y = self._nearest_free(x, y)
        self.agent_pos = (x, y)
        self.agent_dir = d
        self.start_pose = (x, y, d)
        self.carrying = None
        self.step_count = 0
        self.path_length_m = 0.0
        self.collisions = 0
        self._stopped_at_wrong_instance = False
        self.dead_reckoning.start_task(self.np_random, new_visit)
        self.trajectory: list[tuple[int, int]] = [(x, y)]
        self._maps = self._task_maps(self.task)
        free_y, free_x = np.nonzero(self.world.free())
        pick = self.np_random.choice(len(free_x), size=min(self.n_fish, len(free_x)), replace=False)
        self.fish = np.stack([free_x[pick], free_y[pick]], axis=1).astype(np.float64) + 0.5
        n_part = max(8, self.camera.size * self.camera.size // 100)
        self.particles = np.concatenate(
            [self.np_random.random((n_part, 2)) * self.camera.size, self.np_random.uniform(0.05, 0.3, (n_part, 1))],
            axis=1,
        )
        obs = self.gen_obs()
        return obs, self._info(success=False)

    def step(self, action: int) -> tuple[Observation, float, bool, bool, StepInfo]:
        terminated, truncated, success = self._act(action)
        self._move_fish()
        obs = self.gen_obs()
        return obs, float(success), terminated, truncated, self._info(success)

    def _act(self, action: int) -> tuple[bool, bool, bool]:
        """Apply one action to the robot (no fish, no observation): (terminated, truncated, success).
        ``step`` and the batched env (envs/vector.py) share it."""
        if not (type(action) is int or self.action_space.contains(action)) or not 0 <= action < len(ACTION_NAMES):
            raise ValueError(f"action={action!r} is not one of {ACTION_NAMES}")
        action = int(action)
        self.step_count += 1
        terminated = False
        success = False
        if action == Action.TURN_LEFT:
            self.agent_dir = (self.agent_dir - 1) % 4
        elif action == Action.TURN_RIGHT:
            self.agent_dir = (self.agent_dir + 1) % 4
        elif action == Action.STOP:
            terminated = True
            success = bool(
                self._maps["nearest"][self.agent_pos[1], self.agent_pos[0]] <= self.success_distance_m + 1e-6
            )
            self._stopped_at_wrong_instance = not success and self._near_sibling()
        else:
            fx, fy = DIR_TO_VEC[self.agent_dir]
            if action == Action.FORWARD:
                dx, dy = fx, fy
            elif action == Action.BACKWARD:
                dx, dy = -fx, -fy
            elif action == Action.STRAFE_LEFT:
                dx, dy = fy, -fx
            else:  # Action.STRAFE_RIGHT, the last one left
                dx, dy = -fy, fx
            nx, ny = self.agent_pos[0] + dx, self.agent_pos[1] + dy
            if self.world.kinds[ny, nx] == 0:
                self.agent_pos = (nx, ny)
                self.path_length_m += self.cell_size_m
                self.trajectory.append((nx, ny))
                self.dead_reckoning.move(self.np_random)
            else:
                self.collisions += 1
        if self.changes is not None:  # changes due after this action (WorldChange.step)
            self._apply_changes_now()
            self.agent_pos = self._nearest_free(int(self.agent_pos[0]), int(self.agent_pos[1]))
        truncated = not terminated and self.step_count >= self.max_steps
        if terminated or truncated:
            self._last_end_pose = (self.agent_pos[0], self.agent_pos[1], self.agent_dir)
        return terminated, truncated, success

    # ------------------------------------------------------------------ observations

    def _move_fish(self) -> None:
        """Each fish drifts to a random neighbouring water cell with probability 0.3 (envs/fauna.py)."""
        draws = self._fauna_draws()
        self.fish = drift(self.fish[None], self.particles[None], self.world.kinds[None], draws[None], self.camera.size)[
            0
        ]

    def _fauna_draws(self) -> np.ndarray:
        """This step's uniform draws for the fish and particles (one per fish, one per particle)."""
        return self.np_random.random(len(self.fish) + len(self.particles))

    def _look(self) -> WaterLook:
        vr = self.deep_view_range_cells if self.task.deep else self.view_range_cells
        return WaterLook.for_light(self.task.lux, vr)

    def gen_obs(self) -> Observation:
        look = self._look()
        x, y, d = self.agent_pos[0], self.agent_pos[1], self.agent_dir
        image, visibility = self.camera.render(self._padded, self._pad, x, y, d, look, self.fish, self.particles)
        views = {
            view: self.camera.render(
                self._padded, self._pad, x, y, (d + EXTRA_VIEWS[view]) % 4, look, self.fish, self.particles
            )[0]
            for view in self.extra_views
        }
        return self._observation(image, visibility, views, self.sonar.scan(self._padded, self._pad, x, y, d))

    def _observation(
        self,
        image: np.ndarray,
        visibility: dict[str, np.ndarray] | BatchRow,
        views: dict[str, np.ndarray],
        sonar: np.ndarray,
    ) -> Observation:
        """The observation from what the sensors caught this step (camera frame and its visibility,
        or its row of a batch's, extra views, clean sonar ranges in cells); ``gen_obs`` and the
        batched env (envs/vector.py) both end here, so anything an observation sets belongs here."""
        if isinstance(visibility, dict):
            self._frame_visibility: dict[str, np.ndarray] | None = visibility
        else:
            self._frame_visibility, self._batch_row = None, visibility
        self._columns: FrameColumns | None = None  # this frame's, once read (_frame_columns)
        self._last_image = image
        obs = cast(Observation, {"image": image, **views})  # keys in the order of observation_space
        if self.topdown:
            obs["topdown"] = self.get_pov_render(tile_size=8)
        obs["sonar"] = self._sonar_reading(sonar)
        obs["pose"] = self._pose_reading()
        obs["mission"] = self.mission
        if self.instance_goals:
            obs["goal_image"] = self.goal_image(self.task)
        return obs

    def _sonar_reading(self, ranges_cells: np.ndarray) -> np.ndarray:
        """The sonar observation from the clean ranges in cells: metres, noise and dropouts (draws)."""
        sonar = degrade_sonar(
            ranges_cells * self.cell_size_m,
            self.np_random,
            self.sonar_noise_m,
            self.sonar_dropout,
            self.spec_sensors.sonar_max_range_m,
        )
        return sonar.astype(np.float32, copy=False)

    def _pose_reading(self) -> np.ndarray:
        """The pose observation: the dead-reckoned position (clipped to 3x the world) and the heading."""
        px = self.agent_pos[0] + self.dead_reckoning.error[0]
        py = self.agent_pos[1] + self.dead_reckoning.error[1]
        return np.array(
            [min(max(px, -self.width), 2 * self.width), min(max(py, -self.height), 2 * self.height), self.agent_dir],
            dtype=np.float32,
        )

    @property
    def _visibility(self) -> dict[str, np.ndarray]:
        """The last frame's visibility record (:meth:`Camera.render`'s dict). A batched frame's is cut
        from its batch when first read: most steps show no target and never read it."""
        if self._frame_visibility is None:
            batch, row = self._batch_row
            self._frame_visibility = batch.of(row)
        return self._frame_visibility

    def visible_pixels(self) -> dict[str, float]:
        """Fog-weighted pixel count per kind in the last camera frame (for captions and metrics)."""
        vis = self._visibility
        counts = np.bincount(vis["kind"], weights=vis["pixels"], minlength=len(KINDS))
        counts += np.bincount(vis["kind2"], weights=vis["pixels2"], minlength=len(KINDS))
        return {KINDS[i].name: float(c) for i, c in enumerate(counts) if c > 0 and i > 0}

    def _frame_columns(self) -> FrameColumns:
        """Both layers of the last frame's columns, one after the other: kind, cell x, cell y, the
        world's instance at that cell (-1: none) and fog-weighted visible pixels (cut once a frame)."""
        if self._columns is None:
            assert self.world is not None
            kinds, xs, ys, pixels = layered_columns(self._visibility, self.width, self.height)
            self._columns = (kinds, xs, ys, self.world.instances[ys, xs], pixels)
        return self._columns

    def visible_instances(self) -> set[tuple[str, int]]:
        """Target instances (kind, instance) clearly visible in the last frame."""
        return set(self._visible_targets()[0])

    def visible_target_cells(self) -> set[tuple[str, int, int]]:
        """(kind, x, y) of the cells of clearly visible target instances that the last frame shows."""
        return set(self._visible_targets()[1])

    def _visible_targets(self) -> VisibleTargets:
        """The last frame's :data:`VisibleTargets`, found once (unless the batched env found them)."""
        if self._targets_now is None:
            vis = self._visibility
            if not shows_target_kind(vis["kind"], vis["kind2"]):
                self._targets_now = (set(), frozenset())
            else:
                kinds, xs, ys, inst, pixels = self._frame_columns()
                self._targets_now = visible_targets_of(
                    kinds[None], xs[None], ys[None], inst[None], pixels[None], self.camera.size
                )[0]
        return self._targets_now

    def path_via_cells_m(self, start: tuple[int, int], cells: set[tuple[int, int]]) -> float:
        """Metres walked by an oracle told only ``cells`` of the current target (e.g. the parts seen
        earlier): the shortest path toward the success cells near those cells, ending as soon as
        any success cell is reached (``inf`` if none can be).

        This bounds what an agent that only remembers where it saw the target can do: a long
        pipeline seen at its far end is reached there, even if its near end was closer.
        """
        assert self.world is not None and self.task is not None
        success = self._task_maps(self.task)["success"]
        return path_via_cells_m(self.world.free(), success, start, cells, self.cell_size_m, self.success_distance_m)

    def _note_step(self, success: bool, targets: VisibleTargets | None = None) -> None:
        """Keep what :meth:`ground_truth` and :meth:`_info` read of this reset or step: its success
        and, when the batched env has found them for every world at once, the frame's
        :data:`VisibleTargets` (None: found when first read)."""
        self._success_now = success
        self._targets_now = targets

    def _info(self, success: bool, targets: VisibleTargets | None = None) -> StepInfo:
        """Gymnasium's info for this step (:meth:`_note_step` with the same arguments, then the dict)."""
        self._note_step(success, targets)
        x, y = self.agent_pos
        visible = self._visible_targets()[0]
        return {
            "task": self.task.name,
            "task_index": self.task_index,
            "target": self.task.target,
            "mission": self.mission,
            "world_seed": self.world_seed,
            "step": self.step_count,
            "agent_pos": (int(x), int(y)),
            "agent_dir": int(self.agent_dir),
            "start_pose": self.start_pose,
            "distance_m": float(self._maps["nearest"][y, x]),
            "geodesic_m": float(self._maps["geodesic"][y, x]),
            "instance_distances_m": self._maps["instances"][:, y, x].tolist(),
            "path_length_m": self.path_length_m,
            "collisions": self.collisions,
            "target_in_view": any(k == self.task.target for k, _ in visible),
            "visible_instances": sorted(visible),
            "success": success,
            "wrong_instance": self._stopped_at_wrong_instance,
        }

    def ground_truth(self) -> GroundTruth:
        """The privileged state after the last reset or step, as one view (:mod:`embodmem.envs.ground_truth`):
        what the measures, the runner, the oracle and the video read; never the agents."""
        x, y = self.agent_pos
        visible, cells = self._visible_targets()
        maps = self._maps
        return GroundTruth.of(
            world_seed=self.world_seed,
            world=self.world,
            task=self.task,
            task_index=self.task_index,
            mission=self.mission,
            step=self.step_count,
            max_steps=self.max_steps,
            agent_pos=(int(x), int(y)),
            agent_dir=int(self.agent_dir),
            start_pose=self.start_pose,
            distance_m=float(maps["nearest"][y, x]),
            geodesic_m=float(maps["geodesic"][y, x]),
            instance_distances_m=maps["instances"][:, y, x].tolist(),
            path_length_m=self.path_length_m,
            collisions=self.collisions,
            target_in_view=bool(visible) and any(k == self.task.target for k, _ in visible),
            visible_instances=sorted(visible) if visible else [],
            visible_target_cells=cells,
            success=self._success_now,
            wrong_instance=self._stopped_at_wrong_instance,
            geodesic_field=maps["geodesic"],
            success_cells=maps["success"],
            cell_size_m=self.cell_size_m,
            success_distance_m=self.success_distance_m,
            fish=self.fish,
            world_changes=tuple(self.change_events),
            visit_position=self.visit_position,
            changes=None if self.changes is None else self.changes.name,
            change_set=self.changes,
        )

    # ------------------------------------------------------------------ instance goals

    def _check_goal_world(self, task: Task) -> None:
        """An instance goal needs a world with variants: refuse it in one line otherwise."""
        if task.instance_goal and not self.instance_goals:
            raise ValueError(
                f"task={task.name!r}: an instance goal needs a world with variants; "
                "set instance_goals=True (EnvConfig) or list it among the env's tasks"
            )

    def _check_goals_exist(self) -> None:
        """Every instance goal among the tasks names a variant some instance of this world wears
        (refused in one line, before any episode, otherwise)."""
        for name in self.tasks:
            task = get_task(name)
            if task.instance_goal and self.instance_goals:
                assert task.variant is not None and self.world is not None
                self.world.instance_of(task.target, task.variant)

    def goal_image(self, task: Task) -> np.ndarray:
        """The goal image of an image goal (rendered once per world and goal); zeros for other goals."""
        if task.modality != "image":
            return np.zeros((self.camera.size, self.camera.size, 3), dtype=np.uint8)
        image = self._goal_images.get(task.name)
        if image is None:
            assert self.world is not None
            vr = self.deep_view_range_cells if task.deep else self.view_range_cells
            look = WaterLook.for_light(task.lux, vr)
            image = render_goal_view(self.world, task, self.camera, self._padded, self._pad, look).image
            image.flags.writeable = False
            self._goal_images[task.name] = image
        return image

    def _near_sibling(self) -> bool:
        """Stopped within success range of an instance of the target kind that is not the goal."""
        if not self.task.instance_goal:
            return False
        assert self.world is not None
        x, y = self.agent_pos
        dists = instance_distance_maps(self.world, self.task.target, self.cell_size_m)[:, y, x]
        goal = goal_instance(self.world, self.task)
        return bool(any(d <= self.success_distance_m + 1e-6 for i, d in enumerate(dists) if i != goal))

    # ------------------------------------------------------------------ rendering

    def top_down(self, cell_px: int | None = None) -> np.ndarray:
        """Top-down RGB map of the world with fish, trajectory and the robot (privileged: for humans)."""
        assert self.world is not None
        n = self.width
        px = cell_px or max(1, self.render_size // n)
        img = KIND_COLORS[self.world.kinds]
        img = np.repeat(np.repeat(img, px, axis=0), px, axis=1).copy()
        if len(self.trajectory) > 1:
            pts = ((np.array(self.trajectory) + 0.5) * px).astype(np.int32)
            cv2.polylines(img, [pts], False, (255, 255, 255), max(1, px // 4))
        for fx, fy in self.fish:
            cv2.circle(img, (int(fx * px), int(fy * px)), max(1, px // 4), (140, 220, 210), -1)
        ax, ay = self.agent_pos
        cv2.fillPoly(
            img, [robot_triangle(((ax + 0.5) * px, (ay + 0.5) * px), self.agent_dir, max(2.0, px * 0.6))], (255, 40, 40)
        )
        return img

    def pprint_grid(self) -> str:
        """The grid as text, two characters a cell: the kind's ``symbol``, the robot as ``>>``/``VV``/...

        MiniGrid's version spells MiniGrid's object names, which would print every seabed kind as a
        wall or a box.
        """
        if self.world is None or self.agent_pos is None:
            raise ValueError("the environment has not been reset: call reset() before pprint_grid()")
        rows = []
        for y in range(self.height):
            cells = [KIND_SYMBOLS[int(k)] for k in self.world.kinds[y]]
            if y == self.agent_pos[1]:
                cells[self.agent_pos[0]] = 2 * ">V<^"[self.agent_dir]
            rows.append("".join(cells))
        return "\n".join(rows)

    def get_frame(self, highlight: bool = True, tile_size: int = TILE_PIXELS, agent_pov: bool = False) -> np.ndarray:
        """MiniGrid's frame; ``agent_pov=True`` is the robot's own view: the camera, each pixel a tile.

        ``RGBImgPartialObsWrapper`` declares ``image``'s shape times ``tile_size``; MiniGrid's POV
        render (a 7x7 top-down patch, the ``topdown`` observation) would not match it.
        """
        if agent_pov:
            return np.repeat(np.repeat(self._last_image, tile_size, axis=0), tile_size, axis=1)
        return super().get_frame(highlight=highlight, tile_size=tile_size, agent_pov=False)

    def render(self) -> np.ndarray | None:
        """``rgb_array``: the camera enlarged beside the top-down map, both ``render_size`` tall."""
        if self.render_mode != "rgb_array":
            return None
        rs = self.render_size
        cam = cv2.resize(self._last_image, (rs, rs), interpolation=cv2.INTER_NEAREST)
        top = cv2.resize(self.top_down(), (rs, rs), interpolation=cv2.INTER_NEAREST)
        return np.concatenate([cam, top], axis=1)
