"""The agents' settings, one dataclass per agent, in a module that imports nothing heavy.

The Hydra ``agent`` group (:class:`embodmem.config.AgentConfig`) extends :class:`MemoryAgentConfig`, so
every field below is settable from the command line (``agent.look_range_cells=3``) and documented
here only; the explorer baseline takes the :class:`ExplorerConfig` fields of the same group.

Example:
    >>> MemoryAgentConfig(memory_k=8).memory_k, ExplorerConfig().detect_probability
    (8, 0.5)
    >>> ExplorerConfig(detect_probability=1.5)
    Traceback (most recent call last):
    ...
    ValueError: ExplorerConfig.detect_probability: 1.5 is not allowed; allowed: a number in [0, 1]
"""

from __future__ import annotations

from dataclasses import dataclass

from embodmem.checks import Range, check_ranges, check_types


@dataclass
class ExplorerConfig:
    """Thresholds of the explorer (calibrated on calibration worlds, see tools/calibrate.py)."""

    detect_probability: float = 0.5
    """P(target) of a frame above which the explorer goes to look closer."""
    confirm_probability: float = 0.5
    """P(target) when facing the candidate from next to it, above which it stops."""
    max_candidate_range_m: float = 40.0
    """Ignore sonar echoes farther than this when guessing the target's cell."""
    look_range_cells: float = 4.0
    """A cell counts as searched once the camera has looked at it from this close."""
    clear_sight_share: float = 0.5
    """Fog hides small targets beyond about this share of the visibility (25 m in deep water: 2.5
    cells), so cells looked at from farther do not count as searched for later missions, and a
    recalled place is not judged by a look from farther."""
    stop_range_cells: float = 2.0
    """Judge a candidate from up to this many cells away, facing it straight ahead, and stop there
    if the target is confirmed (1: only from next to it). At most the task's success radius in cells
    (``env.success_distance_m / env.cell_size_m``)."""
    centre_probability: float = 0.9
    """From farther than next to it, P(target) of the middle of the view (the centre half of the
    columns) above which the target is confirmed at the candidate; below it, the robot looks from
    next to it."""
    face_travel: bool = True
    """Travel to a chosen target facing the way the robot goes (the camera looks ahead, so a nearer
    instance on the way is seen), instead of strafing or backing up without turning."""
    reuse_below: float = 0.0
    """Reuse the last frame's embedding when the new frame differs from it by less than this
    (mean absolute difference of 16x16 thumbnails, 0-255): open water seen while swimming
    straight changes only by drifting particles. 0 embeds every frame."""
    relocalise: bool = True
    """Correct the dead-reckoned pose by matching each sonar scan against the occupancy grid (the
    cell and its eight neighbours), so pose errors do not compound over a visit (env=noisy, drift).
    Only where the sensor datasheet gives the odometry a drift or noise (``SensorSpec.exact_pose``
    false): an exact pose has nothing to correct, and the match was about a tenth of a step's time."""
    relocalise_margin: float = 3.0
    """Beams by which a neighbouring cell must fit the scan better than the dead-reckoned one to be
    taken as the robot's position, and by which the dead-reckoned cell must beat every neighbour to
    count as a fix."""
    relocalise_min_hits: float = 6.0
    """Echoes on known obstacles a scan needs to fix the position at all (open water fixes nothing)."""
    relocalise_agree: int = 5
    """Informative scans in a row that must favour the same neighbouring cell before the estimate
    moves there (one noisy scan never moves it; a real drift persists)."""
    clean_background_stop: bool = True
    """Judge a candidate only from viewing cells whose view beyond it (the middle of the view, up to
    the visibility) holds no other obstacle the map knows, when such a cell exists: a target seen
    above or behind a low object in front is then not taken for that object (an occluder taken
    for the target on dev worlds 1224 and 1370)."""
    centre_at_scale_for_instances: bool = True
    """For a mission naming one instance (a description or image goal), the middle of the view
    judged from next to a candidate (``confirm_centre_adjacent``; ``clean_background_stop`` in
    clutter) is the middle half of the columns at its own scale, the outermost columns repeated out
    to the edges (:func:`~embodmem.agents.recognizer.centre_at_scale`), not stretched to the frame's
    width: a low pipeline seen side-on from next to it is a band at the bottom of the frame, and
    stretched it no longer looks like one (dev worlds 1000-1007, goat_shallow8: the fully observed
    control stopped at "the white oil pipeline" in 17 of 24 goals with the stretched middle, where
    the whole frame scored 0.99 and the middle 0.001; at scale the middle scores 0.99). Category
    missions keep the stretched middle: their figures are unchanged (whether they would gain too is
    not measured)."""
    coverage_by_kind: bool = True
    """Carry camera coverage between missions per target kind: a cell counts as searched for a kind
    only if it was looked at from within that kind's detection range in the light of the time
    (:data:`~embodmem.agents.recognizer.DETECTION_RANGE_CELLS`), not within one range for every
    kind (coverage without detection: dev world 1347, and under ``env=noisy`` dev worlds
    1456, 1488 and 1504, where oil drums looked at from four cells in task 1 were never searched
    for again)."""
    confirm_centre_adjacent: bool = True
    """From next to a candidate too, the middle of the view (the centre half of the columns) must
    show the target before the robot stops, not just the whole frame: a target at the edge of the
    view, beyond a low object straight ahead, is then not taken for that object (an
    occluder taken for the target on dev world 1234: a stop facing a cable with the wind station five
    cells off to the side). One more embedding per stop decision."""
    fog_limited_look: bool = False
    """Within a mission, a cell counts as looked at only from within the distance at which a small
    target still shows in this light (``clear_sight_share`` of the visibility, as for carried
    coverage), not from ``look_range_cells`` whatever the light: in deep water the fog hides oil
    drums beyond about 2.5 cells, so a look from four cells found nothing and still ruled the place
    out (targets not seen in deep water: dev worlds 1426, 1448, 1522 and 1574 under ``env=noisy``,
    warm timeouts with the drums never in view; all four succeed with it). Clear water is unchanged
    (4 cells either way). Off by default: on 100 dev worlds (1400-1598 even) it made the deep search
    too slow for its 400 steps, deep_pair's later-task success falling from 1.00 to 0.91 warm and
    from 0.95 to 0.76 cold."""
    face_objects_in_fog: bool = True
    """In fog (deep water: ``clear_sight_share`` of the visibility is under ``look_range_cells``),
    a ray of the view that ends at an object the map knows, farther off than the range at which the
    mission's kind is recognised in this light, does not count the water within that range in front
    of the object as looked at, until the object has been faced from that close this mission: the
    search then leads the robot up to objects it sees head-on. Open water elsewhere is looked at
    from ``look_range_cells`` as before (unlike ``fog_limited_look``), and the survey area's edge is
    no object. Targets not seen in deep water: oil drums faced from three cells or more score
    about 0.0001 in deep water, so a look from there ruled them out (dev worlds 1416 and 1425). On
    dev worlds 1400-1599, deep_pair: warm failed where cold succeeded in 2 worlds instead of 3
    (clean; 1444 is new) and 5 instead of 6 (``env=noisy``), warm SPL 0.506 instead of 0.481
    and cold 0.309 instead of 0.295 (clean). Making every object looked at from afar a goal instead
    (its surroundings, then facing it) was tried and was worse: 4 worlds, warm SPL 0.455."""
    face_objects_across_view: bool = True
    """With ``face_objects_in_fog``: water that one ray of a view leaves to be looked at (it lies in
    front of an object not yet faced closely) is not marked looked at by any other ray of that view.
    Rays beside the object's pass through the same cells: dev world 1444, deep_pair task 2, with the
    drums three cells straight ahead, the next ray passed just under them and marked the water in
    front of them. On dev worlds 1400-1599, deep_pair, warm failed where cold succeeded in 0 worlds
    instead of 2 (clean), 5 instead of 5 (``env=noisy``; other worlds) and 12 instead of 11
    (``env=drift``, 2%), at some cost in SPL: warm 0.502 instead of 0.506 clean, 0.510 instead of
    0.519 noisy and 0.416 instead of 0.440 under drift."""
    look_beside_objects_in_fog: bool = True
    """With ``face_objects_in_fog``, when the odometry drifts (``SensorSpec.odometry_drift_pct`` > 0)
    and the mission began with camera coverage carried from earlier missions for its kind
    (``coverage_by_kind``): water next to an object not yet faced from within the kind's detection
    range counts as looked at only from within that range, not from ``look_range_cells``. In deep
    water oil drums show only from about three cells, so a look from four at the water beside them
    missed them, and under drift the carried record of where the robot looked is displaced too
    (targets not seen in deep water: dev 1096 under ``env=noisy``, warm never went near the drums
    that cold found in 37 steps). Dev deep_pair, later tasks, ``env=noisy``: warm failed where cold
    succeeded in 6 of 400 worlds instead of 11 (1000-1399) and 7 instead of 10 (1400-1799), warm
    success 0.968 -> 0.985 and 0.973 -> 0.983, warm SPL 0.496 -> 0.492 and 0.510 -> 0.506; under
    ``env=drift`` (2%, 1000-1399) 18 instead of 16, success 0.938 -> 0.928. Off for exact odometry:
    under clean sensing it lost more worlds than it saved (3 -> 5 and 1 -> 6 on the same ranges),
    so clean runs are unchanged; and off without carried coverage (cold, the explorer): looking this
    closely everywhere made a whole search too slow for 400 steps (cold success 0.963 -> 0.940)."""
    face_passing_objects_in_fog: bool = True
    """In fog, with an exact pose (``SensorSpec.exact_pose``): a small object on the map (at most
    ``small_object_cells`` joined occupied cells) within ``passing_object_cells`` of the robot, none
    of whose cells a ray of the view has ended at from within the mission's kind's detection range
    this mission, becomes a candidate: the robot judges it from a viewing cell, facing it, as after
    a detection, and rules the whole object out if it is not the target. Targets not seen in deep
    water: in all 15 warm timeouts of deep_pair on dev worlds 1000-1999 the robot passed the oil
    drums 2-3 cells off, beside its path, and never faced them (they show only from about two
    cells in deep water). Dev 1000-1999, deep_pair task 2, clean: warm failed 15 -> 5 times, cold
    52 -> 29, warm failed where cold succeeded 8 -> 3 worlds, not-seen SPL warm 0.30 -> 0.31 and
    cold 0.25 -> 0.28 (tried on the way: 3 cells, 4 cells). Off when the pose drifts or is noisy:
    under ``env=noisy`` a first version (4 cells) made warm fail 49 times instead of 17, the map's
    small phantom objects (one object's echoes smeared by the pose error) each costing a detour."""
    passing_object_cells: float = 5.0
    """Cells from the robot within which an unfaced small object is turned to (``face_passing_objects_in_fog``)."""
    small_object_cells: int = 4
    """Joined occupied cells up to which a map object counts as small: a target, not a rock wall
    (the targets recognised only from close by are one to five cells)."""
    restart_when_stuck: bool = True
    """When no cell left to look at can be reached on the map and no unknown cell either, start the
    search over (forget what was looked at) instead of stopping where the robot is (under
    ``env=noisy``: dev worlds 1448 and 1452, a warm robot stopped 70-100 m from the target after
    340-389 steps, its map fencing off the last unseen cells; with the restart both search on,
    1452 then succeeds with ``coverage_by_kind`` and 1448 runs out of steps)."""
    seen_within_detection_range: bool = False
    """Within a mission, when every reachable place has been looked at and the target was not
    found, look again first at what was looked at only from beyond the mission's kind's detection
    range in this light (the recogniser misses it there), from within that range, before the search
    starts over (targets not seen in deep water: drums faced from 3-4 cells at a score of 0.01
    and never revisited). Off by default: on dev worlds 1400-1599 it fixed none of the deep-water
    timeouts that ``fog_limited_look`` fixes, and it costs steps."""

    def __post_init__(self) -> None:
        check_types(self)
        check_ranges(type(self).__name__, vars(self), LIMITS)


