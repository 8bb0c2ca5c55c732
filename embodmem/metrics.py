"""Per-episode measures: success, SPL, SoftSPL, the reference distance score and counters.

The definitions are written once as pure functions so that tests, the runner and any analysis
notebook agree on the arithmetic; docs/metrics.md gives every formula with its source. The small
classes with ``reset / update / get`` follow Habitat-lab's measures reading the simulator: the runner
feeds them the environment's ground truth after each reset and step (a :class:`TruthReading`, e.g.
:class:`embodmem.envs.ground_truth.GroundTruth`) and never has to know how a number is computed.

The ground truth carries, at every step:

- ``agent_pos``: the robot's true cell (x, y);
- ``distance_m``: Euclidean distance to the nearest target instance;
- ``geodesic_m``: shortest-path distance to the nearest cell from which stopping would succeed
  (``inf`` when none is reachable);
- ``instance_distances_m``: one Euclidean distance per target instance, in the world's instance
  order (2-D, from the robot's cell to the instance's nearest cell);
- ``path_length_m``: metres travelled so far; ``collisions``: bumps so far (both cumulative);
- ``success``: whether the episode succeeded (meaningful at termination);
- ``target_in_view``: whether a target instance is visible in the current observation.

Example:
    >>> from types import SimpleNamespace as Truth
    >>> m = EpisodeMeasures()
    >>> m.reset(Truth(step=0, agent_pos=(0, 0), distance_m=12.0, geodesic_m=10.0, instance_distances_m=[12.0],
    ...               path_length_m=0.0, collisions=0, target_in_view=False, success=False, wrong_instance=False))
    >>> m.update(0, Truth(step=1, agent_pos=(2, 0), distance_m=1.0, geodesic_m=0.0, instance_distances_m=[1.0],
    ...                   path_length_m=20.0, collisions=1, target_in_view=True, success=True, wrong_instance=False))
    >>> r = m.get()
    >>> r.success, r.spl, r.distance_score, r.steps, r.collisions
    (1, 0.5, 100.0, 1, 1)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass as strict_dataclass

#: Weights over target instances sorted by distance (nearest first), from the reference benchmark
#: (OceanGym, ``decision/utils/evaluate.py``). With more than three instances the reference weights
#: the nearest three 0.6/0.2/0.2 and ignores the rest (:func:`instance_weights`).
INSTANCE_WEIGHTS: dict[int, tuple[float, ...]] = {
    1: (1.0,),
    2: (0.6, 0.4),
    3: (0.6, 0.2, 0.2),
}

#: The reference benchmark's thresholds: full score within 30 m, nothing from 100 m on.
FULL_SCORE_M = 30.0
ZERO_SCORE_M = 100.0


# --------------------------------------------------------------------------------------------------
# Pure functions
# --------------------------------------------------------------------------------------------------


def is_success(stopped: bool, distance_m: float, success_distance_m: float) -> bool:
    """The success rule: the agent stopped within ``success_distance_m`` of a target instance.

    The environment applies this rule itself and reports ``info["success"]``; the function is kept
    so the rule is written down once and can be checked.

    The threshold is inclusive (``distance <= threshold``), as in the environment. Habitat-lab's
    ``Success`` is strict (``distance < threshold``). The difference matters here: distances on the
    grid are multiples of whole cells, so a robot two 5 m cells from a target with a 10 m threshold
    succeeds here and would fail under Habitat's rule. Habitat's strict rule is this one with the
    threshold lowered by any amount smaller than the grid's smallest distance step.

    Example:
        >>> is_success(True, 1.0, 1.5), is_success(False, 0.0, 1.5), is_success(True, 2.0, 1.5)
        (True, False, False)
    """
    return bool(stopped) and float(distance_m) <= float(success_distance_m)


def _efficiency(shortest_path_m: float, path_length_m: float) -> float:
    """``l / max(l, p)``: how close the path taken was to the shortest one (1 when optimal).

    ``l == p == 0`` (started on the goal, never moved) counts as optimal; an unreachable goal
    (``l`` infinite or NaN) gives 0 because there is no shortest path to compare with.
    """
    shortest, taken = float(shortest_path_m), float(path_length_m)
    if shortest < 0 or taken < 0:
        raise ValueError(f"distances must be non-negative, got shortest_path={shortest}, path_length={taken}")
    if not math.isfinite(shortest):
        return 0.0
    if shortest == 0.0 and taken == 0.0:
        return 1.0
    return shortest / max(shortest, taken)


def spl(success: bool, shortest_path_m: float, path_length_m: float) -> float:
    """Success weighted by Path Length: ``S * l / max(l, p)`` (Anderson et al., 2018).

    Args:
        success: whether the episode succeeded (S).
        shortest_path_m: geodesic distance from the start to the nearest reachable target (l).
        path_length_m: length of the path the agent took (p).

    Example:
        >>> spl(True, 10.0, 20.0)   # 1 * 10 / max(10, 20)
        0.5
        >>> spl(True, 0.0, 0.0), spl(False, 10.0, 10.0), spl(True, 10.0, 5.0)
        (1.0, 0.0, 1.0)
    """
    if not success:
        return 0.0
    return _efficiency(shortest_path_m, path_length_m)


def soft_success(d_start_m: float, d_final_m: float) -> float:
    """``max(0, 1 - d_final / d_start)``: the fraction of the way to the goal that was covered.

    ``d_start == 0`` gives 1 when ``d_final == 0`` and 0 otherwise (the agent started on the goal
    and either stayed or left it); a non-finite distance (unreachable goal) gives 0.

    Example:
        >>> soft_success(10.0, 2.5), soft_success(10.0, 30.0), soft_success(0.0, 0.0)
        (0.75, 0.0, 1.0)
    """
    d0, d1 = float(d_start_m), float(d_final_m)
    if not (math.isfinite(d0) and math.isfinite(d1)):
        return 0.0
    if d0 < 0 or d1 < 0:
        raise ValueError(f"distances must be non-negative, got d_start={d0}, d_final={d1}")
    if d0 == 0.0:
        return 1.0 if d1 == 0.0 else 0.0
    return max(0.0, 1.0 - d1 / d0)


def soft_spl(d_start_m: float, d_final_m: float, shortest_path_m: float, path_length_m: float) -> float:
    """SoftSPL: SPL with success replaced by :func:`soft_success`, so failures still earn credit.

    Example:
        >>> soft_spl(10.0, 2.5, 10.0, 20.0)   # (1 - 2.5/10) * 10 / max(10, 20) = 0.75 * 0.5
        0.375
    """
    return soft_success(d_start_m, d_final_m) * _efficiency(shortest_path_m, path_length_m)


def instance_score(distance_m: float, full_score_m: float = FULL_SCORE_M, zero_score_m: float = ZERO_SCORE_M) -> float:
    """Score for one instance: 100 within ``full_score_m``, linear down to 0 at ``zero_score_m``.

    Example:
        >>> instance_score(30.0), instance_score(65.0), instance_score(100.0), instance_score(5.0)
        (100.0, 50.0, 0.0, 100.0)
    """
    d = float(distance_m)
    if math.isnan(d) or d < 0:
        raise ValueError(f"instance distance must be a non-negative number, got {distance_m!r}")
    if not full_score_m < zero_score_m:
        raise ValueError(f"need full_score_m < zero_score_m, got {full_score_m} and {zero_score_m}")
    if d <= full_score_m:
        return 100.0
    if d >= zero_score_m:
        return 0.0
    return 100.0 * (zero_score_m - d) / (zero_score_m - full_score_m)


def instance_weights(n_instances: int) -> tuple[float, ...]:
    """Weights of the nearest ``n`` instances: 1.0; 0.6/0.4; 0.6/0.2/0.2 for three or more.

    Example:
        >>> instance_weights(1), instance_weights(2), instance_weights(5)
        ((1.0,), (0.6, 0.4), (0.6, 0.2, 0.2))
    """
    if n_instances <= 0:
        return ()
    return INSTANCE_WEIGHTS[min(n_instances, 3)]


def position_score(
    instance_distances_m: Sequence[float],
    full_score_m: float = FULL_SCORE_M,
    zero_score_m: float = ZERO_SCORE_M,
) -> float:
    """Score of one position: instance scores weighted by distance rank (the reference's
    ``calculate_weighted_score_for_multiple_targets``).

    Instances are sorted nearest first and weighted by :func:`instance_weights`; with more than
    three instances only the nearest three count. No distance at all scores 0, as in the reference.

    Args:
        instance_distances_m: distance from the position to each target instance, in any order.
        full_score_m: distance at or under which an instance scores 100.
        zero_score_m: distance at or over which an instance scores 0.

    Raises:
        ValueError: for a negative or NaN distance.

    Example:
        >>> position_score([65.0])                # 1.0 * 50
        50.0
        >>> position_score([80.0, 10.0])          # 0.6 * 100 + 0.4 * (100 * 20/70)
        71.42857142857143
        >>> round(position_score([200.0, 10.0, 70.0, 40.0]), 2)   # nearest three: 60 + 17.14 + 8.57
        85.71
        >>> position_score([])
        0.0
    """
    distances = sorted(float(d) for d in instance_distances_m)
    weights = instance_weights(len(distances))
    return float(sum(w * instance_score(d, full_score_m, zero_score_m) for w, d in zip(weights, distances)))


def best_reported_distances(reported_distances_m: Sequence[Sequence[float]]) -> list[float] | None:
    """Of the positions where the agent reported the target, the one nearest the first instance.

    The reference picks, among the positions logged with a report, the one closest to the first
    target point (first in the world's instance order), and scores that position against every
    instance. Ties go to the earliest report. None when there was no report.

    Args:
        reported_distances_m: for each report, the distance to each instance (instance order).

    Example:
        >>> best_reported_distances([[50.0, 5.0], [20.0, 90.0], [20.0, 10.0]])
        [20.0, 90.0]
        >>> best_reported_distances([]) is None
        True
    """
    best: list[float] | None = None
    for distances in reported_distances_m:
        distances = [float(d) for d in distances]
        if distances and (best is None or distances[0] < best[0]):
            best = distances
    return best


def distance_score(
    final_distances_m: Sequence[float],
    reported_distances_m: Sequence[Sequence[float]] = (),
    full_score_m: float = FULL_SCORE_M,
    zero_score_m: float = ZERO_SCORE_M,
) -> float:
    """The reference benchmark's distance score: the better of the final and best reported position.

    The reference (OceanGym, ``decision/utils/evaluate.py``) scores two positions with
    :func:`position_score` and keeps the higher score: the last logged position, and, among the
    positions where the agent reported the target, the one nearest the first instance
    (:func:`best_reported_distances`). A robot that passed a target, reported it and then swam away
    keeps the credit of the report. No distance at all scores 0.

    The reference measures 3-D distance to one point per target; this world is 2-D, so distances
    run from the robot's cell to the nearest cell of each instance.

    Args:
        final_distances_m: distance from the final position to each instance (instance order).
        reported_distances_m: for each report step, the distance from the robot's true position to
            each instance (instance order).
        full_score_m: distance at or under which an instance scores 100.
        zero_score_m: distance at or over which an instance scores 0.

    Example:
        >>> distance_score([120.0])                       # final position only: 0
        0.0
        >>> distance_score([120.0], [[60.0], [5.0]])      # reported within 5 m, then left: 100
        100.0
    """
    final = position_score(final_distances_m, full_score_m, zero_score_m)
    reported = best_reported_distances(reported_distances_m)
    if reported is None:
        return final
    return max(final, position_score(reported, full_score_m, zero_score_m))


# --------------------------------------------------------------------------------------------------
# Measures: reset(first_info) / update(action, info) / get()
# --------------------------------------------------------------------------------------------------


class TruthReading(Protocol):
    """What the measures read of the simulator after a reset or a step (the env's ground truth,
    :class:`embodmem.envs.ground_truth.GroundTruth`; see the module docstring for each field)."""

    @property
    def step(self) -> int: ...
    @property
    def agent_pos(self) -> tuple[int, int]: ...
    @property
    def distance_m(self) -> float: ...
    @property
    def geodesic_m(self) -> float: ...
    @property
    def instance_distances_m(self) -> Sequence[float]: ...
    @property
    def path_length_m(self) -> float: ...
    @property
    def collisions(self) -> int: ...
    @property
    def target_in_view(self) -> bool: ...
    @property
    def success(self) -> bool | None:
        """None: an env that does not judge success (the stop rule then applies)."""
        ...

    @property
    def wrong_instance(self) -> bool: ...


class Success:
    """Whether the episode succeeded, as the environment judged it at termination.

    If the environment does not judge it (``success`` is None), and ``success_distance_m`` and
    ``stop_action`` are given, the rule :func:`is_success` is applied to the last action instead.
    """

    def __init__(self, success_distance_m: float | None = None, stop_action: Any = None) -> None:
        self.success_distance_m = success_distance_m
        self.stop_action = stop_action
        self._truth: TruthReading | None = None
        self._action: Any = None

    def reset(self, first: TruthReading) -> None:
        self._truth, self._action = first, None

    def update(self, action: Any, truth: TruthReading) -> None:
        self._truth, self._action = truth, action

    def get(self) -> bool:
        if self._truth is None:
            return False
        if self._truth.success is not None:
            return bool(self._truth.success)
        if self.success_distance_m is None or self.stop_action is None or self._action is None:
            return False
        stopped = self._action == self.stop_action
        return is_success(stopped, self._truth.distance_m, self.success_distance_m)


class PathLength:
    """Metres travelled in this episode (the env's cumulative ``path_length_m``, minus its start)."""

    def __init__(self) -> None:
        self._start = 0.0
        self._last = 0.0

    def reset(self, first: TruthReading) -> None:
        self._start = self._last = float(first.path_length_m)

    def update(self, action: Any, truth: TruthReading) -> None:
        self._last = float(truth.path_length_m)

    def get(self) -> float:
        return self._last - self._start


class Collisions:
    """Collisions in this episode (the env's cumulative ``collisions``, minus its start)."""

    def __init__(self) -> None:
        self._start = 0
        self._last = 0

    def reset(self, first: TruthReading) -> None:
        self._start = self._last = int(first.collisions)

    def update(self, action: Any, truth: TruthReading) -> None:
        self._last = int(truth.collisions)

    def get(self) -> int:
        return self._last - self._start


class Steps:
    """Number of actions taken."""

    def __init__(self) -> None:
        self._n = 0

    def reset(self, first: TruthReading) -> None:
        self._n = 0

    def update(self, action: Any, truth: TruthReading) -> None:
        self._n += 1

    def get(self) -> int:
        return self._n


class GeodesicDistance:
    """Geodesic distance to the goal region at the start (``l``) and at the end (``d_final``)."""

    def __init__(self) -> None:
        self.start = math.nan
        self.final = math.nan

    def reset(self, first: TruthReading) -> None:
        self.start = self.final = float(first.geodesic_m)

    def update(self, action: Any, truth: TruthReading) -> None:
        self.final = float(truth.geodesic_m)

    def get(self) -> tuple[float, float]:
        return self.start, self.final


class TargetSeen:
    """Whether any target instance was ever in view, the first observation included."""

    def __init__(self) -> None:
        self._seen = False

    def reset(self, first: TruthReading) -> None:
        self._seen = bool(first.target_in_view)

    def update(self, action: Any, truth: TruthReading) -> None:
        self._seen = self._seen or bool(truth.target_in_view)

    def get(self) -> bool:
        return self._seen


class WrongInstance:
    """Whether the robot stopped at another instance of the goal's kind (instance goals: a
    description or image names one instance; stopping within range of a sibling is a failure of
    its own kind, ``wrong_instance``). Always False for category goals."""

    def __init__(self) -> None:
        self._wrong = False

    def reset(self, first: TruthReading) -> None:
        self._wrong = False

    def update(self, action: Any, truth: TruthReading) -> None:
        self._wrong = bool(truth.wrong_instance)

    def get(self) -> bool:
        return self._wrong


class FinalDistances:
    """The last Euclidean distances: to the nearest instance and to each instance."""

    def __init__(self) -> None:
        self.nearest = math.nan
        self.instances: list[float] = []

    def reset(self, first: TruthReading) -> None:
        self.update(None, first)

    def update(self, action: Any, truth: TruthReading) -> None:
        self.nearest = float(truth.distance_m)
        self.instances = [float(d) for d in truth.instance_distances_m]

    def get(self) -> tuple[float, list[float]]:
        return self.nearest, self.instances


@strict_dataclass(frozen=True, config=ConfigDict(strict=True, extra="forbid", allow_inf_nan=False))
class Report:
    """One report of the target: the step whose frame the agent judged, where it was taken, and the
    distances to every instance from there (the reference distance score uses the best report).
    The episode log holds these as they are (:mod:`embodmem.episode_log`)."""

    step: Annotated[int, Field(ge=0)]
    position: tuple[Annotated[int, Field(ge=0)], Annotated[int, Field(ge=0)]] | None
    instance_distances_m: list[Annotated[float, Field(ge=0)]]


class Reports:
    """The agent's reports of the target: its true position and instance distances at each one.

    A report is a step at which the agent's recogniser put the current frame above its detect
    threshold (``AgentTrace.reported``). The runner passes the ground truth of the observation the
    agent judged, so the position is where the frame was taken, not where the next action led.
    """

    def __init__(self) -> None:
        self.steps: list[Report] = []

    def reset(self, first: TruthReading) -> None:
        self.steps = []

    def update(self, action: Any, truth: TruthReading) -> None:
        """Steps carry no report by themselves; :meth:`add` records one."""

    def add(self, truth: TruthReading) -> None:
        x, y = truth.agent_pos
        self.steps.append(Report(int(truth.step), (int(x), int(y)), [float(d) for d in truth.instance_distances_m]))

    def distances(self) -> list[list[float]]:
        return [r.instance_distances_m for r in self.steps]


@dataclass(frozen=True)
class Measures:
    """One episode's measures, with the names used in ``metrics.jsonl`` (the first fields of
    :class:`embodmem.metrics_record.EpisodeRecord`, which documents each)."""

    success: int
    spl: float
    soft_spl: float
    distance_score: float
    distance_score_final: float
    reports: int
    steps: int
    path_length: float
    shortest_path: float
    collisions: int
    final_distance_m: float
    target_seen: bool
    wrong_instance: int


class EpisodeMeasures:
    """All per-episode measures of one episode, fed from the environment's ground truth.

    Call :meth:`reset` with the ground truth after ``env.reset``, :meth:`update` after every
    ``env.step``, :meth:`report` whenever the agent reports the target, and :meth:`get` at the end.
    SPL and SoftSPL use the geodesic distance at the start as the shortest path ``l`` and the
    distance travelled as ``p``. ``distance_score`` is the reference's (the better of the final and
    the best reported position, :func:`distance_score`); ``distance_score_final`` scores the final
    position only.

    Args:
        success_distance_m: used only if the env does not judge ``success``.
        stop_action: the stop action, for the same fallback.
        full_score_m: distance-score threshold for a full score.
        zero_score_m: distance-score threshold for a zero score.
    """

    def __init__(
        self,
        success_distance_m: float | None = None,
        stop_action: Any = None,
        full_score_m: float = FULL_SCORE_M,
        zero_score_m: float = ZERO_SCORE_M,
    ) -> None:
        self.full_score_m = full_score_m
        self.zero_score_m = zero_score_m
        self.success = Success(success_distance_m, stop_action)
        self.steps = Steps()
        self.path_length = PathLength()
        self.collisions = Collisions()
        self.geodesic = GeodesicDistance()
        self.final_distances = FinalDistances()
        self.target_seen = TargetSeen()
        self.reports = Reports()
        self.wrong_instance = WrongInstance()
        self._measures = (
            self.wrong_instance,
            self.success,
            self.steps,
            self.path_length,
            self.collisions,
            self.geodesic,
            self.final_distances,
            self.target_seen,
            self.reports,
        )
        self._last_only = (
            self.wrong_instance,
            self.success,
            self.path_length,
            self.collisions,
            self.geodesic,
            self.final_distances,
        )
        """Measures whose value is read from the last step alone: fed that step once, by :meth:`get`
        (an update then costs two counters, not nine calls, at every step of a run)."""
        self._last: tuple[Any, TruthReading] | None = None
        self._started = False

    def reset(self, first: TruthReading) -> None:
        """Start a new episode from the ground truth after ``env.reset``."""
        for m in self._measures:
            m.reset(first)
        self._last = None
        self._started = True

    def update(self, action: Any, truth: TruthReading) -> None:
        """Account for one step: the action taken and the ground truth after ``env.step`` (kept,
        not copied: a reading must not change once handed over, as the env's frozen ground truth)."""
        if not self._started:
            raise RuntimeError("EpisodeMeasures.update called before reset(first_info)")
        self.steps.update(action, truth)
        self.target_seen.update(action, truth)
        self._last = (action, truth)

    def report(self, truth: TruthReading) -> None:
        """The agent reported the target while seeing the observation that came with ``truth``."""
        if not self._started:
            raise RuntimeError("EpisodeMeasures.report called before reset(first_info)")
        self.reports.add(truth)

    def get(self) -> Measures:
        """The episode's measures, with the names used in ``metrics.jsonl``."""
        if not self._started:
            raise RuntimeError("EpisodeMeasures.get called before reset(first_info)")
        if self._last is not None:
            for m in self._last_only:
                m.update(*self._last)
            self._last = None
        success = self.success.get()
        shortest, d_final = self.geodesic.get()
        taken = self.path_length.get()
        nearest, instances = self.final_distances.get()
        return Measures(
            success=int(success),
            spl=spl(success, shortest, taken),
            soft_spl=soft_spl(shortest, d_final, shortest, taken),
            distance_score=distance_score(instances, self.reports.distances(), self.full_score_m, self.zero_score_m),
            distance_score_final=position_score(instances, self.full_score_m, self.zero_score_m),
            reports=len(self.reports.steps),
            steps=self.steps.get(),
            path_length=taken,
            shortest_path=shortest,
            collisions=self.collisions.get(),
            final_distance_m=nearest,
            target_seen=self.target_seen.get(),
            wrong_instance=int(self.wrong_instance.get()),
        )
