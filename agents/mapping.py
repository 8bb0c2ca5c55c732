"""An occupancy grid built from sonar and pose, and shortest paths over it.

This is all an agent knows of the world's layout: cells its sonar has swept are free, cells its
sonar echoed from (or that it bumped into) are occupied, everything else is unknown. Paths are
planned optimistically (unknown cells may be crossed) and re-planned when the sonar says otherwise.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from embodmem.envs.geodesic import bfs_distance
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
        # floor(c + d) == c + floor(d) for a whole cell c unless d sits within rounding of the next
        # integer (0.5 + sin(pi/6) and the like): those few samples are computed the float way.
        self._cell_dx = [np.floor(d).astype(np.int64) for d in self._dx]
        self._cell_dy = [np.floor(d).astype(np.int64) for d in self._dy]
        self._fragile = [
            (dx - np.floor(dx) > 1 - 1e-9) | (dy - np.floor(dy) > 1 - 1e-9) for dx, dy in zip(self._dx, self._dy)
        ]
        self._pad = int(math.ceil(self.max_range)) + 4
        """Margin of the padded copy of the established cells that scan matching reads (no bounds
        checks per sample): cells up to ``_pad - ceil(max_range) - 1`` outside the map are matched."""
        self._ray_cache: dict[tuple[int, str, bytes, float], tuple[np.ndarray, np.ndarray]] = {}
        width = n + 2 * self._pad
        self._solid = np.zeros((width, width), dtype=bool)
        self._solid_offsets = [dy * width + dx for dx, dy in zip(self._cell_dx, self._cell_dy)]
        """Per heading: flat offset, in the padded array, of every beam sample from the cell."""

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
        self.close[:] = False
        self.faced_closely[:] = False

    def _march(
        self, pose: tuple[int, int, int], angles: np.ndarray, max_range: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Sample cells every quarter cell along rays (radians from the heading) from the cell
        centre; returns their x, y, whether inside the map, and whether known occupied."""
        x, y, h = pose
        along_x, along_y = self._rays(h, np.asarray(angles), float(max_range))
        px = np.floor(x + 0.5 + along_x).astype(np.int64)
        py = np.floor(y + 0.5 + along_y).astype(np.int64)
        n = self.size
        inside = (px >= 0) & (px < n) & (py >= 0) & (py < n)
        occ = np.zeros_like(inside)
        occ[inside] = self.occupied[py[inside], px[inside]]
        return px, py, inside, occ

    def _rays(self, heading: int, angles: np.ndarray, max_range: float) -> tuple[np.ndarray, np.ndarray]:
        """x and y offsets of the quarter-cell samples along rays (radians from ``heading``), kept
        for the few ray fans an agent uses every step (the camera's view, recall's rays)."""
        key = (heading, angles.dtype.str, angles.tobytes(), max_range)
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
    ) -> None:
        """Mark the cells inside the camera's view up to ``look_range`` cells as seen, and up to
        ``searched_range`` (default: the same) as searched for later missions; with ``close_range``
        (at most ``look_range``), the cells up to it as looked at closely. What was only swept by
        sonar is not "seen": a small target there may have gone unnoticed. With ``objects_within``
        (``face_objects_in_fog``), a ray that ends at an object not yet faced from within that many
        cells does not mark the cells within that many cells in front of it as seen; with
        ``withhold_across_view`` as well, no other ray of the view marks those cells."""
        px, py, ok = self._in_view(pose, angles, look_range)
        if objects_within is None:
            _mark(self.seen, px, py, ok)
        else:
            withheld = self._before_unfaced_objects(px, py, ok, objects_within) & ok
            if withhold_across_view:  # rays passing just beside the object cross the same water
                cells = np.zeros_like(self.seen)
                cells[py[withheld], px[withheld]] = True
                withheld[ok] = cells[py[ok], px[ok]]
            _mark(self.seen, px, py, ok & ~withheld)
        if close_range is not None:
            _mark(self.close, px, py, ok, close_range)
        _mark(self.searched, px, py, ok, searched_range)

    def _before_unfaced_objects(self, px: np.ndarray, py: np.ndarray, ok: np.ndarray, within: float) -> np.ndarray:
        """The samples of a view march (``ok``: seen) within ``within`` cells in front of the object
        that ends their ray, where that object is farther off and has not been faced from that close
        this mission; objects at most ``within`` off are marked faced. Occupied cells on the map's
        edge are the survey area's wall, not objects."""
        n = self.size
        hit = np.zeros_like(ok)
        hit[ok] = self.occupied[py[ok], px[ok]]
        hit &= (px > 0) & (py > 0) & (px < n - 1) & (py < n - 1)
        rays = np.nonzero(hit.any(axis=1))[0]
        first = hit[rays].argmax(axis=1)
        distance = (first + 1) * SAMPLE_STEP
        ox, oy = px[rays, first], py[rays, first]
        near = distance <= within
        self.faced_closely[oy[near], ox[near]] = True
        far = ~near & ~self.faced_closely[oy, ox]
        withheld = np.zeros_like(ok)
        t = (np.arange(ok.shape[1]) + 1) * SAMPLE_STEP
        withheld[rays[far]] = t[None, :] > (distance[far] - within)[:, None]
        return withheld

    def look_by_kind(self, pose: tuple[int, int, int], angles: np.ndarray, ranges: np.ndarray) -> None:
        """Mark the cells in view as searched for each target kind up to that kind's range (cells,
        :data:`TARGET_KINDS` order): one march, each kind a prefix of it."""
        px, py, ok = self._in_view(pose, angles, float(ranges.max()))
        for k, reach in enumerate(ranges):
            _mark(self.searched_by_kind[k], px, py, ok, float(reach))

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

    def _beam_cells(self, x: int, y: int, h: int) -> tuple[np.ndarray, np.ndarray]:
        """Cells (x, y) of every beam sample of a scan at cell (x, y) facing ``h``: the floors of
        ``x + dx`` and ``y + dy``, from the whole-cell offsets (the few fragile samples the float way)."""
        if not (float(x).is_integer() and float(y).is_integer()):  # not a cell: the float way throughout
            return np.floor(x + self._dx[h]).astype(np.int64), np.floor(y + self._dy[h]).astype(np.int64)
        px = int(x) + self._cell_dx[h]
        py = int(y) + self._cell_dy[h]
        fragile = self._fragile[h]
        if fragile.any():
            px[fragile] = np.floor(x + self._dx[h][fragile]).astype(np.int64)
            py[fragile] = np.floor(y + self._dy[h][fragile]).astype(np.int64)
        return px, py

    def update(self, pose: tuple[int, int, int], sonar_m: np.ndarray) -> None:
        """Fold one sonar scan taken at ``pose`` (cell x, cell y, heading) into the grid.

        Each cell keeps an evidence count: +2 per echo from it, -1 per beam that passed through it.
        An echo near a cell corner can land in the neighbouring cell; later beams through that
        cell outvote it, so one unlucky echo does not wall the robot in.
        """
        x, y, h = pose
        n = self.size
        if len(sonar_m):
            r = np.asarray(sonar_m, dtype=np.float64) / self.spec.cell_size_m
            px, py = self._beam_cells(x, y, h)
            inside = (px >= 0) & (px < n) & (py >= 0) & (py < n)
            # Only the window the beams cover changes: count votes there, not over the whole map.
            x0, x1 = max(int(px.min()), 0), min(int(px.max()) + 1, n)
            y0, y1 = max(int(py.min()), 0), min(int(py.max()) + 1, n)
            if x0 < x1 and y0 < y1:
                width, height = x1 - x0, y1 - y0
                passed = inside & (self._t[None, :] < r[:, None] - 0.1)
                flat = (py - y0) * width + (px - x0)
                votes = -np.bincount(flat[passed], minlength=width * height)
                echo = r < self.max_range - 1e-3
                if echo.any():
                    j = np.minimum(np.searchsorted(self._t, r[echo] + 0.05), len(self._t) - 1)
                    ok = inside[echo, j]
                    votes += 2 * np.bincount(flat[echo, j][ok], minlength=width * height)
                self.free[py[passed], px[passed]] = True
                evidence = self.evidence[y0:y1, x0:x1]
                evidence += np.minimum(np.maximum(votes.reshape(height, width), -8), 8).astype(np.int16)
                np.maximum(evidence, -20, out=evidence)
                np.minimum(evidence, 100, out=evidence)
                np.greater(evidence, 0, out=self.occupied[y0:y1, x0:x1])
                self.free[y0:y1, x0:x1] &= ~self.occupied[y0:y1, x0:x1]
        if 0 <= x < n and 0 <= y < n:
            self.evidence[y, x] = min(self.evidence[y, x], -1)
            self.free[y, x] = True
            self.occupied[y, x] = False

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
        its dead reckoning says (README, "Living with drift"). Reads only the beam samples that can
        score (the stretch before each echo and the cell around it) from a padded copy of the
        established cells; equal bit for bit to :meth:`scan_fit_reference`.
        """
        cells = np.asarray(cells, dtype=np.int64).reshape(-1, 2)
        n, pad = self.size, self._pad
        reach = pad - int(math.ceil(self.max_range)) - 1
        if len(cells) == 0 or cells.min() < -reach or cells.max() >= n + reach:
            return self.scan_fit_reference(cells, heading, sonar_m)
        r = np.asarray(sonar_m, dtype=np.float64) / self.spec.cell_size_m
        echo = r < self.max_range - 1e-3
        t = self._t[None, :]
        at_echo = (np.abs(t - r[:, None]) <= 0.5) & echo[:, None]
        before = t < r[:, None] - 1.0
        np.greater_equal(self.evidence, ESTABLISHED, out=self._solid[pad : pad + n, pad : pad + n])
        width = self._solid.shape[1]
        base = (cells[:, 1] + pad) * width + cells[:, 0] + pad
        offsets = self._solid_offsets[heading]
        # Samples of each beam, beam after beam: the stretch before the echo, then the echo's cell.
        picked = np.concatenate([offsets[before], offsets[at_echo]])
        flat = base[:, None] + picked[None, :]
        fragile = self._fragile[heading]
        if fragile.any():
            columns = np.nonzero(np.concatenate([fragile[before], fragile[at_echo]]))[0]
            if len(columns):
                dx = np.concatenate([self._dx[heading][before], self._dx[heading][at_echo]])[columns]
                dy = np.concatenate([self._dy[heading][before], self._dy[heading][at_echo]])[columns]
                px = np.floor(cells[:, 0, None] + dx[None]).astype(np.int64)
                py = np.floor(cells[:, 1, None] + dy[None]).astype(np.int64)
                flat[:, columns] = (py + pad) * width + px + pad
        solid = self._solid.ravel()[flat]
        counts = np.concatenate([before.sum(axis=1), at_echo.sum(axis=1)])
        ends = np.cumsum(counts)
        running = np.zeros((len(cells), len(picked) + 1), dtype=np.int32)
        np.cumsum(solid, axis=1, out=running[:, 1:])
        per_beam = running[:, ends] - running[:, ends - counts] > 0
        beams = len(r)
        blocked, hit = per_beam[:, :beams], per_beam[:, beams:]
        hits = hit.sum(axis=1)
        score = hits - blocked[:, echo].sum(axis=1) - 0.5 * blocked[:, ~echo].sum(axis=1)
        inside_cell = (cells[:, 0] >= 0) & (cells[:, 0] < n) & (cells[:, 1] >= 0) & (cells[:, 1] < n)
        here = np.zeros(len(cells), dtype=bool)
        here[inside_cell] = self.occupied[cells[inside_cell, 1], cells[inside_cell, 0]]
        return np.where(here | ~inside_cell, -np.inf, score.astype(np.float64))

    def scan_fit_reference(self, cells: np.ndarray, heading: int, sonar_m: np.ndarray) -> np.ndarray:
        """:meth:`scan_fit` the plain way, every beam sample of every cell: what the fast version must
        equal bit for bit (tests), and its fallback outside the padded area."""
        cells = np.asarray(cells, dtype=np.int64).reshape(-1, 2)
        n = self.size
        r = np.asarray(sonar_m, dtype=np.float64) / self.spec.cell_size_m
        px = np.floor(cells[:, 0, None, None] + self._dx[heading][None]).astype(np.int64)
        py = np.floor(cells[:, 1, None, None] + self._dy[heading][None]).astype(np.int64)
        inside = (px >= 0) & (px < n) & (py >= 0) & (py < n)
        solid = np.zeros(px.shape, dtype=bool)
        solid[inside] = self.evidence[py[inside], px[inside]] >= ESTABLISHED
        echo = r < self.max_range - 1e-3
        t = self._t[None, :]
        at_echo = (np.abs(t - r[:, None]) <= 0.5) & echo[:, None]
        before = t < r[:, None] - 1.0
        hits = (solid & at_echo[None]).any(axis=2).sum(axis=1)
        blocked = np.asarray((solid & before[None]).any(axis=2))
        score = hits - blocked[:, echo].sum(axis=1) - 0.5 * blocked[:, ~echo].sum(axis=1)
        inside_cell = (cells[:, 0] >= 0) & (cells[:, 0] < n) & (cells[:, 1] >= 0) & (cells[:, 1] < n)
        here = np.zeros(len(cells), dtype=bool)
        here[inside_cell] = self.occupied[cells[inside_cell, 1], cells[inside_cell, 0]]
        return np.where(here | ~inside_cell, -np.inf, score.astype(np.float64))

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
        included: the parts of one object, as far as the map can tell."""
        cx, cy = cell
        x0, y0 = max(cx - radius, 0), max(cy - radius, 0)
        window = self.occupied[y0 : cy + radius + 1, x0 : cx + radius + 1].astype(np.uint8)
        if not window[cy - y0, cx - x0]:
            return {cell}
        _, labels = cv2.connectedComponents(window, connectivity=8)
        ys, xs = np.nonzero(labels == labels[cy - y0, cx - x0])
        return {(int(x) + x0, int(y) + y0) for x, y in zip(xs, ys)}

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


