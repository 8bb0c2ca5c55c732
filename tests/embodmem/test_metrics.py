"""Per-episode measures on hand-computed cases (the arithmetic is in the comments)."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from embodmem.metrics import (
    EpisodeMeasures,
    Report,
    best_reported_distances,
    distance_score,
    instance_score,
    is_success,
    position_score,
    soft_spl,
    soft_success,
    spl,
)

# --- success ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stopped", "distance", "radius", "expected"),
    [
        (True, 1.0, 1.5, True),  # stopped inside the radius
        (True, 1.5, 1.5, True),  # the boundary counts as inside
        (True, 1.6, 1.5, False),  # stopped too far
        (False, 0.0, 1.5, False),  # on the target but never stopped
    ],
)
def test_is_success(stopped: bool, distance: float, radius: float, expected: bool) -> None:
    assert is_success(stopped, distance, radius) is expected


def test_success_boundary_differs_from_habitat_as_documented() -> None:
    # Habitat's Success is distance < threshold; ours (and the env's) is <=. The docstring says so,
    # and the strict rule is ours with the threshold lowered below the grid's distance step.
    assert "Habitat" in (is_success.__doc__ or "") and "strict" in (is_success.__doc__ or "")
    habitat = lambda stopped, d, r: stopped and d < r
    assert is_success(True, 10.0, 10.0) and not habitat(True, 10.0, 10.0)
    for d in (5.0, 7.07, 10.0, 11.18):  # distances between 5 m cell centres
        assert is_success(True, d, 10.0 - 1e-3) == habitat(True, d, 10.0)


# --- SPL ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("success", "shortest", "taken", "expected"),
    [
        (True, 10.0, 20.0, 0.5),  # 1 * 10 / max(10, 20) = 10 / 20
        (True, 10.0, 10.0, 1.0),  # optimal path
        (True, 12.0, 16.0, 0.75),  # 12 / 16
        (True, 10.0, 5.0, 1.0),  # p < l (coarse geodesic): 10 / max(10, 5) = 1, never above 1
        (False, 10.0, 10.0, 0.0),  # S = 0
        (True, 0.0, 0.0, 1.0),  # started on the goal and stopped at once: defined as 1
        (True, 0.0, 5.0, 0.0),  # started on the goal but wandered: 0 / max(0, 5) = 0
        (True, math.inf, 5.0, 0.0),  # no reachable target: no shortest path to compare with
    ],
)
def test_spl(success: bool, shortest: float, taken: float, expected: float) -> None:
    assert spl(success, shortest, taken) == pytest.approx(expected)


def test_spl_rejects_negative_distances() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        spl(True, -1.0, 3.0)


# --- SoftSPL --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("d0", "d1", "shortest", "taken", "expected"),
    [
        (10.0, 2.5, 10.0, 20.0, 0.375),  # (1 - 2.5/10) * 10/20 = 0.75 * 0.5
        (10.0, 0.0, 10.0, 10.0, 1.0),  # reached the goal optimally
        (10.0, 15.0, 10.0, 10.0, 0.0),  # ended farther than it started: max(0, 1 - 1.5) = 0
        (0.0, 0.0, 0.0, 0.0, 1.0),  # d_start = 0 and d_final = 0: soft success 1, efficiency 1
        (0.0, 2.0, 0.0, 4.0, 0.0),  # d_start = 0 but left the goal: soft success 0
        (math.inf, 3.0, math.inf, 4.0, 0.0),  # unreachable
    ],
)
def test_soft_spl(d0: float, d1: float, shortest: float, taken: float, expected: float) -> None:
    assert soft_spl(d0, d1, shortest, taken) == pytest.approx(expected)


def test_soft_success_credits_partial_progress() -> None:
    # 1 - 4 / 16 = 0.75, independent of path length
    assert soft_success(16.0, 4.0) == pytest.approx(0.75)


# --- distance score -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("d", "expected"),
    [
        (0.0, 100.0),
        (30.0, 100.0),  # the full-score threshold is inclusive
        (47.5, 75.0),  # 100 * (100 - 47.5) / 70 = 100 * 52.5 / 70
        (65.0, 50.0),  # 100 * 35 / 70
        (100.0, 0.0),
        (250.0, 0.0),
    ],
)
def test_instance_score(d: float, expected: float) -> None:
    assert instance_score(d) == pytest.approx(expected)


def test_instance_score_custom_thresholds() -> None:
    # full at <= 10, zero at 20: 15 m is halfway -> 50
    assert instance_score(15.0, full_score_m=10.0, zero_score_m=20.0) == pytest.approx(50.0)


def test_position_score_one_instance() -> None:
    assert position_score([65.0]) == pytest.approx(50.0)  # weight 1.0 * 50


def test_position_score_two_instances_sorted_and_unsorted() -> None:
    # sorted [10, 80]: 0.6 * 100 + 0.4 * (100 * 20 / 70) = 60 + 11.428571 = 71.428571
    expected = 60.0 + 0.4 * 100.0 * 20.0 / 70.0
    assert position_score([10.0, 80.0]) == pytest.approx(expected)
    assert position_score([80.0, 10.0]) == pytest.approx(expected)
    # the nearest instance gets 0.6 even when it is listed last: not 0.6 * 28.57 + 0.4 * 100 = 57.14
    assert position_score([80.0, 10.0]) != pytest.approx(0.6 * 100.0 * 20.0 / 70.0 + 40.0)


def test_position_score_three_instances_any_order() -> None:
    # sorted [20, 65, 100] -> scores [100, 50, 0]: 0.6 * 100 + 0.2 * 50 + 0.2 * 0 = 70
    for perm in itertools.permutations([100.0, 20.0, 65.0]):
        assert position_score(perm) == pytest.approx(70.0)
    # all three found: 0.6 + 0.2 + 0.2 = 1 -> 100
    assert position_score([1.0, 2.0, 3.0]) == pytest.approx(100.0)


def test_position_score_beyond_three_instances_uses_the_nearest_three() -> None:
    # the reference case: 10, 40, 70, 200 m -> 0.6*100 + 0.2*100*60/70 + 0.2*100*30/70 = 85.714
    for perm in itertools.permutations([10.0, 40.0, 70.0, 200.0]):
        assert round(position_score(perm), 2) == 85.71
    assert position_score([5.0] * 5 + [500.0]) == pytest.approx(100.0)


def test_no_distance_scores_zero() -> None:
    assert position_score([]) == 0.0
    assert distance_score([]) == 0.0
    assert distance_score([], [[]]) == 0.0


def test_position_score_rejects_bad_distances() -> None:
    with pytest.raises(ValueError):
        position_score([-1.0])
    with pytest.raises(ValueError):
        position_score([math.nan])


def test_passed_then_left_scores_the_report() -> None:
    # the reference case: passed within 5 m of the target, reported it, ended 120 m away -> 100 (final: 0)
    assert position_score([120.0]) == 0.0
    assert distance_score([120.0], [[40.0], [5.0], [25.0]]) == 100.0
    # the report nearest the FIRST instance is scored against all instances, not the best report
    # overall: reports at (first 20, second 90) and (first 50, second 0) -> the first one is chosen
    chosen = 0.6 * 100.0 + 0.4 * 100.0 * 10.0 / 70.0  # sorted [20, 90]
    assert best_reported_distances([[50.0, 0.0], [20.0, 90.0]]) == [20.0, 90.0]
    assert distance_score([150.0, 150.0], [[50.0, 0.0], [20.0, 90.0]]) == pytest.approx(chosen)
    # a final position better than any report wins
    assert distance_score([1.0, 2.0], [[20.0, 90.0]]) == pytest.approx(100.0)


# An independent transcription of the reference's scoring (OceanGym decision/utils/evaluate.py,
# find_closest_distance_to_targets + calculate_weighted_score_for_multiple_targets +
# evaluate_file_group), on positions and target points rather than precomputed distances.


def _reference_point_score(d: float) -> float:
    if d <= 30:
        return 100.0
    if d > 100:
        return 0.0
    return 100.0 * (100 - d) / (100 - 30)


def _reference_weighted(distances: list[float], target_count: int) -> float:
    if not distances or target_count == 0:
        return 0.0
    weights = [100.0] if target_count == 1 else [60.0, 40.0] if target_count == 2 else [60.0, 20.0, 20.0]
    total = 0.0
    for i, d in enumerate(sorted(distances)[: len(weights)]):
        total += _reference_point_score(d) / 100.0 * weights[i]
    return total


def _reference_file_score(
    locations: list[tuple[float, float]], targets: list[tuple[float, float]], last_only: bool
) -> float:
    if not locations:
        return 0.0
    if last_only:
        chosen = locations[-1]
    else:
        best = float("inf")
        chosen = None
        for loc in locations:
            d = math.dist(loc, targets[0])
            if d < best:
                best, chosen = d, loc
    return _reference_weighted([math.dist(chosen, t) for t in targets], len(targets))


def _reference_score(trajectory, reported, targets) -> float:
    best = 0.0
    for locations, last_only in ((reported, False), (trajectory, True)):
        score = _reference_file_score(locations, targets, last_only) if locations else 0.0
        best = max(best, score)
    return best


def test_distance_score_matches_the_reference_on_random_episodes() -> None:
    rng = random.Random(16)
    for _ in range(300):
        targets = [(rng.uniform(0, 300), rng.uniform(0, 300)) for _ in range(rng.randint(1, 5))]
        trajectory = [(rng.uniform(0, 300), rng.uniform(0, 300)) for _ in range(rng.randint(1, 30))]
        reported = [p for p in trajectory if rng.random() < 0.2]
        final = [math.dist(trajectory[-1], t) for t in targets]
        reports = [[math.dist(p, t) for t in targets] for p in reported]
        assert distance_score(final, reports) == pytest.approx(_reference_score(trajectory, reported, targets))
        assert position_score(final) == pytest.approx(_reference_score(trajectory, [], targets))


# --- EpisodeMeasures ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reading:
    """A ground-truth reading (embodmem.metrics.TruthReading) with test values."""

    step: int = 0
    agent_pos: tuple[int, int] = (3, 4)
    distance_m: float = 12.0
    geodesic_m: float = 10.0
    instance_distances_m: Sequence[float] = (12.0, 40.0)
    path_length_m: float = 0.0
    collisions: int = 0
    success: bool | None = False
    target_in_view: bool = False
    wrong_instance: bool = False


def _info(**kw: Any) -> Reading:
    return Reading(**kw)


def test_episode_measures_successful_episode() -> None:
    m = EpisodeMeasures()
    m.reset(_info())
    m.update(2, _info(path_length_m=5.0, geodesic_m=6.0, collisions=1, target_in_view=True))
    m.update(2, _info(path_length_m=10.0, geodesic_m=4.0, collisions=1))
    m.update(
        6,
        _info(
            path_length_m=15.0,
            geodesic_m=0.0,
            distance_m=1.0,
            instance_distances_m=[35.0, 1.0],
            collisions=1,
            success=True,
        ),
    )
    r = m.get()
    assert r.success == 1
    assert r.steps == 3
    assert r.path_length == pytest.approx(15.0)
    assert r.shortest_path == pytest.approx(10.0)
    assert r.spl == pytest.approx(10.0 / 15.0)  # 1 * 10 / max(10, 15)
    assert r.soft_spl == pytest.approx(10.0 / 15.0)  # (1 - 0/10) * 10/15
    # sorted [1, 35]: 0.6 * 100 + 0.4 * 100 * (100 - 35) / 70 = 60 + 37.142857
    assert r.distance_score == pytest.approx(60.0 + 40.0 * 65.0 / 70.0)
    assert r.collisions == 1
    assert r.final_distance_m == pytest.approx(1.0)
    assert r.target_seen is True  # in view at step 1 only, still counts


def test_episode_measures_failed_episode() -> None:
    m = EpisodeMeasures()
    m.reset(_info())
    m.update(2, _info(path_length_m=20.0, geodesic_m=5.0, distance_m=50.0, instance_distances_m=[50.0, 90.0]))
    r = m.get()
    assert r.success == 0
    assert r.spl == 0.0
    assert r.soft_spl == pytest.approx(0.25)  # (1 - 5/10) * 10 / max(10, 20) = 0.5 * 0.5
    # sorted [50, 90]: 0.6 * 100 * 50/70 + 0.4 * 100 * 10/70 = 42.857143 + 5.714286
    assert r.distance_score == pytest.approx(0.6 * 100 * 50 / 70 + 0.4 * 100 * 10 / 70)
    assert r.target_seen is False


def test_episode_measures_counts_from_the_episode_start() -> None:
    # The env's counters are cumulative; the episode's are the difference from reset.
    m = EpisodeMeasures()
    m.reset(_info(path_length_m=7.0, collisions=2))
    m.update(0, _info(path_length_m=9.0, collisions=5))
    r = m.get()
    assert r.path_length == pytest.approx(2.0)  # 9 - 7
    assert r.collisions == 3  # 5 - 2


def test_episode_measures_get_twice_gives_the_same_measures() -> None:
    # get() feeds the last step to the last-step measures once; asking again must not feed it twice.
    m = EpisodeMeasures()
    m.reset(_info(path_length_m=1.0, collisions=1))
    m.update(2, _info(path_length_m=4.0, geodesic_m=3.0, collisions=2))
    first = m.get()
    assert m.get() == first
    assert (first.path_length, first.collisions, first.steps) == (pytest.approx(3.0), 1, 1)


def test_episode_measures_target_seen_at_reset() -> None:
    m = EpisodeMeasures()
    m.reset(_info(target_in_view=True))
    assert m.get().target_seen is True
    assert m.get().steps == 0


def test_success_fallback_rule_when_env_does_not_report() -> None:
    info = _info(distance_m=1.0, success=None)  # the env does not judge success
    m = EpisodeMeasures(success_distance_m=1.5, stop_action=6)
    m.reset(info)
    m.update(6, info)  # stop within 1.5 m
    assert m.get().success == 1
    m.reset(info)
    m.update(2, info)  # did not stop
    assert m.get().success == 0


def test_episode_measures_errors() -> None:
    m = EpisodeMeasures()
    with pytest.raises(RuntimeError, match="before reset"):
        m.update(0, _info())
    with pytest.raises(RuntimeError, match="before reset"):
        m.get()
    with pytest.raises(RuntimeError, match="before reset"):
        m.report(_info())


def test_episode_measures_credit_reports_at_the_true_position() -> None:
    # The robot reports the target from 5 m (step 2), swims on and ends 120 m away.
    m = EpisodeMeasures()
    m.reset(_info(instance_distances_m=[60.0], distance_m=60.0))
    m.update(2, _info(step=1, agent_pos=(5, 5), instance_distances_m=[30.0], distance_m=30.0))
    m.update(2, _info(step=2, agent_pos=(6, 5), instance_distances_m=[5.0], distance_m=5.0))
    m.report(_info(step=2, agent_pos=(6, 5), instance_distances_m=[5.0], distance_m=5.0))
    m.update(2, _info(step=3, agent_pos=(30, 5), instance_distances_m=[120.0], distance_m=120.0))
    r = m.get()
    assert r.distance_score == 100.0 and r.distance_score_final == 0.0 and r.reports == 1
    assert m.reports.steps == [Report(2, (6, 5), [5.0])]
    m.reset(_info())
    assert m.get().reports == 0 and m.reports.steps == []


def test_runner_logs_reports_where_the_agent_judged_the_frame() -> None:
    """A real episode: the explorer's detections are its reports, logged at its true position."""
    from embodmem.agents.explorer import FrontierExplorer
    from embodmem.embedding.embedder import ClipEmbedder
    from embodmem.envs.underwater import UnderwaterEnv
    from embodmem.runner import StepEvent, run_episode

    env = UnderwaterEnv(tasks=("wreck",), world_seed=0, max_steps=150)
    agent = FrontierExplorer(ClipEmbedder(threads=1))
    seen: dict[int, dict[str, object]] = {}
    judged: dict[int, float] = {}

    def on_step(step: StepEvent) -> None:
        truth = step.truth
        judged[truth.step - 1] = step.agent.trace.extra["p_target"]  # frame before this step
        seen[truth.step] = {"pos": list(truth.agent_pos), "d": truth.instance_distances_m}

    result = run_episode(env, agent, {"task": "wreck", "start": "fixed0"}, episode_seed=0, on_step=on_step)
    reports = result.trace.reports
    threshold = agent.config.detect_probability
    assert [r.step for r in reports] == [s for s, p in sorted(judged.items()) if p >= threshold]
    assert reports and result.measures.reports == len(reports)
    for r in reports:
        if r.step > 0:
            assert r.position == tuple(seen[r.step]["pos"]) and r.instance_distances_m == seen[r.step]["d"]
    final = seen[max(seen)]["d"]
    expected = distance_score(final, [r.instance_distances_m for r in reports])
    assert result.measures.distance_score == pytest.approx(expected)
    assert result.measures.distance_score_final == pytest.approx(position_score(final))


