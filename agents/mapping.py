"""An occupancy grid built from sonar and pose, and shortest paths over it.

This is all an agent knows of the world's layout: cells its sonar has swept are free, cells its
sonar echoed from (or that it bumped into) are occupied, everything else is unknown. Paths are
planned optimistically (unknown cells may be crossed) and re-planned when the sonar says otherwise.
"""

from __future__ import annotations

import functools
import math

import cv2
import numpy as np

from embodmem.agents.map_kernels import (
    fit_scan,
    fold_scan,
    joined_cells,
    look_view,
    look_view_by_kind,
    mark_in_view,
    nearest_goal_path,
)
from embodmem.envs.objects import TARGET_KINDS
from embodmem.envs.spec import DIR_TO_VEC, Action, SensorSpec

ESTABLISHED = 4
"""Evidence at which an obstacle cell is trusted for scan matching (two echoes net of passes)."""

SAMPLE_STEP = 0.25
"""Spacing of the sample points along a sonar beam, in cells."""


class OccupancyGrid:
    """Free / occupied / unknown cells of a square survey area, from sonar scans.

    Example:
        >>> from embodmem.envs.spec import SensorSpec
        >>> spec = SensorSpec(5.0, 64, 75.0, 40.0, 3, 60.0, 40.0, 16)
        >>> grid = OccupancyGrid(spec)
        >>> grid.update((4, 4, 0), np.array([12.5, 12.5, 12.5], np.float32))  # echoes 2.5 cells east
        >>> bool(grid.free[4, 5]), bool(grid.free[4, 6]), bool(grid.occupied[4, 7])
        (True, True, True)
    """

    def __init__(self, spec: SensorSpec):
        self.spec = spec
        n = spec.grid_size
        self.free = np.zeros((n, n), dtype=bool)
        self.occupied = np.zeros((n, n), dtype=bool)
        self.evidence = np.zeros((n, n), dtype=np.int16)
        self.seen = np.zeros((n, n), dtype=bool)
        """Cells the camera has looked at from close enough to recognise a target there."""
        self.searched = np.zeros((n, n), dtype=bool)
        """Cells looked at from close enough to be sure for any later mission (fog permitting)."""
        self.close = np.zeros((n, n), dtype=bool)
        """Cells looked at, this mission, from within the range at which its target is recognised
        (``seen_within_detection_range``): the rest of ``seen`` is looked at again before giving up."""
        self.faced_closely = np.zeros((n, n), dtype=bool)
        """Occupied cells the camera has faced, this mission, from within the range at which the
        mission's kind is recognised (``face_objects_in_fog``)."""
        self.searched_by_kind = np.zeros((len(TARGET_KINDS), n, n), dtype=bool)
        """Per target kind (:data:`TARGET_KINDS` order): cells looked at from within the range at
        which that kind is recognised, in the light of the time (``coverage_by_kind``)."""
        self.recognised_by_kind = np.zeros((len(TARGET_KINDS), n, n), dtype=bool)
        """Per target kind: cells inside the whole view cone, up to the visibility, of a frame in
        which the recogniser found that kind (``contradict_by_map``): only there may memory say the
        kind was seen."""
        self.max_range = spec.sonar_max_range_m / spec.cell_size_m
        self._t = np.arange(SAMPLE_STEP, self.max_range + SAMPLE_STEP, SAMPLE_STEP)
        offsets = np.array(spec.sonar_angles())
        # Per heading: sample points along every beam, relative to the cell centre.
        self._dx = []
        self._dy = []
        for h in range(4):
            ang = h * math.pi / 2 + offsets
            self._dx.append(0.5 + np.cos(ang)[:, None] * self._t[None, :])
            self._dy.append(0.5 + np.sin(ang)[:, None] * self._t[None, :])
        self._no_occlusion = np.zeros((n, n), dtype=bool)
        """A map with nothing on it, for marching whole view cones."""
        self._ray_cache: dict[tuple[int, np.dtype, bytes, float], tuple[np.ndarray, np.ndarray]] = {}

    def fits(self, spec: SensorSpec) -> bool:
        """Whether this grid keeps mapping under ``spec``: the same area, cells and sonar (the light,
        and so the visibility, may differ between tasks)."""
        fields = ("grid_size", "cell_size_m", "sonar_beams", "sonar_fov_deg", "sonar_max_range_m")
        return all(getattr(self.spec, f) == getattr(spec, f) for f in fields)

    def reset(self) -> None:
        self.free[:] = False
        self.occupied[:] = False
        self.evidence[:] = 0
        self.seen[:] = False
        self.searched[:] = False
        self.searched_by_kind[:] = False
        self.recognised_by_kind[:] = False
        self.close[:] = False
        self.faced_closely[:] = False

    def _march(
        self, pose: tuple[int, int, int], angles: np.ndarray, max_range: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Sample cells every quarter cell along rays (radians from the heading) from the cell
        centre; returns their x, y, whether inside the map, and whether known occupied."""
        x, y, h = pose
        along_x, along_y = self.rays(h, np.asarray(angles), float(max_range))
        px = np.floor(x + 0.5 + along_x).astype(np.int64)
        py = np.floor(y + 0.5 + along_y).astype(np.int64)
        n = self.size
        inside = (px >= 0) & (px < n) & (py >= 0) & (py < n)
        occ = np.zeros_like(inside)
        occ[inside] = self.occupied[py[inside], px[inside]]
        return px, py, inside, occ

    def rays(self, heading: int, angles: np.ndarray, max_range: float) -> tuple[np.ndarray, np.ndarray]:
        """x and y offsets of the quarter-cell samples along rays (radians from ``heading``), kept
        for the few ray fans an agent uses every step (the camera's view, recall's rays). The key
        holds the dtype itself: it hashes without making a string, and tells byte orders apart."""
        key = (heading, angles.dtype, angles.tobytes(), max_range)
        rays = self._ray_cache.get(key)
        if rays is None:
            t = np.arange(0.25, max_range, 0.25)
            a = heading * math.pi / 2 + angles
            rays = (np.cos(a)[:, None] * t[None, :], np.sin(a)[:, None] * t[None, :])
            if len(self._ray_cache) > 256:
                self._ray_cache.clear()
            self._ray_cache[key] = rays
        return rays

    def look(
        self,
        pose: tuple[int, int, int],
        angles: np.ndarray,
        look_range: float,
        searched_range: float | None = None,
        close_range: float | None = None,
        objects_within: float | None = None,
        withhold_across_view: bool = False,
        withhold_beside_objects: bool = False,
        kind_ranges: np.ndarray | None = None,
    ) -> None:
        """Mark the cells inside the camera's view up to ``look_range`` cells as seen, and up to
        ``searched_range`` (default: the same) as searched for later missions; with ``close_range``
        (at most ``look_range``), the cells up to it as looked at closely. What was only swept by
        sonar is not "seen": a small target there may have gone unnoticed. With ``objects_within``
        (``face_objects_in_fog``), a ray that ends at an object not yet faced from within that many
        cells does not mark the cells within that many cells in front of it as seen; with
        ``withhold_across_view`` as well, no other ray of the view marks those cells. With
        ``kind_ranges``, also :meth:`look_by_kind` in the same compiled call (one a step, not two)."""
        x, y, h = pose
        angles = np.asarray(angles)
        along_x, along_y = self.rays(h, angles, float(look_range))
        samples = along_x.shape[1]
        close_prefix = -1 if close_range is None else _prefix(close_range)
        searched_prefix = samples if searched_range is None else _prefix(searched_range)
        within = -1.0 if objects_within is None else float(objects_within)
        marks = (self.seen, self.close, self.searched, self.faced_closely, self.occupied, float(x), float(y))
        view = (along_x, along_y, close_prefix, searched_prefix, within, withhold_across_view, withhold_beside_objects)
        if kind_ranges is None:
            look_view(*marks, *view)
            return
        reach, prefix = _prefixes(np.asarray(kind_ranges, dtype=np.float64).tobytes())
        kind_x, kind_y = self.rays(h, angles, reach)
        look_view_by_kind(*marks, *view, self.searched_by_kind, kind_x, kind_y, prefix)

    def look_by_kind(self, pose: tuple[int, int, int], angles: np.ndarray, ranges: np.ndarray) -> None:
        """Mark the cells in view as searched for each target kind up to that kind's range (cells,
        :data:`TARGET_KINDS` order): one march, each kind a prefix of it (compiled:
        :func:`~embodmem.agents.map_kernels.mark_in_view`)."""
        x, y, h = pose
        reach, prefix = _prefixes(np.asarray(ranges, dtype=np.float64).tobytes())
        along_x, along_y = self.rays(h, np.asarray(angles), reach)
        mark_in_view(self.searched_by_kind, self.occupied, float(x), float(y), along_x, along_y, prefix)

    def mark_recognised(
        self, pose: tuple[int, int, int], angles: np.ndarray, reach: float, recognised: np.ndarray
    ) -> None:
        """Mark the whole view cone up to ``reach`` cells, behind what the map knows too, as where
        each ``recognised`` kind ((K,) bool, :data:`TARGET_KINDS` order) was found."""
        x, y, h = pose
        along_x, along_y = self.rays(h, np.asarray(angles), float(reach))
        prefix = np.where(recognised, along_x.shape[1], 0).astype(np.int64)
        mark_in_view(self.recognised_by_kind, self._no_occlusion, float(x), float(y), along_x, along_y, prefix)

    def recognised_near(self, kind: str) -> np.ndarray:
        """Cells within a cell of anything in view when the recogniser found ``kind``."""
        k = TARGET_KINDS.index(kind)
        return cv2.dilate(self.recognised_by_kind[k].view(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)

    def looked_at_without_recognising(self, kind: str) -> np.ndarray:
        """Cells looked at from within ``kind``'s detection range and more than one cell from
        anything in view when the recogniser found ``kind``: the map's word that it is not there."""
        return self.searched_by_kind[TARGET_KINDS.index(kind)] & ~self.recognised_near(kind)

    def carry_to_next_mission(self, kind: str | None = None) -> None:
        """Start a new mission on this map: only what was searched closely enough counts as seen
        (with ``kind``: closely enough to recognise that kind, ``coverage_by_kind``)."""
        self.seen[:] = self.searched if kind is None else self.searched_by_kind[TARGET_KINDS.index(kind)]
        self.close[:] = self.seen
        self.faced_closely[:] = False

    def view_cells(
        self, pose: tuple[int, int, int], angles: np.ndarray, look_range: float, occlusion: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """(rows, columns) of the cells a camera at ``pose`` sees up to ``look_range`` cells, by the map
        (``occlusion=False``: the whole view cone, also behind what the map knows to be occupied;
        a tall target can show over a low rock)."""
        if occlusion:
            px, py, ok = self._in_view(pose, angles, look_range)
        else:
            px, py, ok, _ = self._march(pose, angles, look_range)
        return py[ok], px[ok]

    def _in_view(
        self, pose: tuple[int, int, int], angles: np.ndarray, look_range: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The march's samples and which of them the camera sees: inside the map and not beyond the
        first occupied cell of their ray."""
        px, py, inside, occ = self._march(pose, angles, look_range)
        return px, py, inside & ~(np.cumsum(occ, axis=1) - occ > 0)

    @property
    def size(self) -> int:
        return self.free.shape[0]

    def update(self, pose: tuple[int, int, int], sonar_m: np.ndarray) -> None:
        """Fold one sonar scan taken at ``pose`` (cell x, cell y, heading) into the grid.

        Each cell keeps an evidence count: +2 per echo from it, -1 per beam that passed through it.
        An echo near a cell corner can land in the neighbouring cell; later beams through that
        cell outvote it, so one unlucky echo does not wall the robot in. Only the window the beams
        cover changes (compiled: :func:`~embodmem.agents.map_kernels.fold_scan`).
        """
        x, y, h = pose
        # The env's scan goes in as it is: the kernel turns metres into cells (the same float64 division).
        one_row = isinstance(sonar_m, np.ndarray) and sonar_m.ndim == 1
        readings = sonar_m if one_row else np.asarray(sonar_m, dtype=np.float64).reshape(-1)
        dx, dy = (self._dx[h], self._dy[h]) if len(readings) else (self._dx[h][:0], self._dy[h][:0])  # no beams
        fold_scan(
            self.evidence,
            self.occupied,
            self.free,
            float(x),
            float(y),
            dx,
            dy,
            self._t,
            readings,
            float(self.spec.cell_size_m),
            self.max_range,
        )

    def echoes(self, sonar_m: np.ndarray) -> int:
        """Beams of a scan that echoed (read short of the maximum range), as :meth:`scan_fit` counts
        them: no cell's fit can exceed this."""
        r = np.asarray(sonar_m, dtype=np.float64) / self.spec.cell_size_m
        return int(np.count_nonzero(r < self.max_range - 1e-3))

    def scan_fit(self, cells: np.ndarray, heading: int, sonar_m: np.ndarray) -> np.ndarray:
        """How well a sonar scan taken at each of ``cells`` ((K, 2) x, y) fits the map: +1 per echo
        that lands within half a cell of a well-established obstacle cell (echoed from at least
        twice: a single noisy echo may sit a cell short of the surface), -1 per beam that passes
        through one more than a cell before its echo (a no-echo beam counts half: it may be a
        dropout). A cell the map knows to be occupied cannot be where the robot is (-inf).

        Scan matching on the occupancy grid: where the scan fits best is where the robot is, whatever
        its dead reckoning says (docs/concepts/agents.md, "Living with drift"). Compiled
        (:func:`~embodmem.agents.map_kernels.fit_scan`): each beam is read only as far as it can score.
        """
        cells = np.asarray(cells, dtype=np.int64).reshape(-1, 2)
        r = np.asarray(sonar_m, dtype=np.float64).reshape(-1) / self.spec.cell_size_m
        dx, dy = self._dx[heading], self._dy[heading]
        return fit_scan(self.evidence, self.occupied, cells, dx, dy, self._t, r, self.max_range, ESTABLISHED)

    def mark_occupied(self, x: int, y: int) -> None:
        """A bump: the robot could not enter (x, y). Certain, unlike a sonar echo."""
        if 0 <= x < self.size and 0 <= y < self.size:
            self.evidence[y, x] = 100
            self.occupied[y, x] = True
            self.free[y, x] = False

    def unseen_goals(self) -> np.ndarray:
        """Cells worth looking at: not yet seen by the camera and not known to be occupied."""
        return ~self.seen & ~self.occupied

    def frontiers(self) -> np.ndarray:
        """Free cells with at least one unknown 4-neighbour, as a bool mask."""
        unknown = ~(self.free | self.occupied)
        near = np.zeros_like(unknown)
        near[1:, :] |= unknown[:-1, :]
        near[:-1, :] |= unknown[1:, :]
        near[:, 1:] |= unknown[:, :-1]
        near[:, :-1] |= unknown[:, 1:]
        return self.free & near

    def passable(self) -> np.ndarray:
        """Cells a path may use: everything not known to be occupied (optimism about the unknown)."""
        return ~self.occupied

    def echo_cell(self, pose: tuple[int, int, int], angle: float, range_m: float) -> tuple[int, int] | None:
        """The cell a beam at ``angle`` (radians from the heading) echoed from at ``range_m``."""
        x, y, h = pose
        a = h * math.pi / 2 + angle
        r = range_m / self.spec.cell_size_m + 0.05
        cx, cy = int(math.floor(x + 0.5 + math.cos(a) * r)), int(math.floor(y + 0.5 + math.sin(a) * r))
        if 0 <= cx < self.size and 0 <= cy < self.size:
            return cx, cy
        return None

    def occupied_around(self, cell: tuple[int, int], radius: int) -> set[tuple[int, int]]:
        """Occupied cells joined to ``cell`` (8-connected) within ``radius`` cells of it, ``cell``
        included: the parts of one object, as far as the map can tell (compiled:
        :func:`~embodmem.agents.map_kernels.joined_cells`)."""
        cx, cy = cell
        if not self.occupied[cy, cx]:
            return {cell}
        return {(x, y) for x, y in joined_cells(self.occupied, int(cx), int(cy), int(radius)).tolist()}

    def first_hits(self, pose: tuple[int, int, int], angles: np.ndarray, max_range: float) -> list[tuple[int, int]]:
        """First cell known to be occupied along each ray (radians from the heading), within range.

        What a camera at ``pose`` could have seen, according to the map: used to ask which cells a
        remembered frame was looking at.
        """
        return sorted(set(self.ray_hits(pose, angles, max_range)))

    def ray_hits(self, pose: tuple[int, int, int], angles: np.ndarray, max_range: float) -> list[tuple[int, int]]:
        """:meth:`first_hits` ray by ray: one cell per ray that hits something (repeats kept)."""
        px, py, _, occ = self._march(pose, angles, max_range)
        first = np.argmax(occ, axis=1)
        rows = np.nonzero(occ[np.arange(len(first)), first])[0]
        return [(int(px[i, first[i]]), int(py[i, first[i]])) for i in rows]


@functools.cache
def _prefix(reach: float) -> int:
    """How many samples of a march lie within ``reach`` cells: a shorter march's samples are the
    first ones of a longer one (the same distances)."""
    return len(np.arange(0.25, float(reach), 0.25))


@functools.lru_cache(maxsize=64)
def _prefixes(ranges: bytes) -> tuple[float, np.ndarray]:
    """The largest of the float64 ranges in ``ranges`` (their bytes: the ranges stay the same over a
    task, and this runs every step) and the :func:`_prefix` of each, as an int64 array shared by
    the calls (read only by the compiled kernel; writable, as the kernel's cached signature takes it)."""
    values = np.frombuffer(ranges, dtype=np.float64)
    return float(values.max()), np.array([_prefix(float(reach)) for reach in values], dtype=np.int64)


def plan_path(passable: np.ndarray, start: tuple[int, int], goals: np.ndarray) -> list[tuple[int, int]] | None:
    """Shortest 4-connected path from ``start`` to the nearest goal cell, excluding ``start``.

    The path descending the goals' distance field greedily (east, south, west, north first),
    searched from the start (compiled: :func:`~embodmem.agents.map_kernels.nearest_goal_path`).
    Returns ``None`` when no goal is reachable, ``[]`` when ``start`` is already a goal.
    """
    cells = nearest_goal_path(
        np.asarray(passable, dtype=np.bool_), np.asarray(goals, dtype=np.bool_), int(start[0]), int(start[1])
    )
    if len(cells) and cells[0, 0] < 0:
        return None
    return [(x, y) for x, y in cells.tolist()]


def step_toward(pose: tuple[int, int, int], cell: tuple[int, int]) -> int:
    """Action that moves from ``pose`` toward the adjacent ``cell``: turn to face it, then forward."""
    x, y, h = pose
    want = DIR_TO_VEC.index((cell[0] - x, cell[1] - y))
    return turn_toward(h, want)


def move_toward(pose: tuple[int, int, int], cell: tuple[int, int]) -> int:
    """Action that enters the adjacent ``cell`` without turning: forward, backward or a strafe.

    For goal-directed travel over a known map, where the camera need not face the way it goes.
    """
    x, y, h = pose
    d = DIR_TO_VEC.index((cell[0] - x, cell[1] - y))
    return int((Action.FORWARD, Action.STRAFE_RIGHT, Action.BACKWARD, Action.STRAFE_LEFT)[(d - h) % 4])


def turn_toward(heading: int, want: int) -> int:
    """FORWARD when already facing ``want``, else the shorter turn."""
    if heading == want:
        return int(Action.FORWARD)
    return int(Action.TURN_RIGHT) if (want - heading) % 4 == 1 else int(Action.TURN_LEFT)


def facing(from_xy: tuple[int, int], to_xy: tuple[int, int]) -> int:
    """Heading index that best points from one cell to another."""
    dx, dy = to_xy[0] - from_xy[0], to_xy[1] - from_xy[1]
    if abs(dx) >= abs(dy):
        return 0 if dx > 0 else 2
    return 1 if dy > 0 else 3
