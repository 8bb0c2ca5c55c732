"""The pinned scorer's definition, checked on hand-made records against the words of spec v1.

A sequence is scored on one condition (warm when it ran warm, else single); its later tasks are the
second onwards; an aborted episode is a failure (SPL and success 0, its steps the steps it took);
warm minus cold SPL and the cold/warm steps ratio pair a later warm episode with the cold episode of
the same world and task. A group's score is the mean over worlds of each world's mean over sequences
of that sequence's later-task SPL there. Every interval resamples whole worlds (tours for answers).
"""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import JsonValue

from embodmem.bench.records import BenchRecord
from embodmem.bench.schema import Interval
from embodmem.bench.score import (
    SCORER,
    SCORERS,
    revisits,
    score_answers,
    score_groups,
    score_sequence,
    score_staleness,
    scored_condition,
)
from embodmem.stats import difference_of_means, mean_ci, paired_ci, ratio_of_means


def ep(world: int, task: int, condition: str = "single", **fields: JsonValue) -> dict[str, JsonValue]:
    record: dict[str, JsonValue] = {
        "sequence": "s", "world_seed": world, "task_index": task, "condition": condition,
        "spl": 0.5, "success": 1, "steps": 10,
    }  # fmt: skip
    record.update(fields)
    return record


def interval(values: list[float], clusters: list[object]) -> Interval:
    """The definition: the mean, the world-clustered percentile bootstrap, the count."""
    return Interval.of(float(np.mean(values)), mean_ci(values, clusters=clusters), len(values))


def test_the_scorer_names_its_version() -> None:
    assert SCORERS == ("embodmem-bench-score/1", "embodmem-bench-score/2") and SCORERS[-1] == SCORER


def test_a_sequence_that_ran_warm_is_scored_warm_else_single() -> None:
    assert scored_condition([ep(0, 1, "cold"), ep(0, 1, "warm")]) == "warm"
    assert scored_condition([ep(0, 1, "single"), ep(0, 2, "cold")]) == "single"
    assert scored_condition([]) == "single"


def test_later_tasks_are_the_second_onwards_of_the_scored_condition_clustered_by_world() -> None:
    spl = {(0, 1): 0.9, (0, 2): 0.1, (0, 3): 0.3, (1, 2): 0.8, (1, 3): 0.6, (2, 2): 0.2, (2, 3): 0.2}
    records = [ep(w, t, spl=v, success=int(v > 0.25), steps=int(100 * v)) for (w, t), v in spl.items()]
    records.append(ep(3, 2, "eval", spl=1.0))  # another condition: not scored
    s = score_sequence("seq", records)
    later = [(w, t) for (w, t) in spl if t >= 2]
    worlds: list[object] = [w for w, _ in later]
    assert (s.sequence, s.condition, s.worlds, s.episodes, s.aborted) == ("seq", "single", 3, 7, 0)
    assert s.later_spl == interval([spl[k] for k in later], worlds)
    assert s.later_success == interval([float(spl[k] > 0.25) for k in later], worlds)
    assert s.later_steps == interval([float(int(100 * spl[k])) for k in later], worlds)
    assert s.all_spl == interval(list(spl.values()), [w for w, _ in spl])
    assert s.later_spl.lo is not None and s.later_spl.lo < s.later_spl.mean < s.later_spl.hi  # type: ignore[operator]
    assert s.warm_minus_cold_spl is None and s.steps_cold_over_warm is None


def test_an_aborted_episode_is_a_failure_with_the_steps_it_took() -> None:
    records = [
        ep(0, 2, spl=0.8, success=1, steps=30),
        ep(1, 2, spl=0.8, success=1, steps=500, aborted=True, steps_before_abort=7),
        ep(2, 2, spl=None, success=None, steps=None),  # nothing measured: no SPL, no success, no steps
    ]
    s = score_sequence("s", records)
    assert s.aborted == 1 and s.episodes == 3
    assert s.later_spl.mean == pytest.approx(0.8 / 3)
    assert s.later_success.mean == pytest.approx(1 / 3)
    assert s.later_steps.mean == pytest.approx(37 / 3)
    aborted_without_steps = score_sequence("s", [ep(0, 2, aborted=True, steps=40), ep(1, 2, steps=20)])
    assert aborted_without_steps.later_steps.mean == 10.0