# --- each rule on a case that tells it apart ------------------------------------------------------


def test_fresh_measures_report_nothing_measured() -> None:
    from embodmem.metrics import (
        Collisions,
        FinalDistances,
        GeodesicDistance,
        PathLength,
        Reports,
        Steps,
        Success,
        TargetSeen,
        WrongInstance,
    )

    assert (Steps().get(), PathLength().get(), Collisions().get()) == (0, 0.0, 0)
    assert Success(1.5, 6).get() is False and TargetSeen().get() is False and WrongInstance().get() is False
    assert Reports().steps == [] and Reports().distances() == []
    nearest, instances = FinalDistances().get()
    assert math.isnan(nearest) and instances == []
    assert all(math.isnan(d) for d in GeodesicDistance().get())


def test_success_fallback_needs_the_distance_and_the_stop_action() -> None:
    from embodmem.metrics import Success

    info = _info(distance_m=1.0, success=None)
    for success in (Success(None, 6), Success(1.5, None), Success(1.5, 6)):
        success.reset(info)
        assert success.get() is False  # no action yet, or no rule to apply
        success.update(6, info)
    assert [s.get() for s in (Success(None, 6), Success(1.5, None))] == [False, False]
    judged = Success(None, 6)
    judged.reset(info)
    judged.update(6, info)
    assert judged.get() is False