def _mark(target: np.ndarray, px: np.ndarray, py: np.ndarray, ok: np.ndarray, reach: float | None = None) -> None:
    """Set ``target`` at the seen samples (``ok``) of a march, only those up to ``reach`` cells when
    given: a shorter march's samples are the first ones of a longer one (the same distances)."""
    if reach is not None:
        near = len(np.arange(0.25, reach, 0.25))
        px, py, ok = px[:, :near], py[:, :near], ok[:, :near]
    target[py[ok], px[ok]] = True


def plan_path(passable: np.ndarray, start: tuple[int, int], goals: np.ndarray) -> list[tuple[int, int]] | None:
    """Shortest 4-connected path from ``start`` to the nearest goal cell, excluding ``start``.

    One BFS wavefront from the goals gives every cell's distance; the path descends it greedily.
    Returns ``None`` when no goal is reachable, ``[]`` when ``start`` is already a goal.
    """
    sx, sy = start
    at_start = np.zeros_like(goals)
    at_start[sy, sx] = True
    field = bfs_distance(passable | goals, goals, at_start)
    if not np.isfinite(field[sy, sx]):
        return None
    path = []
    x, y = sx, sy
    n_y, n_x = field.shape
    while field[y, x] > 0:
        best = None
        for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1)):
            nx, ny = x + dx, y + dy
            if 0 <= nx < n_x and 0 <= ny < n_y and field[ny, nx] < field[y, x]:
                best = (nx, ny)
                break
        if best is None:
            return None
        x, y = best
        path.append(best)
    return path


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
