"""MemoryAgent: the explorer plus episodic memory and a topological map that outlive a task.

:class:`RecallAgent` is the skeleton it shares with the text log (agents/textlog_agent.py): the
explorer, a carried occupancy map and the rules that turn remembered sightings into a place to go.
What is remembered, and how it is looked up (:meth:`RecallAgent.sightings`), is each subclass's own.

It writes every frame to memory, labelled with the target kind it shows (if any). At a task's start,
and every few steps while exploring, it asks memory for frames that match the mission text; when
confident ones exist (its own frames, recognised as the target with high probability, not
contradicted by another frame of the same view) it works out where they were looking (their poses
and headings, cast over the occupancy grid it remembers), ranks the places they agree on by
confidence per step of travel, heads for the nearest part of the best one, and approaches exactly as
the explorer would after seeing the target itself. Otherwise it explores. docs/concepts/agents.md, "How the memory
agent uses what it remembers", explains each step.
"""

from __future__ import annotations

import functools
import time
from abc import abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np

from embodmem.agents.base import MemoryCarrier, Observation, RecognitionEmbedder, Retrieval
from embodmem.agents.config import MemoryAgentConfig
from embodmem.agents.explorer import FrontierExplorer
from embodmem.agents.recognizer import KIND_PROMPT_NAMES, KindLabeller, found_up_to
from embodmem.envs.geodesic import bfs_distance
from embodmem.envs.objects import TARGET_KINDS
from embodmem.envs.spec import DIR_TO_VEC, Action, SensorSpec
from embodmem.memory import AgentMemory, FrameMeta, Hit, MemoryConfig, MemoryLoadError, QueryFilter, WriteContext
from embodmem.memory.persistence import writer_lock
from embodmem.memory.protocol import Memory
from embodmem.memory.snapshot import (
    GRID_FILE,
    MemoryDesign,
    RejectedPlaces,
    companion_digest_of_memory,
    read_map_snapshot,
    read_memory_design,
    save_map_snapshot,
)
from embodmem.memory.updates import CONTRADICTED_WEIGHT, PlaceUpdate, forget_records


@dataclass(frozen=True)
class RecalledPlace:
    """A place memory says the target is: the best cell, the vote mass and the viewpoints behind it."""

    cell: tuple[int, int]
    support: float
    viewpoints: int
    views: frozenset[tuple[int, int, int]] = frozenset()
    """Poses of the remembered frames that voted for it (discredited together if it is rejected)."""
    extent: frozenset[tuple[int, int]] = frozenset()
    """Occupied cells joined to ``cell`` on the map that may be parts of the same target (a
    pipeline seen at one end): the robot judges the nearest first."""


_NONE_RECOGNISED = np.zeros(len(TARGET_KINDS), dtype=bool)
_NONE_RECOGNISED.flags.writeable = False
"""The recognised mask of a frame that shows no target kind (read only)."""


@functools.cache
def _as_compared(dtype: np.dtype, threshold: float) -> float:
    """``threshold`` as numpy compares an array of ``dtype`` with it (a Python float is cast to the
    array's float type first), for the same verdict from a comparison of Python floats.

    >>> p = np.float32(0.7)
    >>> bool(np.array([p]) >= 0.7), float(p) >= 0.7, float(p) >= _as_compared(np.dtype(np.float32), 0.7)
    (True, False, True)
    """
    return float(dtype.type(threshold))


def _near(cell: tuple[int, int], cells: set[tuple[int, int]], radius: int) -> bool:
    return any(abs(cell[0] - c[0]) <= radius and abs(cell[1] - c[1]) <= radius for c in cells)