@dataclass
class MemoryAgentConfig(ExplorerConfig):
    """Explorer thresholds plus when to trust memory."""

    memory_probability: float = 0.7
    """P(target) of a remembered frame above which the agent goes there instead of exploring."""
    memory_k: int = 48
    """Frames retrieved per query."""
    requery_every: int = 20
    """Steps between memory queries while exploring."""
    recheck_probability: float = 0.3
    """Remembered frames that show the target only weakly (P(target) between this and
    ``memory_probability``) are not trusted enough to travel for, but what they looked at counts
    as unsearched again, so exploration looks there with the current mission in mind."""
    min_viewpoints: int = 2
    """Distinct viewpoints at which a remembered place counts as fully confirmed; places seen from
    fewer rank proportionally lower."""
    support_scale: float = 1.0
    """Vote mass (about one confident frame per unit) at which a place's confidence reaches 63%
    (1 - e^-1): confidence saturates, so among well-supported places the nearest wins."""
    place_radius: int = 2
    """Cells within which votes count for one place."""
    extent_radius: int = 4
    """Occupied cells joined to a recalled place on the map, up to this many cells from it, may be
    parts of the same target (a pipeline is up to 5 cells long): the robot judges the nearest
    part first. 0: only the place's own cell."""
    confirm_range_cells: float = 4.0
    """A recalled place this close, in view and unoccluded, must show the target, or it is rejected."""
    max_recall_rejections: int = 2
    """Recalled places rejected in one task after which the robot only explores (bounds the cost of
    false memories)."""
    visit_weak_sightings: bool = True
    """With no confident sighting, go and look where weak ones (``recheck_probability`` and up)
    point: a glimpse of the target in an earlier task is cheaper to check than a search."""
    recall: bool = True
    """Query memory for the target (False: the ``memory_no_recall`` ablation stores frames only)."""
    carry_map: bool = True
    """Keep the occupancy grid and camera coverage between tasks (False: ``memory_no_map``)."""
    check_same_view: bool = True
    """Distrust a remembered sighting when another remembered frame taken from exactly the same pose
    and heading does not show the target (P(target) below ``recheck_probability``)."""
    contradict_by_map: bool = True
    """Distrust what a remembered sighting points at where the carried map says the robot looked
    from within that kind's detection range (``coverage_by_kind``) and no frame then recognised the
    kind (P below ``recheck_probability``) within a cell of it: what memory says the robot saw
    must agree with what it recorded seeing."""
    recall_within_found_range: bool = True
    """A remembered sighting votes only for cells within the farthest range at which the
    recogniser ever finds the mission's kind in this light (``FOUND_UP_TO_CELLS``, plus a cell):
    oil drums recognised in a frame were no more than four cells away, not eight."""
    recall_where_recognised: bool = True
    """With exact odometry and a carried map, a remembered sighting votes only for cells within a
    cell of a view in which the robot's own recogniser found the mission's kind when it passed
    (the map's record, ``recognised_by_kind``): memory and the map are two records of one trip and
    must agree. A frame written into memory but never seen (an implanted one) has no such view."""
    own_trail_only: bool = True
    """Trust only remembered frames taken where the robot's own trail (the cells it has stood on,
    kept beside the map) passed: a frame claiming a pose the robot never reached is not its own
    memory (an implanted or corrupted one) and is ignored."""


LIMITS: dict[str, Range] = {
    "detect_probability": Range(0, 1),
    "confirm_probability": Range(0, 1),
    "max_candidate_range_m": Range(0, low_open=True),
    "look_range_cells": Range(0, low_open=True),
    "clear_sight_share": Range(0, 1, low_open=True),
    "stop_range_cells": Range(1),
    "centre_probability": Range(0, 1),
    "reuse_below": Range(0, 255),
    "relocalise_margin": Range(0, low_open=True),
    "relocalise_min_hits": Range(0),
    "relocalise_agree": Range(1, integer=True),
    "passing_object_cells": Range(0),
    "small_object_cells": Range(1, integer=True),
    "memory_probability": Range(0, 1),
    "memory_k": Range(1, integer=True),
    "requery_every": Range(1, integer=True),
    "recheck_probability": Range(0, 1),
    "min_viewpoints": Range(1, integer=True),
    "support_scale": Range(0, low_open=True),
    "place_radius": Range(0, integer=True),
    "extent_radius": Range(0, integer=True),
    "confirm_range_cells": Range(0),
    "max_recall_rejections": Range(0, integer=True),
}
"""Allowed values of the numeric fields of both configs (fields a config lacks are not checked)."""
