"""FrontierExplorer: the no-memory baseline, and the navigation skills every other agent reuses.

Each step it folds the sonar scan into an occupancy grid, embeds the camera frame, and asks the
recognizer whether the mission's target is in view. Until it is, it drives to the nearest frontier
(a known-free cell next to unknown space). When it is, it guesses which cell the target occupies
(the nearest sonar echo in the camera's view), drives facing ahead to a cell from which to judge it
(next to it, or up to the task's success radius away with the cell straight ahead), turns to face
it, looks again, and stops if the second look agrees (from farther than next to it, the middle of
the view must agree too); otherwise it looks from closer, or rules that cell out and explores on.
"""

from __future__ import annotations

import functools
import math
from contextlib import AbstractContextManager, nullcontext

import cv2
import numpy as np

from embodmem.agents.base import Agent, Navigator, Observation, RecognitionEmbedder
from embodmem.agents.config import ExplorerConfig
from embodmem.agents.map_kernels import clean_views, joined_cells, viewing_mask
from embodmem.agents.mapping import OccupancyGrid, facing, move_toward, plan_path, step_toward, turn_toward
from embodmem.agents.recognizer import (
    TargetRecognizer,
    centre_at_scale,
    centre_view,
    detection_range,
    mission_kind,
    named_variant,
)
from embodmem.envs.objects import TARGET_KINDS
from embodmem.envs.spec import DIR_TO_VEC, Action, SensorSpec

_NEIGHBOURHOOD = np.array([(dx, dy) for dy in range(-2, 3) for dx in range(-2, 3)], dtype=np.int64)
"""Offsets of the cells scan matching weighs: the dead-reckoned cell (index 12) and the cells up to
two away (drift between fixes in open water can pass one cell)."""
_CENTRE = 12

_MOVE_TURNS = {int(Action.FORWARD): 0, int(Action.STRAFE_RIGHT): 1, int(Action.BACKWARD): 2, int(Action.STRAFE_LEFT): 3}
"""Move actions -> quarter turns clockwise from the heading of the cell they try to enter."""