def test_a_sequence_without_later_tasks_has_empty_intervals() -> None:
    s = score_sequence("s", [ep(0, 1), ep(1, 1)])
    empty = Interval(mean=None, lo=None, hi=None, n=0)
    assert s.later_spl == s.later_success == s.later_steps == empty
    assert s.all_spl.n == 2 and s.all_spl.mean == 0.5


def test_warm_minus_cold_pairs_later_tasks_by_world_and_task() -> None:
    warm = {(0, 2): (0.9, 20), (0, 3): (0.7, 30), (1, 2): (0.6, 40), (1, 3): (0.5, 10), (2, 2): (0.4, 50)}
    cold = {(0, 2): (0.3, 60), (0, 3): (0.2, 70), (1, 2): (0.6, 40), (1, 3): (0.1, 90)}
    records = [ep(w, t, "warm", spl=v, steps=n) for (w, t), (v, n) in warm.items()]
    records += [ep(w, t, "cold", spl=v, steps=n) for (w, t), (v, n) in cold.items()]
    records += [ep(0, 1, "warm", spl=0.0, steps=999), ep(0, 1, "cold", spl=1.0, steps=1)]  # first task: unpaired
    records += [ep(2, 3, "cold", spl=1.0, steps=1)]  # no warm episode to pair with
    s = score_sequence("s", records)
    assert s.condition == "warm" and s.episodes == 6 and s.worlds == 3
    pairs = [k for k in warm if k in cold]
    w_spl = np.array([warm[k][0] for k in pairs])
    c_spl = np.array([cold[k][0] for k in pairs])
    w_steps = np.array([float(warm[k][1]) for k in pairs])
    c_steps = np.array([float(cold[k][1]) for k in pairs])
    clusters = [w for w, _ in pairs]
    assert s.warm_minus_cold_spl == Interval.of(
        float(np.mean(w_spl) - np.mean(c_spl)),
        paired_ci(w_spl, c_spl, difference_of_means, clusters=clusters),
        4,
    )
    assert s.steps_cold_over_warm == Interval.of(
        float(np.mean(c_steps) / np.mean(w_steps)),
        paired_ci(w_steps, c_steps, ratio_of_means, clusters=clusters),
        4,
    )
    assert s.steps_cold_over_warm is not None and s.steps_cold_over_warm.mean == pytest.approx(260 / 100)


def test_warm_without_cold_episodes_has_no_paired_figures() -> None:
    s = score_sequence("s", [ep(0, 2, "warm"), ep(1, 2, "warm")])
    assert s.condition == "warm" and s.warm_minus_cold_spl is None and s.steps_cold_over_warm is None


def test_aborted_pairs_count_as_failures_with_the_steps_they_took() -> None:
    records = [
        ep(0, 2, "warm", spl=0.9, steps=10, aborted=True, steps_before_abort=4),
        ep(0, 2, "cold", spl=0.5, steps=20),
        ep(1, 2, "warm", spl=0.6, steps=30),
        ep(1, 2, "cold", spl=0.2, steps=40, aborted=True, steps_before_abort=8),
    ]
    s = score_sequence("s", records)
    assert s.warm_minus_cold_spl is not None and s.steps_cold_over_warm is not None
    assert s.warm_minus_cold_spl.mean == pytest.approx((0.0 + 0.6) / 2 - (0.5 + 0.0) / 2)
    assert s.steps_cold_over_warm.mean == pytest.approx((20 + 8) / (4 + 30))


def group_records(group: str, sequences: dict[str, dict[tuple[int, int], float]]) -> list[BenchRecord]:
    return [
        BenchRecord(group, "episode", ep(w, t, sequence=name, spl=v))
        for name, values in sequences.items()
        for (w, t), v in values.items()
    ]


def test_a_group_score_is_the_mean_over_worlds_of_the_mean_over_sequences() -> None:
    a = {(0, 1): 1.0, (0, 2): 0.2, (0, 3): 0.4, (1, 2): 0.9, (2, 2): 0.1, (2, 3): 0.3, (2, 4): 0.5}
    b = {(0, 2): 0.8, (1, 2): 0.5, (1, 3): 0.1, (2, 2): 0.6}
    records = group_records("g", {"a": a, "b": b})
    records.append(BenchRecord("g", "episode", ep(0, 2, "eval", sequence="a", spl=1.0)))  # evaluation: not scored
    records.append(BenchRecord("g", "answer", {"sequence": "a", "spl": 1.0}))
    (g,) = score_groups(records)
    # world 0: a's later mean 0.3, b's 0.8 -> 0.55; world 1: 0.9 and 0.3 -> 0.6; world 2: 0.3 and 0.6 -> 0.45
    per_world = [(0.3 + 0.8) / 2, (0.9 + 0.3) / 2, (0.3 + 0.6) / 2]
    assert g.group == "g"
    assert g.score == interval(per_world, [0, 1, 2])
    assert g.score.mean == pytest.approx(1.6 / 3)
    assert [s.sequence for s in g.sequences] == ["a", "b"]
    assert g.sequences[0] == score_sequence("a", [r.record for r in records[: len(a)]])


