"""The staleness measures' definitions, checked against brute-force readings of the same words.

A *stale place* is a free cell within the success distance of where a goal instance stood before a
change made once the sequence had begun (task after the first, or a step into the first), and not
a success cell now. An episode's stale-target visits count the entries into stale places, its steps
to correct run from the first step in a stale place to the last one, inclusive. The tables keep
only the asked agent's and condition's episodes after the first task, pair an agent's episode with
the control's episode of the same sequence, world, seed and task, and resample whole worlds.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from embodmem.envs.changes import ChangeEvent
from embodmem.envs.ground_truth import GroundTruth
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.metrics_record import EpisodeRecord
from embodmem.staleness import (
    STALE_ACTIONS,
    StalenessTracker,
    correction_summary,
    spl_by_goal,
    stale_zone,
    steps_lost,
)
from embodmem.stats import difference_of_means, mean_ci, paired_ci


@pytest.fixture(scope="module")
def truth() -> GroundTruth:
    env = UnderwaterEnv(tasks=("barrel", "wreck", "barrel"), world_seed=1000, max_steps=300)
    env.reset(seed=0)
    return env.ground_truth()


def event(
    kind: str, cells: tuple[tuple[int, int], ...], action: str = "move", task: int = 2, step: int = 0
) -> ChangeEvent:
    return ChangeEvent(task, step, action, kind, 0, "v", cells, ((30, 30),))


def at(truth: GroundTruth, *events: ChangeEvent, pos: tuple[int, int] = (2, 2), step: int = 0) -> GroundTruth:
    return dataclasses.replace(truth, world_changes=tuple(events), agent_pos=pos, step=step, changes="m")


def brute_zone(truth: GroundTruth, former: list[tuple[int, int]]) -> np.ndarray:
    """Stale places by the words of the definition, one cell at a time."""
    n = truth.world.size
    free = truth.world.free()
    reach = truth.success_distance_m / truth.cell_size_m
    zone = np.zeros((n, n), dtype=bool)
    for y in range(n):
        for x in range(n):
            near = any(math.hypot(x - fx, y - fy) <= reach + 1e-9 for fx, fy in former)
            zone[y, x] = near and bool(free[y, x]) and not bool(truth.success_cells[y, x])
    return zone


def free_cell_far_from_success(truth: GroundTruth) -> tuple[int, int]:
    """A free (x, y) whose whole success-distance disc is free and far from the success cells."""
    free = truth.world.free()
    for y in range(3, 28):
        for x in range(3, 14):
            if free[y - 2 : y + 3, x - 2 : x + 3].all() and y != x:
                return (x, y)
    raise AssertionError("no open patch in the test world")


def test_the_stale_zone_is_every_free_cell_within_reach_of_a_former_goal_cell(truth: GroundTruth) -> None:
    fx, fy = free_cell_far_from_success(truth)
    former = ((fx, fy), (fx + 1, fy))
    zone = stale_zone(at(truth, event(truth.task.target, former)))
    assert zone.dtype == bool and zone.shape == (truth.world.size, truth.world.size)
    assert np.array_equal(zone, brute_zone(truth, list(former)))
    # the reach is inclusive: two cells (10 m / 5 m) straight away is still stale, a knight's move beyond is not
    assert zone[fy, fx - 2] and zone[fy + 2, fx] and not zone[fy + 2, fx - 1]
    # (x, y) order: the former cells' columns are x
    assert zone[fy, fx + 3] and not zone[fy + 3, fx + 1]


def test_success_cells_and_blocked_cells_are_never_stale(truth: GroundTruth) -> None:
    sy, sx = np.argwhere(truth.success_cells)[0]
    blocked = np.argwhere(~truth.world.free())
    by, bx = blocked[len(blocked) // 2]
    zone = stale_zone(at(truth, event(truth.task.target, ((int(sx), int(sy)), (int(bx), int(by))))))
    assert not zone[truth.success_cells].any() and not zone[~truth.world.free()].any()
    assert np.array_equal(zone, brute_zone(truth, [(int(sx), int(sy)), (int(bx), int(by))]))


@pytest.mark.parametrize("action", STALE_ACTIONS)
def test_every_stale_action_after_the_start_makes_a_zone(truth: GroundTruth, action: str) -> None:
    cell = free_cell_far_from_success(truth)
    assert stale_zone(at(truth, event(truth.task.target, (cell,), action=action))).sum() > 0


@pytest.mark.parametrize(
    ("kind", "action", "task", "step", "stale"),
    [
        ("target", "move", 1, 0, False),  # before the first task: the fresh-memory control's changes
        ("target", "move", 1, 1, True),  # a step into the first task
        ("target", "move", 2, 0, True),  # before a later task
        ("target", "add", 2, 0, False),  # an added instance leaves no stale place
        ("other", "move", 2, 0, False),  # another kind than the goal's
    ],
)
def test_only_changes_of_the_goal_kind_after_the_start_leave_stale_places(
    truth: GroundTruth, kind: str, action: str, task: int, step: int, stale: bool
) -> None:
    cell = free_cell_far_from_success(truth)
    kind = truth.task.target if kind == "target" else "wreck"
    zone = stale_zone(at(truth, event(kind, (cell,), action=action, task=task, step=step)))
    assert bool(zone.any()) is stale
    if not stale:
        assert zone.shape == (truth.world.size, truth.world.size) and zone.dtype == bool


def walk(truth: GroundTruth, cells: list[tuple[int, int]], *events: ChangeEvent) -> StalenessTracker:
    tracker = StalenessTracker(at(truth, *events, pos=cells[0], step=0))
    for step, pos in enumerate(cells[1:], start=1):
        tracker.update(at(truth, *events, pos=pos, step=step))
    return tracker


def test_visits_count_entries_and_correction_runs_from_first_to_last_stale_step(truth: GroundTruth) -> None:
    fx, fy = free_cell_far_from_success(truth)
    change = event(truth.task.target, ((fx, fy),))
    out = (fx + 5, fy)
    # steps: 0 out, 1-2 in (one visit), 3 out, 4 in (second visit), 5 out
    path = [out, (fx, fy), (fx + 1, fy), out, (fx, fy + 1), out]
    tracker = walk(truth, path, change)
    assert tracker.steps == [1, 2, 4]
    got = tracker.get()
    assert got.stale_target_visits == 2 and got.steps_to_correct == 4
    assert got.goal_changed is True and got.changes_so_far == 1 and got.world_changes == "m"


def test_the_first_truth_counts_and_one_stale_step_takes_one_step_to_correct(truth: GroundTruth) -> None:
    fx, fy = free_cell_far_from_success(truth)
    change = event(truth.task.target, ((fx, fy),))
    got = walk(truth, [(fx, fy), (fx + 5, fy)], change).get()
    assert got.stale_target_visits == 1 and got.steps_to_correct == 1


def test_an_episode_that_never_enters_a_stale_place_has_no_correction(truth: GroundTruth) -> None:
    fx, fy = free_cell_far_from_success(truth)
    got = walk(truth, [(fx + 5, fy), (fx + 6, fy)], event(truth.task.target, ((fx, fy),))).get()
    assert got.stale_target_visits == 0 and got.steps_to_correct is None and got.goal_changed is True


def test_the_zone_follows_changes_made_during_the_episode(truth: GroundTruth) -> None:
    fx, fy = free_cell_far_from_success(truth)
    change = event(truth.task.target, ((fx, fy),), task=1, step=2)
    tracker = StalenessTracker(at(truth, pos=(fx, fy), step=0))
    tracker.update(at(truth, pos=(fx, fy), step=1))
    tracker.update(at(truth, change, pos=(fx, fy), step=2))
    tracker.update(at(truth, change, pos=(fx, fy), step=3))
    assert tracker.steps == [2, 3]
    got = tracker.get()
    assert got.stale_target_visits == 1 and got.changes_so_far == 1 and got.goal_changed is True


def test_the_zone_follows_the_success_cells(truth: GroundTruth) -> None:
    fx, fy = free_cell_far_from_success(truth)
    change = event(truth.task.target, ((fx, fy),))
    covered = truth.success_cells.copy()
    covered[fy, fx] = True  # a goal instance stands there again: no longer stale
    tracker = StalenessTracker(at(truth, change, pos=(fx, fy), step=0))
    tracker.update(dataclasses.replace(at(truth, change, pos=(fx, fy), step=1), success_cells=covered))
    assert tracker.steps == [0]


def test_the_goal_changed_flag_and_the_change_set_name(truth: GroundTruth) -> None:
    cell = free_cell_far_from_success(truth)
    static = dataclasses.replace(truth, changes=None)
    assert StalenessTracker(static).get().world_changes == "changes"
    other = StalenessTracker(at(truth, event("wreck", (cell,)))).get()
    assert other.goal_changed is False and other.changes_so_far == 1
    early = StalenessTracker(at(truth, event(truth.task.target, (cell,), task=1, step=0))).get()
    assert early.goal_changed is False
    # a new instance of the goal's kind leaves what was seen of the others true: not a changed goal
    added = StalenessTracker(at(truth, event(truth.task.target, (), action="add", task=1, step=1))).get()
    assert added.goal_changed is False and added.changes_so_far == 1
    moved = StalenessTracker(at(truth, event(truth.task.target, (cell,), task=1, step=1))).get()
    assert moved.goal_changed is True


def rec(world: int, agent: str = "memory", **fields: object) -> EpisodeRecord:
    base: dict[str, object] = {
        "agent": agent, "condition": "warm", "world_seed": world, "seed": 0, "sequence": "s", "task_index": 2,
        "steps": 40, "spl": 0.5, "success": 1, "goal_changed": True, "stale_target_visits": 1,
        "world_changes": "m",
    }  # fmt: skip
    base.update(fields)
    return EpisodeRecord.model_validate(base)


def test_spl_by_goal_keeps_the_agents_later_changing_world_episodes_of_the_condition() -> None:
    keep = [rec(w, spl=0.1 * w + 0.1 * k, stale_target_visits=w) for w in range(4) for k in range(2)]
    noise = [
        rec(9, agent="other", spl=1.0),
        rec(9, condition="cold", spl=1.0),
        rec(9, task_index=1, spl=1.0),
        rec(9, goal_changed=None, spl=1.0, stale_target_visits=None, world_changes=None),
        rec(9, spl=None),
    ]
    rows = spl_by_goal(keep + noise, "memory")
    assert len(rows) == 1
    row = rows[0]
    spls = [0.1 * w + 0.1 * k for w in range(4) for k in range(2)]
    worlds = [w for w in range(4) for _ in range(2)]
    assert (row.agent, row.goals, row.episodes, row.worlds) == ("memory", "changed", 8, 4)
    assert row.spl == pytest.approx(float(np.mean(spls)))
    assert row.ci == tuple(float(v) for v in mean_ci(np.asarray(spls), clusters=worlds))
    assert row.stale_target_visits == pytest.approx(1.5)
    assert spl_by_goal(keep, "memory", condition="cold") == []


def test_spl_by_goal_splits_by_the_given_labels_and_needs_two_worlds_for_a_ci() -> None:
    records = [rec(0, spl=0.2, goal_changed=False), rec(0, spl=0.4, goal_changed=False, task_index=None)]
    rows = spl_by_goal(records, "memory")
    assert [(r.goals, r.episodes, r.worlds, r.spl) for r in rows] == [("unchanged", 1, 1, 0.2)]
    assert all(math.isnan(v) for v in rows[0].ci)
    relabelled = spl_by_goal(records, "memory", changed=lambda r: True)
    assert [(r.goals, r.episodes) for r in relabelled] == [("changed", 1)]
    missing = spl_by_goal([rec(0, world_seed=None, stale_target_visits=None), rec(1, spl=0.0)], "memory")
    assert missing[0].worlds == 2 and missing[0].stale_target_visits == 0.5


def test_steps_lost_pairs_the_same_episode_of_the_control() -> None:
    stale = [rec(w, steps=50 + 10 * w + k, seed=k) for w in range(3) for k in range(2)]
    stale += [rec(0, steps=999, seed=5)]  # no control episode: left out
    stale += [rec(0, steps=999, goal_changed=False), rec(0, steps=999, task_index=1), rec(0, steps=None)]
    stale += [rec(0, steps=999, agent="other"), rec(0, steps=999, condition="cold")]
    control = [rec(w, agent="mapped", condition="single", steps=40 + k, seed=k) for w in range(3) for k in range(2)]
    control += [rec(0, agent="mapped", condition="warm", steps=1000, seed=0)]  # not the control's condition
    control += [rec(1, agent="nobody", condition="single", steps=1000, seed=0)]
    lost = steps_lost(stale, control, "memory", "mapped", "map", control_condition="single")
    assert lost is not None
    a = np.array([50.0 + 10 * w + k for w in range(3) for k in range(2)])
    b = np.array([40.0 + k for w in range(3) for k in range(2)])
    worlds = [w for w in range(3) for _ in range(2)]
    assert (lost.agent, lost.control, lost.episodes, lost.worlds) == ("memory", "map", 6, 3)
    assert lost.steps_lost == pytest.approx(float(np.mean(a - b)))
    assert lost.ci == tuple(float(v) for v in paired_ci(a, b, difference_of_means, clusters=worlds))


def test_steps_lost_on_unchanged_goals_same_condition_control_and_one_world() -> None:
    stale = [rec(0, steps=30, goal_changed=False), rec(0, steps=30, seed=1)]
    control = [rec(0, agent="fresh", steps=20), rec(0, agent="fresh", steps=10, seed=1)]
    lost = steps_lost(stale, control, "memory", "fresh", "fresh memory", goals_changed=False)
    assert lost is not None and lost.episodes == 1 and lost.steps_lost == 10.0
    assert lost.worlds == 1 and all(math.isnan(v) for v in lost.ci)
    assert steps_lost(stale, control, "memory", "nobody", "x") is None
    none_control = [rec(0, agent="fresh", steps=None, goal_changed=False)]
    assert steps_lost(stale, none_control, "memory", "fresh", "x", goals_changed=False) is None


def test_correction_summary_counts_the_corrected_episodes_and_takes_their_median() -> None:
    records = [rec(w, steps_to_correct=s) for w, s in enumerate((3, 9, 4, 100))]
    records += [rec(5, steps_to_correct=None), rec(6, agent="other", steps_to_correct=1)]
    records += [rec(7, condition="cold", steps_to_correct=1)]
    assert correction_summary(records, "memory") == (4, 6.5)
    assert correction_summary(records, "memory", condition="cold") == (1, 1.0)
    assert correction_summary(records, "nobody") == (0, None)


def test_two_worlds_are_enough_for_an_interval() -> None:
    changed = [rec(0, spl=0.2), rec(0, spl=0.3), rec(1, spl=0.7)]
    (row,) = spl_by_goal(changed, "memory")
    assert row.worlds == 2
    assert row.ci == tuple(float(v) for v in mean_ci(np.asarray([0.2, 0.3, 0.7]), clusters=[0, 0, 1]))
    assert not any(math.isnan(v) for v in row.ci)
    control = [rec(w, agent="fresh", steps=s, seed=k) for w, k, s in ((0, 0, 30), (0, 1, 25), (1, 0, 10))]
    stale = [rec(w, steps=s, seed=k) for w, k, s in ((0, 0, 40), (0, 1, 45), (1, 0, 50))]
    lost = steps_lost(stale, control, "memory", "fresh", "fresh memory")
    assert lost is not None and lost.worlds == 2
    a, b = np.array([40.0, 45.0, 50.0]), np.array([30.0, 25.0, 10.0])
    assert lost.ci == tuple(float(v) for v in paired_ci(a, b, difference_of_means, clusters=[0, 0, 1]))
    assert not any(math.isnan(v) for v in lost.ci)


def test_steps_lost_takes_zero_steps_as_zero_and_leaves_the_first_task_out() -> None:
    stale = [rec(0, steps=0), rec(0, steps=500, task_index=1), rec(0, steps=7, seed=1)]
    control = [rec(0, agent="fresh", steps=4), rec(0, agent="fresh", steps=1, task_index=1)]
    control += [rec(0, agent="fresh", steps=0, seed=1)]
    lost = steps_lost(stale, control, "memory", "fresh", "fresh memory")
    assert lost is not None and lost.episodes == 2 and lost.steps_lost == ((0 - 4) + (7 - 0)) / 2