def mean_abs_difference(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute difference of two uint8 images of one shape, in one OpenCV call: the L1 norm
    is an exact integer sum, so this is ``np.abs(a.astype(np.int16) - b).mean()`` to the last bit.

    >>> a = np.zeros((2, 2, 3), np.uint8); b = a.copy(); b[0, 0] = 255
    >>> mean_abs_difference(a, b), float(np.abs(a.astype(np.int16) - b).mean())
    (63.75, 63.75)
    """
    return cv2.norm(a, b, cv2.NORM_L1) / a.size


@functools.cache
def _hypot_table(r: int) -> np.ndarray:
    """``np.hypot(dx, dy)`` at ``[dy + r, dx + r]`` for integer offsets up to ``r`` cells."""
    offsets = np.arange(-r, r + 1, dtype=np.int64)
    return np.hypot(offsets[None, :], offsets[:, None])


class FrontierExplorer(Agent, Navigator):
    """Frontier exploration plus CLIP recognition of the mission's target; no memory across tasks."""

    name = "explorer"

    def __init__(self, embedder: RecognitionEmbedder, config: ExplorerConfig | None = None):
        super().__init__()
        self.embedder = embedder
        self.config = config or ExplorerConfig()
        self.recognizer = TargetRecognizer(embedder)
        self.grid: OccupancyGrid | None = None
        self.spec: SensorSpec | None = None
        self.pose = (0, 0, 0)
        self.last_vector: np.ndarray | None = None
        self.last_probability = 0.0
        self.rejected: set[tuple[int, int]] = set()
        self._look_closer: set[tuple[int, int]] = set()
        """Candidates a look from a distance left unclear: judged from next to them."""
        self._judged_clean: set[tuple[int, int]] = set()
        """Candidates judged only from viewing cells with nothing else behind them (``clean_background_stop``)."""
        self.candidate: tuple[int, int] | None = None
        self.path: list[tuple[int, int]] = []
        self.goal_kind = ""
        self.steps = 0
        self._last_action: int | None = None
        self._last_pose: tuple[int, int, int] | None = None
        self._last_raw: tuple[float, float] | None = None
        self.relocalising = self.config.relocalise
        self.face_passing_objects = False
        self.pose_correction = np.zeros(2, dtype=np.float64)
        """Added to the dead-reckoned position: what scan matching against the map last said the
        odometry is off by (kept with the map)."""
        self.relocalisations = 0
        """Scans that moved the position estimate to another cell (this task)."""
        self._favoured: tuple[int, int] | None = None
        """Neighbouring offset the last informative scans favoured, and how many in a row."""
        self._favoured_count = 0
        self._last_small: np.ndarray | None = None
        self.frames_embedded = 0
        self._fans: dict[tuple[float, float], tuple[np.ndarray, np.ndarray]] = {}
        """:meth:`_background_fans` by the view's half width and the reach."""

    def timed(self, name: str) -> AbstractContextManager[object]:
        """Context manager timing ``agent/<name>`` when a profiler is attached."""
        return self.profiler.section(f"agent/{name}") if self.profiler is not None else nullcontext()

    # ---------------------------------------------------------------- Agent protocol

    def reset(self, observation: Observation, spec: SensorSpec) -> None:
        super().reset(observation, spec)
        if self.grid is None or not self.grid.fits(spec):
            self.grid = OccupancyGrid(spec)
        self.spec = spec
        self.relocalising = self.config.relocalise and not spec.exact_pose
        """Scan matching on (``relocalise``), unless the datasheet says the pose is exact: then there
        is nothing to correct."""
        self.sonar_angles = np.array(spec.sonar_angles())
        self.half_fov = np.radians(spec.camera_fov_deg) / 2
        self.view_rays = np.linspace(-self.half_fov, self.half_fov, 11)
        visibility = spec.view_range_m / spec.cell_size_m
        self.clear_sight = self.config.clear_sight_share * visibility
        """Cells within which a small target shows clearly in this light (less in deep water)."""
        self.searched_range = min(self.config.look_range_cells, self.clear_sight)
        """Cells this close count as searched for later missions too."""
        self.recognizer.set_goal(observation)  # mission text, or the words the goal image shows
        self.mission_kind = mission_kind(self.recognizer.mission or "")
        """The target kind the mission asks for (None: a mission naming none)."""
        self.centre_next_to = centre_view
        """How the middle of the view is cut out for a judgement from next to a candidate."""
        if self.config.centre_at_scale_for_instances and named_variant(self.recognizer.mission or "") is not None:
            self.centre_next_to = centre_at_scale
        self.kind_ranges = np.array(
            [min(self.config.look_range_cells, detection_range(k, spec.view_range_m)) for k in TARGET_KINDS]
        )
        """Per target kind, cells within which a look counts as searched for it (``coverage_by_kind``)."""
        self.seen_range = self.searched_range if self.config.fog_limited_look else self.config.look_range_cells
        """Cells within which a look counts as a look for this mission."""
        self.close_range: float | None = None
        """With ``seen_within_detection_range``: cells within which this mission's kind is recognised
        in this light; what was looked at only from farther is looked at again, from this close,
        before the search starts over."""
        if self.config.seen_within_detection_range and self.mission_kind is not None:
            self.close_range = float(self.kind_ranges[TARGET_KINDS.index(self.mission_kind)])
        self._close_pass = False
        self.objects_within: float | None = None
        """With ``face_objects_in_fog``, in fog: cells within which an object must be faced for
        the water in front of it to count as looked at (the mission's kind's detection range)."""
        fog = self.searched_range < self.config.look_range_cells
        if self.config.face_objects_in_fog and fog and self.mission_kind is not None:
            within = float(self.kind_ranges[TARGET_KINDS.index(self.mission_kind)])
            self.objects_within = within if within < self.seen_range else None
        self.reset_spatial_memory_if_cold()
        self.look_beside_objects = (
            self.config.look_beside_objects_in_fog
            and self.objects_within is not None
            and spec.odometry_drift_pct > 0
            and bool(self.grid.seen.any())
        )
        """With ``look_beside_objects_in_fog``: the odometry drifts and this mission began with
        coverage carried for its kind, so water next to an object not faced closely counts as looked
        at only from close by."""
        self.face_passing_objects = (
            self.config.face_passing_objects_in_fog and self.objects_within is not None and spec.exact_pose
        )
        """With ``face_passing_objects_in_fog``: in fog, for a kind recognised only from close by, with
        an exact pose, small objects passed within ``passing_object_cells`` are judged face on."""
        self.rejected = set()
        self._look_closer = set()
        self._judged_clean = set()
        self._viewing: dict[tuple[tuple[int, int], float], tuple[bytes, np.ndarray]] = {}
        self.candidate = None
        self.path = []
        self.goal_kind = ""
        self.steps = 0
        self._last_action = None
        self._last_pose = None
        self._last_raw = None
        self.relocalisations = 0
        self._last_small = None
        self.last_vector = None

    def reset_spatial_memory_if_cold(self) -> None:
        """The explorer remembers nothing between tasks: its map starts blank."""
        assert self.grid is not None
        self.grid.reset()
        self.pose_correction[:] = 0.0

    def act(self, observation: Observation) -> int:
        self.update(observation)
        self.steps += 1
        with self.timed("planning"):
            action = self.decide(observation)
        self._last_action = action
        return action

    # ---------------------------------------------------------------- perception

    def update(self, observation: Observation) -> None:
        """Pose, bumps and sonar into the grid; the frame into a vector and a target probability."""
        assert self.grid is not None
        pose = observation["pose"]
        raw = (float(pose[0]), float(pose[1]))
        with self.timed("mapping"):
            self.pose = self.localise(raw, int(pose[2]), observation["sonar"])
        turns = _MOVE_TURNS.get(self._last_action) if self._last_action is not None else None
        # Did the last move happen? The odometry's own step says so (a scan match may move the
        # estimate by a cell at the same time, so comparing estimated cells would not).
        last = self._last_raw
        if turns is not None and last is not None and math.hypot(raw[0] - last[0], raw[1] - last[1]) < 0.5:
            dx, dy = DIR_TO_VEC[(self.pose[2] + turns) % 4]
            self.grid.mark_occupied(self.pose[0] + dx, self.pose[1] + dy)  # bumped into something unseen
            self.path = []
        self._last_pose = self.pose
        self._last_raw = raw
        with self.timed("mapping"):
            self.grid.update(self.pose, observation["sonar"])
            by_kind = self.kind_ranges if self.config.coverage_by_kind else None
            if self.close_range is None:
                self.grid.look(
                    self.pose,
                    self.view_rays,
                    self.seen_range,
                    self.searched_range,
                    objects_within=self.objects_within,
                    withhold_across_view=self.config.face_objects_across_view,
                    withhold_beside_objects=self.look_beside_objects,
                    kind_ranges=by_kind,
                )
            else:  # the second pass counts only close looks as looks
                reach = self.close_range if self._close_pass else self.seen_range
                self.grid.look(
                    self.pose, self.view_rays, reach, self.searched_range, self.close_range, kind_ranges=by_kind
                )
        with self.timed("embedding"):
            image = observation["image"]
            small = None
            if self.config.reuse_below > 0:
                small = cv2.resize(image, (16, 16), interpolation=cv2.INTER_AREA)
            if (
                small is None
                or self.last_vector is None
                or self._last_small is None
                or mean_abs_difference(small, self._last_small) >= self.config.reuse_below
            ):
                self.last_vector = self.embedder.embed_images(image[None])[0]
                self._last_small = small
                self.frames_embedded += 1
            self.last_probability = self.recognizer.probability_of(self.last_vector)
        self.trace.extra["p_target"] = self.last_probability
        self.trace.reported = self.last_probability >= self.config.detect_probability

    def localise(self, raw: tuple[float, float], heading: int, sonar_m: np.ndarray) -> tuple[int, int, int]:
        """The robot's cell: the dead-reckoned position plus the last correction, moved to a
        neighbouring cell when the sonar scan fits the map clearly better there. When a scan fits
        one cell clearly (a fix), the correction is renewed from it, so the odometry's error since
        the last fix is all that remains: errors do not compound over a visit."""
        assert self.grid is not None
        n = self.grid.size
        # Plain floats: the same float64 sums as numpy's, without an array op per step.
        correction_x, correction_y = self.pose_correction.tolist()
        bx, by = raw[0] + correction_x, raw[1] + correction_y
        # round() is numpy's round half to even; on two numbers plain Python is several times faster.
        x, y = min(max(round(bx), 0), n - 1), min(max(round(by), 0), n - 1)
        margin, enough = self.config.relocalise_margin, self.config.relocalise_min_hits
        # A cell's fit is at most its echoes on obstacles: with fewer echoes than a fix needs, no
        # cell can move the estimate or fix it, so the match is skipped (same outcome, no cost).
        if self.relocalising and len(sonar_m) and self.grid.echoes(sonar_m) >= enough and self.grid.occupied.any():
            cell = np.array([x, y], dtype=np.int64)
            candidates = cell[None, :] + _NEIGHBOURHOOD
            scores = self.grid.scan_fit(candidates, heading, sonar_m)
            best = int(np.argmax(scores))
            here = scores[_CENTRE]
            others = np.concatenate([scores[:_CENTRE], scores[_CENTRE + 1 :]])
            if best != _CENTRE and scores[best] >= enough and scores[best] - here >= margin:
                offset = (int(_NEIGHBOURHOOD[best][0]), int(_NEIGHBOURHOOD[best][1]))
                self._favoured_count = self._favoured_count + 1 if offset == self._favoured else 1
                self._favoured = offset
                if self._favoured_count >= self.config.relocalise_agree:
                    x, y = int(candidates[best][0]), int(candidates[best][1])
                    self.pose_correction = np.array([x - raw[0], y - raw[1]])
                    self.relocalisations += 1
                    self._favoured, self._favoured_count = None, 0
            elif here >= enough and here - float(others.max()) >= margin:
                # A fix where the odometry said: renew the correction.
                self.pose_correction = np.array([x - raw[0], y - raw[1]])
                self._favoured, self._favoured_count = None, 0
        return int(x), int(y), heading

    def episode_stats(self) -> dict[str, float]:
        return {"relocalisations": self.relocalisations}

    # ---------------------------------------------------------------- decisions

    def decide(self, observation: Observation) -> int:
        """Approach a candidate if there is one, else look for one, else explore."""
        if self.candidate is None and self.last_probability >= self.config.detect_probability:
            self.candidate = self.guess_target_cell(observation)
            self.path = []
        if self.candidate is None and self.face_passing_objects:
            self.candidate = self.passing_object()
            if self.candidate is not None:
                self.path = []
        if self.candidate is not None:
            action = self.approach_action(observation)
            if action is not None:
                return action
        action = self.frontier_action()
        return int(Action.STOP) if action is None else action

    def passing_object(self) -> tuple[int, int] | None:
        """The nearest cell of a small object within ``passing_object_cells`` that no ray of the view
        has ended at from within the mission's kind's detection range this mission, not ruled out
        (``face_passing_objects_in_fog``); None if there is none."""
        assert self.grid is not None
        x, y, _ = self.pose
        r = int(self.config.passing_object_cells)
        n = self.grid.size
        y0, x0 = max(y - r, 1), max(x - r, 1)  # the map's edge cells are its border, not objects
        y1, x1 = min(y + r + 1, n - 1), min(x + r + 1, n - 1)
        window = self.grid.occupied[y0:y1, x0:x1] & ~self.grid.faced_closely[y0:y1, x0:x1]
        ys, xs = np.nonzero(window)  # row-major: of equally near cells, the first row's
        distance = np.hypot(xs + x0 - x, ys + y0 - y)
        for i in np.argsort(distance, kind="stable"):
            if distance[i] > self.config.passing_object_cells:
                break
            cell = (int(xs[i]) + x0, int(ys[i]) + y0)
            if cell in self.rejected:
                continue
            parts = self.small_object(cell)
            if parts is not None and not any(self.grid.faced_closely[py, px] for px, py in parts):
                return cell
        return None

    def small_object(self, cell: tuple[int, int]) -> set[tuple[int, int]] | None:
        """The cells of the object ``cell`` belongs to, if it has at most ``small_object_cells`` (a
        target, not a rock wall); None for a larger one. A larger object has more than that many
        cells within that many cells of any of its cells, so the window is enough."""
        assert self.grid is not None
        parts = self.grid.occupied_around(cell, self.config.small_object_cells)
        return parts if len(parts) <= self.config.small_object_cells else None

    def guess_target_cell(self, observation: Observation) -> tuple[int, int] | None:
        """The cell the target most likely occupies: the nearest sonar echo inside the camera's view.

        The sonar beams that fall in the camera's field of view echo from exactly the surfaces the
        camera sees; the nearest one not yet ruled out is tried first (if it is wrong, the closer
        look rules it out and the next detection tries the next).
        """
        assert self.grid is not None and self.spec is not None
        sonar = observation["sonar"]
        best: tuple[float, tuple[int, int]] | None = None
        limit = min(self.config.max_candidate_range_m, self.spec.sonar_max_range_m) - 1e-3
        for angle, r in zip(self.sonar_angles, sonar):
            if abs(angle) > self.half_fov or r >= limit:
                continue
            cell = self.grid.echo_cell(self.pose, float(angle), float(r))
            usable = cell is not None and cell not in self.rejected and self.grid.occupied[cell[1], cell[0]]
            if usable and cell is not None and (best is None or r < best[0]):
                best = (float(r), cell)
        return None if best is None else best[1]

    def approach_action(self, observation: Observation) -> int | None:
        """Go to a cell from which the candidate can be judged, face it, and stop if the target is
        confirmed there."""
        assert self.grid is not None and self.candidate is not None
        x, y, h = self.pose
        cell = self.cell_to_judge()
        if cell is not None:
            want = facing((x, y), cell)
            if h != want:
                return turn_toward(h, want)
            if self.confirmed_ahead(observation, cell):
                self.trace.mode = "stop"
                return int(Action.STOP)
            if abs(cell[0] - x) + abs(cell[1] - y) > 1 and self.last_probability >= self.config.confirm_probability:
                self._look_closer.add(cell)  # the target is in view, but maybe beside it: look from next to it
                return self.approach_action(observation)
            if cell in self._judged_clean and abs(cell[0] - x) + abs(cell[1] - y) <= 1:
                # Seen alone, from next to it, and not the target: no other part of that object is either.
                self.rejected |= self.grid.occupied_around(cell, 1)
            self.rule_out(cell)
            return None
        action = self._follow(self.approach_goals(), "approach")
        if action is None:
            self.rule_out(self.candidate)
        return action

    def approach_goals(self) -> np.ndarray:
        """Cells (a bool mask) to travel to for a look at the candidate."""
        assert self.candidate is not None
        return self.viewing_cells(self.candidate)

    def cell_to_judge(self) -> tuple[int, int] | None:
        """The cell to face and judge from where the robot is (None: not there yet)."""
        assert self.candidate is not None
        return self.candidate if self.viewing_cells(self.candidate)[self.pose[1], self.pose[0]] else None

    def rule_out(self, cell: tuple[int, int]) -> None:
        """The target is not at ``cell`` (this task): never the candidate again (with
        ``face_passing_objects``, nor any part of a small object it belongs to)."""
        self.rejected.add(cell)
        if self.face_passing_objects:
            self.rejected |= self.small_object(cell) or set()
        self.candidate = None

    def confirmed_ahead(self, observation: Observation, cell: tuple[int, int]) -> bool:
        """Facing the candidate: is the target there? From next to it the cell fills the view, so the
        whole frame decides; from farther off the frame also shows the cell's neighbours, so the
        target must also be recognised in the middle of the view (the centre half of the columns,
        where the cell straight ahead is)."""
        if self.last_probability < self.config.confirm_probability:
            return False
        adjacent = abs(cell[0] - self.pose[0]) + abs(cell[1] - self.pose[1]) <= 1
        # From next to it, the whole frame decides unless the middle must agree too: always with
        # confirm_centre_adjacent, and with clean_background_stop for a candidate that could only be
        # judged with other things behind it (a wind station beside a collapsed tower fills the
        # frame's edge, not its middle). For an instance goal the middle is judged from there at its
        # own scale (centre_at_scale_for_instances).
        crowded = self.config.clean_background_stop and cell not in self._judged_clean
        if adjacent and not (crowded or self.config.confirm_centre_adjacent):
            return True
        with self.timed("embedding"):
            middle = (self.centre_next_to if adjacent else centre_view)(observation["image"])
            centre = self.embedder.embed_images(middle[None])
            p_centre = float(self.recognizer.probability(centre)[0])
        return p_centre >= (self.config.confirm_probability if adjacent else self.config.centre_probability)

    def viewing_cells(self, cell: tuple[int, int]) -> np.ndarray:
        """Cells (a bool mask) from which to judge ``cell``: next to it, or up to ``stop_range_cells``
        away with ``cell`` straight ahead and nothing known in between (compiled:
        :func:`~embodmem.agents.map_kernels.viewing_mask`)."""
        assert self.grid is not None
        cx, cy = cell
        occupied = self.grid.occupied
        reach = 1.0 if cell in self._look_closer else self.config.stop_range_cells
        # The answer depends only on the cell, the reach and the occupied cells: an approach asks
        # several times a step, and over many steps of an unchanged map (``_clean_background`` marches
        # rays from every viewing cell, which dominated long tours). The map is compared as bytes.
        occupied_now = occupied.tobytes()
        cached = self._viewing.get((cell, reach))
        if cached is not None and cached[0] == occupied_now:
            return cached[1].copy()
        offsets, between, used = self._view_offset_arrays(reach, float(self.half_fov))
        mask = viewing_mask(occupied, int(cx), int(cy), offsets, between, used)
        if self.config.clean_background_stop and mask.any():
            clean = self._clean_background(cell, mask)
            if clean.any():  # none: judge from where it can be judged at all
                mask = clean
                self._judged_clean.add(cell)
        if len(self._viewing) > 256:
            self._viewing.clear()
        self._viewing[(cell, reach)] = (occupied_now, mask.copy())
        return mask

    def _clean_background(self, cell: tuple[int, int], viewing: np.ndarray) -> np.ndarray:
        """The viewing cells (a mask) from which the middle of the view, facing ``cell``, shows no
        obstacle the map knows beyond it (over low things too) within a cell more than the range at
        which the mission's kind is recognised, other than the parts of ``cell``'s own object: from there a
        recognised target can only be ``cell``. From elsewhere a target behind a low cable or rock
        would be confirmed at the cable."""
        assert self.grid is not None and self.spec is not None
        reach = self.config.look_range_cells
        if self.mission_kind is not None:  # a cell past the detection range is still found at times
            reach = float(self.kind_ranges[TARGET_KINDS.index(self.mission_kind)]) + 1.0
        foreign = self.grid.occupied.copy()  # occupied cells not of the candidate's own object
        own = joined_cells(foreign, int(cell[0]), int(cell[1]), 2)
        foreign[own[:, 1], own[:, 0]] = False
        along_x, along_y = self._background_fans(float(reach))
        # The distances compared are numpy's: from a table of every offset a march of this reach,
        # or a viewing cell, can reach.
        radius = max(int(math.ceil(reach)), int(math.ceil(self.config.stop_range_cells))) + 2
        return clean_views(foreign, int(cell[0]), int(cell[1]), viewing, along_x, along_y, _hypot_table(radius))

    def _background_fans(self, reach: float) -> tuple[np.ndarray, np.ndarray]:
        """The rays of the middle of the view marched by :meth:`_clean_background`, (heading, ray,
        sample) x and y offsets, for each heading: kept, as the view's width and the reach stay the
        same over a task."""
        assert self.grid is not None
        key = (float(self.half_fov), reach)
        fans = self._fans.get(key)
        if fans is None:
            rays = np.linspace(-0.5 * self.half_fov, 0.5 * self.half_fov, 5)
            marched = [self.grid.rays(h, rays, reach) for h in range(4)]
            fans = (np.stack([fan[0] for fan in marched]), np.stack([fan[1] for fan in marched]))
            self._fans[key] = fans
        return fans

    @staticmethod
    @functools.cache
    def _view_offsets(reach: float, half_fov: float) -> tuple[tuple[tuple[int, int], tuple[tuple[int, int], ...]], ...]:
        """Offsets (from a judged cell) of the cells it can be judged from, each with the offsets of
        the cells between that must be free: the four neighbours, and cells up to ``reach`` away
        from which the cell lies near the middle of the view when facing it."""
        out = []
        r = int(reach)
        for dx in range(-r, r + 1):
            for dy in range(-r, r + 1):
                if not 0 < np.hypot(dx, dy) <= reach:
                    continue
                hx, hy = DIR_TO_VEC[facing((dx, dy), (0, 0))]
                angle = np.arctan2(hx * -dy - hy * -dx, hx * -dx + hy * -dy)
                if abs(dx) + abs(dy) > 1 and abs(angle) > 0.6 * half_fov:
                    continue
                between = {
                    (int(round(dx * (1 - t))), int(round(dy * (1 - t)))) for t in np.linspace(0.0, 1.0, 8)[1:-1]
                } - {(0, 0), (dx, dy)}
                out.append(((dx, dy), tuple(sorted(between))))
        return tuple(out)

    @staticmethod
    @functools.cache
    def _view_offset_arrays(reach: float, half_fov: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_view_offsets` as arrays, for one array operation per judged cell: the offsets
        (K, 2), the offsets between (K, M, 2, padded with zeros) and which of those are real (K, M)."""
        views = FrontierExplorer._view_offsets(reach, half_fov)
        width = max([1] + [len(between) for _, between in views])
        offsets = np.zeros((len(views), 2), dtype=np.int64)
        between = np.zeros((len(views), width, 2), dtype=np.int64)
        used = np.zeros((len(views), width), dtype=bool)
        for i, (offset, cells) in enumerate(views):
            offsets[i] = offset
            between[i, : len(cells)] = np.array(cells, dtype=np.int64).reshape(-1, 2)
            used[i, : len(cells)] = True
        return offsets, between, used

    def frontier_action(self) -> int | None:
        """Next action toward the nearest frontier (Navigator skill).

        When every reachable cell has been looked at, the search starts over (camera coverage is
        forgotten). If frontiers are known but cannot be reached, the map may be wrong (an echo off a
        cell corner can wall the robot in): head for the nearest unknown cell through anything it
        has not actually bumped into. Returns ``None`` only when nothing unknown is left (and, with
        ``restart_when_stuck``, nothing unseen can be reached even after the search starts over).
        """
        assert self.grid is not None
        if self.path and self.goal_kind in ("frontier", "unknown"):
            gx, gy = self.path[-1]
            still_goal = (
                not (self.grid.seen[gy, gx] or self.grid.occupied[gy, gx])  # an unseen goal still
                if self.goal_kind == "frontier"
                else not (self.grid.free[gy, gx] or self.grid.occupied[gy, gx])
            )
            nxt = self.path[0]
            if (
                still_goal
                and not self.grid.occupied[nxt[1], nxt[0]]
                and abs(nxt[0] - self.pose[0]) + abs(nxt[1] - self.pose[1]) == 1
            ):
                return self._step_on_path()
        frontiers = self.grid.unseen_goals()
        frontiers[self.pose[1], self.pose[0]] = False
        if frontiers.any():
            action = self._follow(frontiers, "frontier")
            if action is not None:
                return action
        unknown = ~(self.grid.free | self.grid.occupied)
        if self.grid.seen.any() and not (frontiers & ~unknown).any():
            far_only = self.grid.seen & ~self.grid.close
            if self.close_range is not None and not self._close_pass and far_only.any():
                # Looked at only from beyond where this kind is recognised (deep water, small
                # targets): look at those again, from close enough, before anything else.
                self._close_pass = True
                self.grid.seen[far_only] = False
                return self.frontier_action()
            # Every place the robot knows how to reach has been looked at and the target was missed
            # (a small object at the edge of the fog is easy to miss): forget what was searched
            # (not the occupancy) and look again.
            self.grid.seen[:] = False
            return self.frontier_action()
        if unknown.any():
            action = self._follow(unknown, "unknown", passable=self.grid.evidence < 100)
            if action is not None:
                return action
        if self.config.restart_when_stuck and self.grid.seen.any():
            # Nothing left to look at can be reached on this map (under noisy sonar, phantom echoes
            # and drifted cells can fence off the cells not yet looked at): start the search over
            # rather than stop where the robot is.
            self.grid.seen[:] = False
            return self.frontier_action()
        return None

    def goto_cell_action(self, goals: np.ndarray, kind: str) -> int | None:
        """Next action toward the nearest of ``goals`` (a bool mask), re-planning as the map grows."""
        return self._follow(goals, kind)

    def goto_node_action(self, node: int) -> int | None:  # Navigator skill; needs a map with nodes
        return None

    def map_summary(self) -> str:
        assert self.grid is not None
        known = int((self.grid.free | self.grid.occupied).sum())
        return (
            f"explored {known} of {self.grid.size**2} cells; {int(self.grid.frontiers().sum())} frontier cells; "
            f"you are at cell ({self.pose[0]}, {self.pose[1]}) facing {['east', 'south', 'west', 'north'][self.pose[2]]}"
        )

    # ---------------------------------------------------------------- path following

    def _follow(self, goals: np.ndarray, kind: str, passable: np.ndarray | None = None) -> int | None:
        assert self.grid is not None
        x, y, _ = self.pose
        valid = bool(self.path) and self.goal_kind == kind and goals[self.path[-1][1], self.path[-1][0]]
        if valid:
            nxt = self.path[0]
            valid = not self.grid.occupied[nxt[1], nxt[0]] and abs(nxt[0] - x) + abs(nxt[1] - y) == 1
        if not valid:
            path = plan_path(self.grid.passable() if passable is None else passable, (x, y), goals)
            if not path:
                self.path = []
                return None
            self.path = path
            self.goal_kind = kind
        self.trace.mode = kind
        self.trace.goal_cell = self.path[-1]
        return self._step_on_path()

    def _step_on_path(self) -> int:
        """Explore facing forward (the camera and sonar look where the robot goes); travel to a
        chosen target without turning (strafe or back up), since turns cost steps."""
        nxt = self.path[0]
        if self.goal_kind == "approach" and not self.config.face_travel:
            self.path.pop(0)
            return move_toward(self.pose, nxt)
        action = step_toward(self.pose, nxt)
        if action == Action.FORWARD:
            self.path.pop(0)
        return action