def test_groups_keep_their_first_order_score_their_condition_and_sort_worlds() -> None:
    warm = [
        BenchRecord("later", "episode", ep(w, 2, c, sequence="w", spl=v))
        for w, c, v in ((5, "warm", 0.2), (3, "warm", 0.6), (4, "warm", 0.4), (5, "cold", 1.0), (3, "cold", 1.0))
    ]
    first = [BenchRecord("first", "episode", ep(w, 2, spl=0.1 * w)) for w in (1, 0)]
    groups = score_groups(warm + first)
    assert [g.group for g in groups] == ["later", "first"]
    assert groups[0].score == interval([0.6, 0.4, 0.2], [3, 4, 5])
    assert groups[1].score == interval([0.0, 0.1], [0, 1])
    assert score_groups([]) == []


def test_only_episodes_outside_evaluation_are_grouped() -> None:
    kept = BenchRecord("g", "episode", ep(0, 2, sequence="kept"))
    evaluation = [
        BenchRecord("g", "episode", ep(0, 2, "eval", sequence="probe")),
        BenchRecord("held_out", "episode", ep(0, 2, "eval", sequence="probe")),
    ]
    others = [answer("t1", "where", True), BenchRecord("g", "state", {"bytes": 10})]
    groups = score_groups([*others, *evaluation, kept])
    assert [g.group for g in groups] == ["g"]
    assert [s.sequence for s in groups[0].sequences] == ["kept"]


def test_a_group_without_later_tasks_has_an_empty_score() -> None:
    (g,) = score_groups([BenchRecord("g", "episode", ep(0, 1)), BenchRecord("g", "episode", ep(1, 1))])
    assert g.score == Interval(mean=None, lo=None, hi=None, n=0)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (ep(0, 2, spl="high"), "spl is not a number"),
        (ep(0, 2, world_seed="w"), "world_seed is not an integer"),
        (ep(0, 2, task_index=None), "task_index is not an integer"),
    ],
)
def test_a_malformed_record_is_refused_naming_the_field(record: dict[str, JsonValue], message: str) -> None:
    with pytest.raises(AssertionError, match=f"^{message}$"):
        score_sequence("s", [record])


def test_an_episode_without_a_sequence_is_refused() -> None:
    record = ep(0, 2)
    del record["sequence"]
    with pytest.raises(AssertionError, match="^an episode record without a sequence$"):
        score_groups([BenchRecord("g", "episode", record)])


def answer(tour: str, kind: str, correct: bool, answerer: str = "vlm") -> BenchRecord:
    return BenchRecord("eqa", "answer", {"tour": tour, "type": kind, "correct": correct, "answerer": answerer})


def test_accuracy_is_the_share_answered_right_resampling_whole_tours() -> None:
    answers = [
        answer("t1", "where", True),
        answer("t1", "count", False, "other"),
        answer("t2", "where", True),
        answer("t2", "where", False),
        answer("t3", "count", True),
        answer("t3", "exists", True),
        answer("t4", "where", False),
    ]
    records = [BenchRecord("g", "episode", ep(0, 2)), *answers]
    eqa = score_answers(records)
    assert eqa is not None
    tours: list[object] = ["t1", "t1", "t2", "t2", "t3", "t3", "t4"]
    right = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    assert (eqa.answerer, eqa.questions, eqa.tours) == ("vlm", 7, 4)
    assert eqa.accuracy == interval(right, tours)
    assert list(eqa.by_type) == ["count", "exists", "where"]
    assert eqa.by_type["where"] == interval([1.0, 1.0, 0.0, 0.0], ["t1", "t2", "t2", "t4"])
    assert eqa.by_type["count"] == interval([0.0, 1.0], ["t1", "t3"])
    assert eqa.by_type["exists"] == Interval.of(1.0, (float("nan"), float("nan")), 1)


def test_no_answers_no_eqa_score() -> None:
    assert score_answers([BenchRecord("g", "episode", ep(0, 2))]) is None
    assert score_answers([]) is None