class RecallAgent(FrontierExplorer, MemoryCarrier):
    """The frontier explorer with a map that outlives a task and a recall of places: at a task's
    start, and every few steps while exploring, it asks :meth:`sightings` for remembered views of
    the mission's target, ranks the places they agree on, heads for the best and judges it by the
    view; rejected places and discredited views are carried between tasks. Subclasses keep the
    sightings (frames: :class:`MemoryAgent`; a text log: ``TextLogAgent``) and say how they are
    written, read, saved and forgotten."""

    def __init__(self, embedder: RecognitionEmbedder, config: MemoryAgentConfig | None = None):
        super().__init__(embedder, config or MemoryAgentConfig())
        self.config: MemoryAgentConfig
        self.labeller = KindLabeller(embedder)
        """Labels every frame written with the target kind it most likely shows (``kinds`` eviction)."""
        self.context: WriteContext = {"run_id": "run", "task": "", "episode": 0}
        self._last_query_step = -(10**9)
        self.scan_turns = 0
        self.current_node: int | None = None
        self.queries = 0
        self.recalled: RecalledPlace | None = None
        self.rejected_places: dict[str, set[tuple[int, int]]] = {}
        """Places where the target of a mission was looked for and not found (carried between tasks)."""
        self.discredited_views: dict[str, set[tuple[int, int, int]]] = {}
        """Poses of remembered frames that sent the robot to a rejected place, per mission: frames
        from there no longer count as sightings of that target (carried between tasks)."""
        self._recall_rays = np.linspace(-0.65, 0.65, 9)
        self._distant_misses = 0
        self._rejections_this_task = 0
        self._retry_recall = False
        self._rechecked: set[tuple[int, int, int]] = set()
        self._extent_left: set[tuple[int, int]] = set()
        """Parts of the recalled place not yet ruled out."""
        self._query_seconds: list[float] = []
        self.kind_probabilities = np.zeros(len(KIND_PROMPT_NAMES))
        self._target_probabilities: list[float] = [0.0] * len(TARGET_KINDS)
        """The first :data:`TARGET_KINDS` entries of :attr:`kind_probabilities`, as Python floats."""
        """The labeller's probabilities of the last frame (:data:`KIND_PROMPT_NAMES` order)."""
        self.trail: np.ndarray | None = None
        """Cells the robot has stood on, in every task since the memory was last reset."""
        self.contradicted: np.ndarray | None = None
        """(K, n, n) bool, per target kind (:data:`TARGET_KINDS` order): cells where memory said the
        kind was and the robot's own close looks later said it is not (the place-level contradiction
        check of an updating policy, :meth:`memory_update_policy`); never set under ``keep_first``."""
        self._misses: dict[tuple[int, tuple[int, int]], tuple[int, set[tuple[int, int]]]] = {}
        """(kind index, cell) -> (step of the first close look that missed the kind there, the
        viewpoints of those looks), for cells where the map records the kind as recognised."""
        self._first_miss_step: int | None = None
        """Step of the first observation that contradicted the recalled place (None: none yet)."""
        self._sighting_records: dict[tuple[int, int, int], list[int]] = {}
        """Record ids of the long-term frames behind each pose of the last :meth:`sightings`."""
        self._pending: list[PlaceUpdate] = []
        """``consolidate``: contradicted places whose memory update waits for the end of the task."""
        self._pending_radius: list[int] = []
        self._carried_seen: np.ndarray | None = None
        self._looked_this_task = np.zeros((1, 1), dtype=bool)
        """Cells looked at for the mission's kind in this task (an updating policy's record, kept until
        the first contradiction): what the coverage reset leaves searched."""
        """What counted as searched for the mission's kind when the task began (carried from earlier
        tasks): unsearched again once a place memory sent the robot to is contradicted."""
        self._central_rays = np.linspace(-0.4, 0.4, 5)
        """Rays straight ahead (radians), along which the place-level check looks."""
        self.place_updates: list[PlaceUpdate] = []
        """This task's contradicted places of the mission's kind: where memory sent the robot and
        the target was not, when that was first observed and when memory was updated."""

    def set_context(self, run_id: str, task: str, episode: int) -> None:
        """Labels written with every frame (the runner calls this before each task)."""
        self.context = {"run_id": run_id, "task": task, "episode": episode}

    def reset(self, observation: Observation, spec: SensorSpec) -> None:
        super().reset(observation, spec)
        self._last_query_step = -(10**9)
        self.scan_turns = 0
        self.recalled = None
        self._recall_rays = np.linspace(-self.half_fov, self.half_fov, 9)
        self._distant_misses = 0
        self._rejections_this_task = 0
        self._retry_recall = False
        self._rechecked = set()
        self._extent_left = set()
        self._query_seconds = []
        self._misses = {}
        self._first_miss_step = None
        self._pending = []
        self._pending_radius = []
        self.place_updates = []
        self._central_rays = np.linspace(-0.6 * self.half_fov, 0.6 * self.half_fov, 5)
        assert self.grid is not None
        self._carried_seen = self.grid.seen.copy()
        self._looked_this_task = np.zeros_like(self.grid.seen)

    def reset_spatial_memory_if_cold(self) -> None:
        """Warm by default: the occupancy grid survives the task (``reset_memory`` clears it)."""
        assert self.grid is not None
        if self.trail is None or self.trail.shape != self.grid.free.shape:
            self.trail = np.zeros_like(self.grid.free)
        if self.contradicted is None or self.contradicted.shape[1:] != self.grid.free.shape:
            self.contradicted = np.zeros((len(TARGET_KINDS), *self.grid.free.shape), dtype=bool)
        if self._loaded_grid is not None:
            shape = self._loaded_grid["trail"].shape
            if shape != self.grid.free.shape:
                self._loaded_grid = None
                raise MemoryLoadError(
                    self._loaded_grid_from / GRID_FILE,
                    f"occupancy grid of shape {shape}, but this world's map is {self.grid.free.shape} (another world size)",
                )
            loaded = dict(self._loaded_grid)
            self._map_records_recognition = all(name in loaded for name in self._KIND_LAYERS)
            self.trail[:] = loaded.pop("trail")
            self.contradicted[:] = False
            for k, kind in enumerate(TARGET_KINDS):
                saved = loaded.pop(f"contradicted.{kind}", None)
                if saved is not None:
                    self.contradicted[k] = saved
            self.grid.reset()  # layers an older snapshot lacks start empty
            for name, array in loaded.items():
                layer, _, kind = name.partition(".")
                target = getattr(self.grid, layer)
                (target[TARGET_KINDS.index(kind)] if kind else target)[:] = array
            self._loaded_grid = None
        if not self.config.carry_map:
            self.grid.reset()
        self.grid.carry_to_next_mission(self.mission_kind if self.config.coverage_by_kind else None)

    _GRID_ARRAYS = ("free", "occupied", "evidence", "seen", "searched")
    _KIND_LAYERS = tuple(
        f"{layer}.{kind}" for layer in ("searched_by_kind", "recognised_by_kind") for kind in TARGET_KINDS
    )
    """The grid's per-kind layers, one array a kind (snapshots written before they were kept lack them:
    they load empty, so nothing counts as searched for a kind, nor as contradicted)."""
    _CONTRADICTED_LAYERS = tuple(f"contradicted.{kind}" for kind in TARGET_KINDS)
    """:attr:`contradicted`, one array a kind: saved only when a place was ever contradicted."""
    _loaded_grid: dict[str, np.ndarray] | None = None
    _loaded_grid_from: Path = Path()
    _map_records_recognition = True
    """False for a map loaded from a snapshot without the per-kind layers: it holds no record of
    where the recogniser found each kind, so ``recall_where_recognised`` has nothing to check against."""

    def _save_map(self, directory: Path, companion_digest: str | None, design: MemoryDesign | None = None) -> None:
        grid = None
        if self.grid is not None:
            assert self.trail is not None  # set with the grid, at the first task
            grid = {"trail": self.trail, **{name: getattr(self.grid, name) for name in self._GRID_ARRAYS}}
            for name in self._KIND_LAYERS:
                layer, _, kind = name.partition(".")
                grid[name] = getattr(self.grid, layer)[TARGET_KINDS.index(kind)]
            if self.contradicted is not None and self.contradicted.any():  # only an updating policy's
                for k, kind in enumerate(TARGET_KINDS):
                    grid[f"contradicted.{kind}"] = self.contradicted[k]
        rejected = RejectedPlaces(
            places={mission: sorted(cells) for mission, cells in self.rejected_places.items()},
            views={mission: sorted(poses) for mission, poses in self.discredited_views.items()},
        )
        save_map_snapshot(directory, grid, rejected, companion_digest, design)

    def _load_map(self, directory: Path, companion_digest: str | None) -> None:
        """Read the map snapshot (every check in :func:`embodmem.memory.snapshot.read_map_snapshot`);
        the grid's shape is checked against the world's at the next task."""
        dtypes = {
            "trail": np.dtype(bool),
            **{n: np.dtype(np.int16 if n == "evidence" else bool) for n in self._GRID_ARRAYS},
        }
        later = {name: np.dtype(bool) for name in self._KIND_LAYERS}
        try:  # a map that ever had a contradicted place holds those layers too
            grid, rejected = read_map_snapshot(
                directory,
                dtypes,
                companion_digest,
                {**later, **dict.fromkeys(self._CONTRADICTED_LAYERS, np.dtype(bool))},
            )
        except MemoryLoadError:
            grid, rejected = read_map_snapshot(directory, dtypes, companion_digest, later)
        self.rejected_places = {m: {(x, y) for x, y in cells} for m, cells in rejected.places.items()}
        self.discredited_views = {m: {(x, y, h) for x, y, h in poses} for m, poses in rejected.views.items()}
        self._loaded_grid = grid
        self._loaded_grid_from = directory

    def _forget_map(self) -> None:
        self._map_records_recognition = True
        self.rejected_places = {}
        self.discredited_views = {}
        self._loaded_grid = None
        if self.grid is not None:
            self.grid.reset()
        self.pose_correction[:] = 0.0
        if self.trail is not None:
            self.trail[:] = False
        if self.contradicted is not None:
            self.contradicted[:] = False

    # ---------------------------------------------------------------- perception + writing

    def update(self, observation: Observation) -> None:
        """The explorer's perception, then the target kinds this frame shows: every subclass writes
        them, and the map keeps where each kind was found (whatever the switches that read it say,
        so a saved map holds the record for any later config)."""
        super().update(observation)
        assert self.last_vector is not None and self.grid is not None and self.spec is not None
        self.kind_probabilities = self.labeller.probabilities_of(self.last_vector)
        self._target_probabilities = self.kind_probabilities.tolist()[: len(TARGET_KINDS)]
        # Most frames show no target kind: a Python max over the list says so without numpy's calls
        # (the threshold compared as numpy compares it); the mask is made only for a frame that does.
        threshold = self.config.recheck_probability
        if max(self._target_probabilities) >= _as_compared(self.kind_probabilities.dtype, threshold):
            recognised = self.kind_probabilities[: len(TARGET_KINDS)] >= threshold
            with self.timed("mapping"):
                reach = self.spec.view_range_m / self.spec.cell_size_m
                self.grid.mark_recognised(self.pose, self.view_rays, reach, recognised)
        else:
            recognised = _NONE_RECOGNISED
        if self.memory_update_policy() != "keep_first":
            with self.timed("memory_update"):
                self._check_remembered_places(recognised)
                if self._carried_seen is not None and self.mission_kind is not None:
                    reach = float(self.kind_ranges[TARGET_KINDS.index(self.mission_kind)])
                    rows, cols = self.grid.view_cells(self.pose, self.view_rays, reach)
                    self._looked_this_task[rows, cols] = True

    def memory_update_policy(self) -> str:
        """How memory updates when what it holds is contradicted (``MemoryConfig.update_policy``);
        ``keep_first`` (never) for a memory without one. Any other policy turns on the place-level
        contradiction check (:meth:`_check_remembered_places`)."""
        return "keep_first"

    def _check_remembered_places(self, recognised: np.ndarray) -> None:
        """The place-level contradiction check, from the robot's own map and frames: an occupied cell
        straight ahead, within the range at which a kind is reliably recognised, where the map
        records that kind as recognised, looked at from two viewpoints by frames that do not show
        the kind (``recognised``: the labeller's P below ``recheck_probability``), is a place where
        the kind is no longer (:meth:`_contradict`). A frame that shows the kind again while
        looking at a contradicted cell clears it (the object may be back)."""
        assert self.grid is not None and self.contradicted is not None
        x, y, _ = self.pose
        reach = float(min(self.config.confirm_range_cells, self.clear_sight))
        for cell in self.grid.first_hits(self.pose, self._central_rays, reach):
            cx, cy = cell
            distance = float(np.hypot(cx - x, cy - y))
            if distance < 1.5:  # next to it the camera sees a part, not the object
                continue
            for k in np.flatnonzero(self.grid.recognised_by_kind[:, cy, cx]).tolist():
                if distance > self.kind_ranges[k]:
                    continue
                if recognised[k]:
                    self.contradicted[k, cy, cx] = False
                    self._misses.pop((k, cell), None)
                elif not self.contradicted[k, cy, cx]:
                    first, viewpoints = self._misses.setdefault((k, cell), (self.steps, set()))
                    viewpoints.add((x, y))
                    if len(viewpoints) >= 2:
                        self._contradict(PlaceUpdate(TARGET_KINDS[k], cell, first), radius=0)

    # ---------------------------------------------------------------- decisions

    def decide(self, observation: Observation) -> int:
        if self.recalled is not None and self.candidate is None and self._extent_left:
            self.candidate = self.recalled.cell  # one part ruled out: judge the next nearest part
        if self.recalled is not None and self.candidate == self.recalled.cell:
            if self.last_probability >= self.config.detect_probability:
                # The target is in view: what the robot sees beats what it remembers, unless what it
                # sees is farther (another instance, glimpsed while turning to face the recalled one).
                seen = self.guess_target_cell(observation)
                if seen is not None and self._cells_away(seen) < self._cells_away(self.candidate):
                    self.candidate = seen
                self.recalled = None
            elif self._recalled_place_in_plain_view():
                self._distant_misses += 1
                if self._first_miss_step is None:
                    self._first_miss_step = self.steps
                if self._distant_misses >= 2:  # it should be visible from here, and is not
                    self._reject_recalled()
            else:
                self._distant_misses = 0
        elif self.recalled is not None and self.candidate is None:
            self._reject_recalled()  # the approach confirmed nothing there
        if self.candidate is None and self.scan_turns > 0 and self.last_probability < self.config.detect_probability:
            self.scan_turns -= 1  # a recalled place disappointed: turn on the spot before exploring
            return int(Action.TURN_LEFT)
        if self.config.recall and self.candidate is None and self.last_probability < self.config.detect_probability:
            due = self.steps - self._last_query_step >= self.config.requery_every
            if (due or self._retry_recall) and self._rejections_this_task < self.config.max_recall_rejections:
                self.recalled = self.recall_target_place()
                self._first_miss_step = None
                self.candidate = None if self.recalled is None else self.recalled.cell
                self._extent_left = set() if self.recalled is None else set(self.recalled.extent)
                self._last_query_step = self.steps
                self._retry_recall = False
                self._distant_misses = 0
        return super().decide(observation)

    def approach_goals(self) -> np.ndarray:
        """Heading for a recalled place: any cell from which one of its parts can be judged."""
        if self.recalled is None or self.candidate != self.recalled.cell or not self._extent_left:
            return super().approach_goals()
        goals = self.viewing_cells(self.recalled.cell)
        for cell in self._extent_left:
            goals |= self.viewing_cells(cell)
        return goals

    def cell_to_judge(self) -> tuple[int, int] | None:
        """At a viewing cell of a recalled place's part: that part (the nearest, if several)."""
        if self.recalled is None or self.candidate != self.recalled.cell or not self._extent_left:
            return super().cell_to_judge()
        x, y, _ = self.pose
        here = [c for c in self._extent_left | {self.recalled.cell} if self.viewing_cells(c)[y, x]]
        return min(here, key=self._cells_away) if here else None

    def rule_out(self, cell: tuple[int, int]) -> None:
        """A part of the recalled place ruled out: the best-voted cell is judged next, then the place
        is given up (one extra look at most, so a false place costs little more than one trip)."""
        super().rule_out(cell)
        if self.recalled is not None and self._first_miss_step is None:
            self._first_miss_step = self.steps  # judged from next to it: not there
        if self.recalled is not None and cell != self.recalled.cell and cell in self._extent_left:
            self._extent_left = {self.recalled.cell}
        else:
            self._extent_left.clear()

    def _cells_away(self, cell: tuple[int, int]) -> int:
        return abs(cell[0] - self.pose[0]) + abs(cell[1] - self.pose[1])

    def _recalled_place_in_plain_view(self) -> bool:
        """Is the recalled cell close, inside the camera's view, and not hidden behind anything known?"""
        assert self.recalled is not None and self.grid is not None
        cx, cy = self.recalled.cell
        x, y, h = self.pose
        dist = float(np.hypot(cx - x, cy - y))
        # Only as close as memory recognised it from: a low pipeline seen side-on from two cells
        # does not show end-on from four.
        recognised_from = min((float(np.hypot(cx - vx, cy - vy)) for vx, vy, _ in self.recalled.views), default=0.0)
        if dist > min(self.config.confirm_range_cells, self.clear_sight, max(recognised_from, 2.0)) or dist < 1.5:
            return False
        dx, dy = DIR_TO_VEC[h]
        angle = float(np.arctan2(dx * (cy - y) - dy * (cx - x), dx * (cx - x) + dy * (cy - y)))
        if abs(angle) > 0.6 * self.half_fov:
            return False
        hits = self.grid.first_hits(self.pose, np.array([angle]), dist + 1.0)
        return any(abs(hx - cx) + abs(hy - cy) <= 1 for hx, hy in hits)

    def _reject_recalled(self) -> None:
        """Remember that the target is not at the recalled place (for this task and later ones)."""
        assert self.recalled is not None and self.grid is not None
        mission = self.recognizer.mission or ""
        self.rejected_places.setdefault(mission, set()).add(self.recalled.cell)
        self.discredited_views.setdefault(mission, set()).update(self.recalled.views)
        first = self.steps if self._first_miss_step is None else self._first_miss_step
        found = PlaceUpdate(self.mission_kind or "", self.recalled.cell, first, views=self.recalled.views)
        self.place_updates.append(found)
        if self.mission_kind is None or self.memory_update_policy() == "keep_first":
            found.updated_step = self.steps  # keep-first's only update: the place joins the rejected
        else:
            self._contradict(found, radius=1)
        # Those frames did show the target somewhere in their view (or were false): their whole view
        # cone, also behind what hid it, and the place's surroundings count as unsearched again, so
        # exploration checks them before going far.
        self._unsearch(self.recalled.views, through=True)
        self._unsearch_near(self.recalled.cell, self.config.place_radius + 2)
        self.rejected.add(self.recalled.cell)
        if self.candidate == self.recalled.cell:
            self.candidate = None
        self.recalled = None
        self._rejections_this_task += 1
        if self._rejections_this_task >= self.config.max_recall_rejections:
            # No more trips on memory's word, but what the remaining sightings looked at has not
            # been searched for this mission: a real sighting ranked below false ones must not
            # leave its place marked as searched, where exploration would never go.
            with self.timed("memory_query"):
                remaining = {pose for pose, p in self.sightings() if p >= self.config.memory_probability}
            self._unsearch(remaining)
        self._retry_recall = True  # after looking around here, the next-best place, if any
        self.scan_turns = 3  # memory is seldom exact to the cell: the target may be right beside

    def recall_target_place(self) -> RecalledPlace | None:
        """Ask memory where the mission's target was seen; the best-supported place worth the trip."""
        with self.timed("memory_query"):
            started = time.perf_counter()
            remembered = self.sightings()
            self._query_seconds.append(time.perf_counter() - started)
            self._unsearch({pose for pose, p in remembered if p < self.config.memory_probability} - self._rechecked)
            place = self.rank_places([(pose, p) for pose, p in remembered if p >= self.config.memory_probability])
            if place is None and self.config.visit_weak_sightings:
                place = self.rank_places([(pose, p) for pose, p in remembered if p < self.config.memory_probability])
            return place

    def _unsearch(
        self, views: set[tuple[int, int, int]] | frozenset[tuple[int, int, int]], through: bool = False
    ) -> None:
        """Mark what remembered frames at ``views`` looked at as not yet searched for this mission
        (``through``: the whole view cone up to the visibility, behind occupied cells too)."""
        assert self.grid is not None and self.spec is not None
        if not views:  # most recalls: nothing to unsearch, and the map's verdicts cost a pass over it
            return
        reach = self.spec.view_range_m / self.spec.cell_size_m if through else self.config.look_range_cells * 2
        ruled_out = self._ruled_out_by_map()
        for view in views:
            rows, cols = self.grid.view_cells(view, self.view_rays, reach, occlusion=not through)
            keep = ~ruled_out[rows, cols]
            self.grid.seen[rows[keep], cols[keep]] = False
        self._rechecked |= set(views)

    def _unsearch_near(self, cell: tuple[int, int], radius: float) -> None:
        """Cells within ``radius`` of ``cell`` count as not yet searched for this mission."""
        assert self.grid is not None
        yy, xx = np.ogrid[: self.grid.size, : self.grid.size]
        self.grid.seen[((xx - cell[0]) ** 2 + (yy - cell[1]) ** 2 <= radius**2) & ~self._ruled_out_by_map()] = False

    def _ruled_out_by_map(self, votes: bool = False) -> np.ndarray:
        """Cells the map's record of where the recogniser found the mission's kind speaks against:
        looked at closely for it without recognising it (``contradict_by_map``): no remembered frame
        puts the target there, and no rejected one makes them unsearched again. With ``votes``, where
        ``recall_where_recognised`` is in force (exact odometry, a carried map that keeps the record),
        every cell more than a cell from a view in which the kind was found: a sighting votes only
        where the robot's own recogniser backed it. None otherwise."""
        assert self.grid is not None and self.spec is not None
        kind = self.mission_kind
        backed_only = votes and (
            self.config.recall_where_recognised
            and self.config.carry_map
            and self._map_records_recognition
            and self.spec.exact_pose
        )
        if kind is None or not (self.config.contradict_by_map or backed_only):
            return np.zeros_like(self.grid.free)
        if backed_only:  # contains the cells looked at closely without recognising the kind
            ruled_out = ~self.grid.recognised_near(kind)
        else:
            ruled_out = self.grid.looked_at_without_recognising(kind)
        if self.contradicted is not None:  # all False under keep_first
            ruled_out |= self.contradicted[TARGET_KINDS.index(kind)]
        return ruled_out

    def _contradict(self, update: PlaceUpdate, radius: int) -> None:
        """Memory said ``update.kind`` was at ``update.cell`` and the robot's own looks say it is
        not: update now, or, under ``consolidate``, in the pass at the task's end."""
        if self.memory_update_policy() == "consolidate":
            self._pending.append(update)
            self._pending_radius.append(radius)
        else:
            self._apply_update(update, radius)

    def _apply_update(self, update: PlaceUpdate, radius: int) -> None:
        """The cells within ``radius`` of the place stop counting as where the kind was (recall's
        votes and exploration's rechecks leave them out), and the remembered frames that sent the
        robot there are updated as the memory's policy says (:meth:`_update_records`)."""
        assert self.contradicted is not None
        k = TARGET_KINDS.index(update.kind)
        n = self.contradicted.shape[1]
        x, y = update.cell
        self.contradicted[
            k, max(0, y - radius) : min(n, y + radius + 1), max(0, x - radius) : min(n, x + radius + 1)
        ] = True
        for cell in [
            c for c in self._misses if c[0] == k and abs(c[1][0] - x) <= radius and abs(c[1][1] - y) <= radius
        ]:
            del self._misses[cell]
        if update.views and self.grid is not None and self._carried_seen is not None:
            # The kind has moved (or gone): "looked there before, it was not there" is as old as
            # the sighting, so what earlier tasks searched for it counts as unsearched again.
            stale = self._carried_seen & ~self._looked_this_task  # looked at again since: still good
            self.grid.searched_by_kind[k] &= ~stale
            if update.kind == self.mission_kind:
                self.grid.seen &= ~stale
            self._carried_seen = None
        self._update_records(update)
        update.updated_step = self.steps

    def _update_records(self, update: PlaceUpdate) -> None:
        """Update the remembered frames behind a contradicted place (none by default)."""

    def _apply_pending(self) -> None:
        """``consolidate``: the updates of the task's contradicted places, at its end."""
        for update, radius in zip(self._pending, self._pending_radius):
            self._apply_update(update, radius)
        self._pending = []
        self._pending_radius = []

    def steps_to_correct(self) -> int | None:
        """Steps from the first observation that contradicted a place memory sent the robot to for
        this task's goal, to the update of its memory (keep-first: the place joining the rejected
        ones, its only update); None when memory sent it nowhere wrong or was not updated."""
        if not self.place_updates or self.place_updates[0].updated_step is None:
            return None
        first = self.place_updates[0]
        assert first.updated_step is not None
        return first.updated_step - first.first_step + 1

    def _on_trail(self, pose: tuple[int, int, int]) -> bool:
        assert self.trail is not None
        x, y, _ = pose
        return 0 <= y < self.trail.shape[0] and 0 <= x < self.trail.shape[1] and bool(self.trail[y, x])

    def rank_places(self, sightings: list[tuple[tuple[int, int, int], float]]) -> RecalledPlace | None:
        """Weigh the evidence: which cells the confident frames were looking at, how many frames from
        how many viewpoints agree on one place, and how far it is; places rejected before are out.

        Every sighting votes for the cells the map says it could see (first occupied cell along each
        ray). Votes are grouped into places (cells within ``place_radius`` of the best cell); a place
        needs ``min_viewpoints`` distinct viewpoints, so one stray frame (or a false memory) never
        sends the robot across the map. Among those, the place with the best support per step of
        travel wins.
        """
        assert self.spec is not None and self.grid is not None
        if not sightings:
            return None
        rejected = self.rejected_places.get(self.recognizer.mission or "", set()) | self.rejected
        reach = self.spec.view_range_m / self.spec.cell_size_m
        if self.config.recall_within_found_range and self.mission_kind is not None:
            farthest = found_up_to(self.mission_kind, self.spec.view_range_m)
            reach = reach if farthest is None else min(reach, farthest + 1.0)
        ruled_out = self._ruled_out_by_map(votes=True)
        votes: dict[tuple[int, int], float] = {}
        voters: dict[tuple[int, int], set[tuple[int, int, int]]] = {}
        for pose, p in sightings:
            # One vote per ray, the nearer hits weighing more (a target close by fills more of the
            # frame that recognised it); each frame's votes sum to its confidence.
            hits = [
                c
                for c in self.grid.ray_hits(pose, self._recall_rays, reach)
                if not _near(c, rejected, 1) and not ruled_out[c[1], c[0]]
            ]
            weights = [1.0 / (1.0 + float(np.hypot(c[0] - pose[0], c[1] - pose[1]))) for c in hits]
            for c, w in zip(hits, weights):
                votes[c] = votes.get(c, 0.0) + p * w / sum(weights)
                voters.setdefault(c, set()).add(pose)
        places: list[RecalledPlace] = []
        r = self.config.place_radius
        while votes:
            best = max(votes, key=votes.__getitem__)
            members = [c for c in votes if abs(c[0] - best[0]) <= r and abs(c[1] - best[1]) <= r]
            views = frozenset().union(*(voters[c] for c in members))
            viewpoints = {pose[:2] for pose in views}
            around = self.grid.occupied_around(best, self.config.extent_radius)
            extent = frozenset(c for c in around if not _near(c, rejected, 0))
            places.append(RecalledPlace(best, sum(votes[c] for c in members), len(viewpoints), views, extent))
            for c in members:
                del votes[c]
        if not places:
            return None
        distance = self.grid_distance([pl.cell for pl in places])
        self.trace.mode = "recall"
        self.scan_turns = 3  # if the guess is wrong, look around there before exploring again

        def worth(pl: RecalledPlace) -> float:
            # Probability the target is there per step of travel (visit in that order, as in optimal
            # search). Agreement from several viewpoints separates a real sighting from a stray
            # frame; more votes than that add little, so a near confirmed place beats a far one.
            agreement = min(pl.viewpoints, self.config.min_viewpoints) / self.config.min_viewpoints
            confidence = agreement * (1.0 - np.exp(-pl.support / self.config.support_scale))
            return float(confidence) / (1.0 + float(distance[pl.cell[1], pl.cell[0]]))

        return max(places, key=worth)

    def grid_distance(self, cells: list[tuple[int, int]] | None = None) -> np.ndarray:
        """Cells of travel from the robot to next to every cell, over the known map (unknown is
        passable); with ``cells`` (x, y), exact only there (the wavefront stops once they are settled)."""
        assert self.grid is not None
        source = np.zeros_like(self.grid.free)
        source[self.pose[1], self.pose[0]] = True
        if cells is None:
            dist = bfs_distance(self.grid.passable(), source)
        else:
            wanted = np.zeros_like(self.grid.free)
            for x, y in cells:
                wanted[y, x] = True
            dist = bfs_distance(self.grid.passable(), source, wanted, beside=True)
        padded = np.pad(dist, 1, constant_values=np.inf)
        n = self.grid.size
        beside = np.min([padded[1 + dy : 1 + dy + n, 1 + dx : 1 + dx + n] for dx, dy in DIR_TO_VEC], axis=0) + 1
        dist = np.minimum(dist, beside)
        dist[~np.isfinite(dist)] = 4 * n
        return dist

    @abstractmethod
    def sightings(self) -> list[tuple[tuple[int, int, int], float]]:
        """(pose, confidence) of remembered views that may show the mission's target: what
        :meth:`rank_places` turns into a place to go."""