def test_wrong_instance_is_the_last_steps_and_cleared_by_reset() -> None:
    m = EpisodeMeasures()
    m.reset(_info(wrong_instance=True))  # a reading at reset says nothing about a stop
    assert m.get().wrong_instance == 0
    m.update(6, _info(wrong_instance=True))
    assert m.get().wrong_instance == 1
    m.reset(_info())
    assert m.get().wrong_instance == 0


def test_measure_errors_name_the_call() -> None:
    m = EpisodeMeasures()
    for call, name in [(lambda: m.update(0, _info()), "update"), (m.get, "get"), (lambda: m.report(_info()), "report")]:
        with pytest.raises(RuntimeError, match=rf"^EpisodeMeasures\.{name} called before reset\(first_info\)$"):
            call()


def test_custom_score_thresholds_reach_every_score() -> None:
    # zero score from 60 m: an instance at 50 m scores 100 * (60 - 50) / (60 - 30) = 33.3
    assert position_score([50.0], zero_score_m=60.0) == pytest.approx(100 / 3)
    assert distance_score([50.0], zero_score_m=60.0) == pytest.approx(100 / 3)
    assert distance_score([500.0], [[50.0]], zero_score_m=60.0) == pytest.approx(100 / 3)
    m = EpisodeMeasures(zero_score_m=60.0)
    m.reset(_info(instance_distances_m=[50.0]))
    m.update(0, _info(instance_distances_m=[50.0]))
    m.report(_info(instance_distances_m=[40.0]))
    r = m.get()
    assert r.distance_score_final == pytest.approx(100 / 3) and r.distance_score == pytest.approx(200 / 3)


def test_report_ties_go_to_the_earliest() -> None:
    assert best_reported_distances([[20.0, 90.0], [20.0, 10.0]]) == [20.0, 90.0]
    assert distance_score([500.0, 500.0], [[20.0, 90.0], [20.0, 10.0]]) == pytest.approx(position_score([20.0, 90.0]))


def test_score_messages_name_the_value() -> None:
    with pytest.raises(ValueError, match=r"^instance distance must be a non-negative number, got -1\.0$"):
        instance_score(-1.0)
    with pytest.raises(ValueError, match=r"^need full_score_m < zero_score_m, got 60\.0 and 50\.0$"):
        instance_score(10.0, 60.0, 50.0)
    with pytest.raises(ValueError, match=r"^distances must be non-negative, got d_start=-1\.0, d_final=2\.0$"):
        soft_success(-1.0, 2.0)