def changing(world: int, task: int, name: str, **fields: JsonValue) -> dict[str, JsonValue]:
    """A warm episode of a changing world (``goal_changed`` present, as its records have it)."""
    record = ep(world, task, "warm", goal_changed=False, stale_target_visits=0, steps_to_correct=None)
    record["task"] = name
    record.update(fields)
    return record


def test_a_revisit_is_a_task_an_earlier_task_of_the_same_world_asked_for() -> None:
    records = [
        changing(0, 1, "wreck"), changing(0, 2, "barrel"), changing(0, 3, "wreck"), changing(0, 4, "barrel"),
        changing(1, 1, "barrel"), changing(1, 2, "wreck"), changing(1, 3, "robot"),
    ]  # fmt: skip
    assert [(r["world_seed"], r["task_index"]) for r in revisits(records)] == [(0, 3), (0, 4)]
    assert revisits([changing(0, 2, "wreck"), changing(0, 1, "wreck")]) == [changing(0, 2, "wreck")]  # any order


def test_a_static_world_has_no_staleness_score() -> None:
    assert score_staleness([ep(0, 1, "warm"), ep(0, 2, "warm")]) is None
    assert score_sequence("s", [ep(0, 1, "warm"), ep(0, 2, "warm")]).staleness is None


def test_staleness_splits_revisits_by_changed_goal_each_clustered_by_world() -> None:
    rows = [  # world, task, goal, changed, spl, stale visits, steps to correct
        (0, 1, "wreck", False, 0.9, 0, None), (0, 2, "wreck", True, 0.2, 3, 7), (0, 3, "barrel", False, 0.5, 0, None),
        (0, 4, "barrel", False, 0.7, 0, None), (1, 1, "wreck", False, 0.8, 0, None), (1, 2, "wreck", True, 0.4, 1, 5),
        (1, 3, "wreck", False, 0.6, 0, 2), (2, 1, "barrel", False, 1.0, 0, None), (2, 2, "barrel", True, 0.1, 2, None),
    ]  # fmt: skip
    records = [
        changing(w, t, g, goal_changed=c, spl=s, stale_target_visits=v, steps_to_correct=k)
        for w, t, g, c, s, v, k in rows
    ]
    st = score_staleness(records)
    assert st is not None
    changed = [(w, s, v) for w, t, g, c, s, v, k in rows if c]
    unchanged = [(w, s) for w, t, g, c, s, v, k in rows if not c and (w, t) in {(0, 4), (1, 3)}]
    corrected = [(w, k) for w, t, g, c, s, v, k in rows if k is not None]
    assert st.changed_spl == interval([s for _, s, _ in changed], [w for w, _, _ in changed])
    assert st.unchanged_spl == interval([s for _, s in unchanged], [w for w, _ in unchanged])
    assert st.stale_target_visits == interval([float(v) for _, _, v in changed], [w for w, _, _ in changed])
    assert st.steps_to_correct == interval([float(k) for _, k in corrected], [w for w, _ in corrected])
    assert (st.changed_spl.n, st.unchanged_spl.n, st.steps_to_correct.n) == (3, 2, 3)
    assert st.changed_spl.mean == pytest.approx((0.2 + 0.4 + 0.1) / 3)
    assert st.steps_to_correct.mean == pytest.approx((7 + 5 + 2) / 3)


def test_staleness_without_revisits_has_empty_intervals() -> None:
    st = score_staleness([changing(0, 1, "wreck"), changing(0, 2, "barrel")])
    assert st is not None
    empty = Interval(mean=None, lo=None, hi=None, n=0)
    assert (st.changed_spl, st.unchanged_spl, st.stale_target_visits, st.steps_to_correct) == (empty,) * 4


def test_a_sequence_of_a_changing_world_carries_the_staleness_of_its_scored_condition() -> None:
    warm = [
        changing(0, 1, "wreck"), changing(0, 2, "wreck", goal_changed=True, spl=0.1, stale_target_visits=2),
        changing(1, 1, "wreck"), changing(1, 2, "wreck", goal_changed=True, spl=0.3, stale_target_visits=1),
    ]  # fmt: skip
    cold = [{**r, "condition": "cold", "spl": 0.9, "stale_target_visits": 0} for r in warm]
    s = score_sequence("s", warm + cold)
    assert s.condition == "warm" and s.staleness == score_staleness(warm)
    assert s.staleness is not None and s.staleness.changed_spl.mean == pytest.approx(0.2)