class MemoryAgent(RecallAgent):
    """Frontier explorer whose memory (frames, map, occupancy) carries over between tasks."""

    name = "memory"

    def __init__(
        self, embedder: RecognitionEmbedder, memory: Memory | None = None, config: MemoryAgentConfig | None = None
    ):
        super().__init__(embedder, config)
        self.memory = memory if memory is not None else AgentMemory(MemoryConfig(dim=embedder.dim))
        self.contradicted_records: dict[int, float] = {}
        """Record id -> the weight left to a remembered frame behind a contradicted place, under a
        policy that keeps it (``decay``: 0, forgotten; ``recency``: one half-life older)."""

    @property
    def frame_memory(self) -> Memory:
        """The frame memory (``memory``, typed as set): the stock one or a plug-in
        (:class:`embodmem.api.Memory`; only that protocol's calls are made on it)."""
        assert self.memory is not None, f"{type(self).__name__} keeps no frame memory"
        return self.memory

    def save_state(self, directory: Path) -> None:
        """Memory (through its own class's save), then the occupancy grid and the rejected places as
        a map snapshot pinned to it, recording the memory's class and version; one writer at a time
        (a second process is refused)."""
        directory = Path(directory)
        with writer_lock(directory):
            self.frame_memory.save(directory / "memory")
            digest = companion_digest_of_memory(directory / "memory")
            self._save_map(directory, digest, MemoryDesign.of(self.frame_memory))

    def load_state(self, directory: Path) -> None:
        """The state :meth:`save_state` wrote, through this memory's own class's ``load``; a snapshot
        of another memory class (or version) is refused in one line naming both."""
        directory = Path(directory)
        saved = read_memory_design(directory)
        mine = MemoryDesign.of(self.frame_memory)
        problem = "a text log, not a memory" if saved is None else saved.refusal(mine)
        if problem is not None:
            raise MemoryLoadError(directory / "manifest.json", problem)
        self.memory = type(self.frame_memory).load(directory / "memory", expect_dim=self.frame_memory.config.dim)
        self._load_map(directory, companion_digest_of_memory(directory / "memory"))

    def reset_memory(self) -> None:
        """Forget everything: frames, map, occupancy and rejected places (the cold condition)."""
        self.frame_memory.reset()
        self.contradicted_records = {}
        self._forget_map()

    def end_task(self, success: bool) -> None:
        self._apply_pending()
        self.frame_memory.flush()

    def memory_update_policy(self) -> str:
        return str(getattr(self.frame_memory.config, "update_policy", "keep_first"))

    def _update_records(self, update: PlaceUpdate) -> None:
        """The long-term frames that sent the robot to the contradicted place: removed (``overwrite``,
        ``consolidate``: the memory's own records go, their compute counted in its
        :class:`~embodmem.memory.updates.UpdateStats`) or down-weighted as sightings (``decay``,
        ``recency``)."""
        ids = [i for view in update.views for i in self._sighting_records.get(view, [])]
        if not ids:
            return
        policy = self.memory_update_policy()
        memory = self.frame_memory
        if policy in ("overwrite", "consolidate") and isinstance(memory, AgentMemory):
            forget_records(memory.store, memory.updates, ids)
        else:
            weight = CONTRADICTED_WEIGHT.get(policy, 1.0)
            for i in ids:
                self.contradicted_records[i] = min(weight, self.contradicted_records.get(i, 1.0))

    def update(self, observation: Observation) -> None:
        super().update(observation)
        assert self.last_vector is not None and self.trail is not None
        self.trail[self.pose[1], self.pose[0]] = True
        with self.timed("memory_write"):
            meta = self._frame_meta(self.pose, self.steps, observation["image"], self._target_probabilities)
            self.current_node = self.frame_memory.observe(self.last_vector, meta)
        self.trace.kinds_reported = frozenset({meta.label}) if meta.label else frozenset()

    def _frame_meta(
        self, pose: tuple[int, int, int], step: int, image: np.ndarray, target_probabilities: list[float]
    ) -> FrameMeta:
        """What is written with a frame: context, pose, and the target kind the frame's own vector
        shows (``target_probabilities``: its labeller probabilities of the :data:`TARGET_KINDS`; none
        below ``detect_probability``), with its probability as the salience."""
        x, y, h = pose
        # KindLabeller.best for one frame, on a Python list: numpy's per-call cost is most of it here
        prob = max(target_probabilities)
        best = target_probabilities.index(prob)  # the first on ties, as argmax
        seen = prob >= self.config.detect_probability
        return FrameMeta(
            run_id=self.context["run_id"],
            task=self.context["task"],
            episode=int(self.context["episode"]),
            step=step,
            x=float(x),
            y=float(y),
            heading=int(h),
            label=TARGET_KINDS[best] if seen else "",
            salience=prob if seen else 0.0,
            thumbnail=image if self.frame_memory.config.keep_thumbnails else None,
        )

    def implant(self, images: np.ndarray, poses: list[tuple[int, int, int]]) -> None:
        vectors = self.embedder.embed_images(images)
        probabilities = self.labeller.probabilities(vectors)
        for vector, image, pose, kind_probabilities in zip(vectors, images, poses, probabilities):
            target_probabilities = kind_probabilities[: len(TARGET_KINDS)].tolist()
            self.frame_memory.observe(vector, self._frame_meta(pose, 0, image, target_probabilities))
        self.frame_memory.flush()

    def sightings(self) -> list[tuple[tuple[int, int, int], float]]:
        """(pose, confidence) of remembered frames that may show the mission's target (at least
        ``recheck_probability``; own frames only, none discredited)."""
        hits = cast(list[Hit], self.frame_memory.query(self.recognizer.query, self.config.memory_k))
        self.queries += 1
        if not hits:
            return []
        probs = self.recognizer.probability(self.frame_memory.hit_vectors(hits))
        if self.contradicted_records:  # an updating policy's down-weighted frames
            probs = probs * np.array([self.contradicted_records.get(h.id, 1.0) for h in hits])
        self.trace.query = self.recognizer.mission
        self.trace.retrievals = [Retrieval.from_hit(h, float(p)) for h, p in zip(hits, probs)]
        poses = [(int(round(h.meta.x)), int(round(h.meta.y)), int(h.meta.heading)) for h in hits]
        self._sighting_records = {}
        for pose, hit in zip(poses, hits):
            if hit.source == "long_term":
                self._sighting_records.setdefault(pose, []).append(hit.id)
        discredited = self.discredited_views.get(self.recognizer.mission or "", set())
        weakest = min(self.config.recheck_probability, self.config.memory_probability)
        found = [
            (pose, float(p))
            for pose, p in zip(poses, probs)
            if p >= weakest and pose not in discredited and (not self.config.own_trail_only or self._on_trail(pose))
        ]
        if self.config.check_same_view:
            found = [(pose, p) for pose, p in found if not self._view_contradicted(pose)]
        return found

    def _view_contradicted(self, pose: tuple[int, int, int]) -> bool:
        """Does another remembered frame from exactly this pose and heading not show the target? The
        same view cannot both show it and not: such a memory is not trusted (on dev worlds no real
        sighting was ever contradicted so; a false one often is)."""
        x, y, heading = pose
        same_view = QueryFilter(near=(x, y, 0.0), heading=heading)
        twins = self.frame_memory.query(self.recognizer.query, self.config.memory_k, same_view, count_hits=False)
        if len(twins) < 2:
            return False
        probs = self.recognizer.probability(self.frame_memory.hit_vectors(cast(list[Hit], twins)))
        return bool((probs < self.config.recheck_probability).any())

    def goto_node_action(self, node: int) -> int | None:
        """Navigator skill: next action toward the place of topological-map node ``node``."""
        positions = self.frame_memory.map.positions
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
        stats = self.frame_memory.stats()
        query_ms = 1000 * float(np.median(self._query_seconds)) if self._query_seconds else 0.0
        return {
            "memory_queries": self.queries,
            "memory_nodes": stats.get("nodes", 0),
            "memory_query_ms": round(query_ms, 4),
            "relocalisations": self.relocalisations,
        }
