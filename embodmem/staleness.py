"""Staleness: what a memory of a world that has since changed costs an agent.

In a changing world (:mod:`embodmem.envs.changes`) a memory can be wrong, not only incomplete. Per
episode, :class:`StalenessTracker` reads the ground truth step by step (like the other episode
measures) and gives a :class:`Staleness` for the record:

- ``goal_changed``: an instance of the task's goal kind was moved, removed, re-dressed or drifted
  after the sequence began (so what was seen of it before may be stale);
- ``stale_target_visits``: times the robot entered a *stale place*, where a goal instance stood
  before a change (within the success distance of its former cells) and no goal instance stands now:
  the agent went to where a memory said the goal was, and it was no longer there;
- ``steps_to_correct``: from the first step in a stale place (the first contradicting observation:
  the place is in plain view and empty) to the last one (after which the robot never returns to a
  stale place): how long the agent took to stop acting on the stale memory. Behavioural, from the
  ground truth alone, so every agent (memory, text log, VLM) is measured the same way.

Across runs, :func:`steps_lost` pairs each changing-world record with the same episode of a
control: the fresh-memory control (the same changes hoisted before the first task,
``WorldChanges.hoisted``: the same last world, but nothing seen of it is stale) and the
ground-truth-map control (the ``mapped`` agent, which reads the live world), and reports the steps
lost to a stale memory, and warm SPL on changed vs unchanged goals, with world-clustered CIs
(:mod:`embodmem.stats`).

Example:
    >>> from embodmem.metrics_record import EpisodeRecord
    >>> recs = [EpisodeRecord.model_validate({"agent": "memory", "condition": "warm", "world_seed": w,
    ...     "seed": 0, "sequence": "s", "task_index": 2, "steps": 30 + 10 * w, "spl": 0.5, "success": 1,
    ...     "goal_changed": w % 2 == 0, "stale_target_visits": 1, "world_changes": "m"}) for w in range(4)]
    >>> rows = spl_by_goal(recs, "memory")
    >>> [(r.goals, r.episodes) for r in rows]
    [('changed', 2), ('unchanged', 2)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from embodmem.envs.changes import ChangeEvent
from embodmem.envs.ground_truth import GroundTruth
from embodmem.metrics_record import EpisodeRecord, Staleness
from embodmem.stats import difference_of_means, mean_ci, paired_ci

STALE_ACTIONS = ("move", "remove", "replace", "drift")
"""Changes after which what was seen of an object may no longer hold."""


def _after_start(event: ChangeEvent) -> bool:
    """A change made once the sequence had begun (a change before the first task is no news)."""
    return event.task > 1 or event.step > 0


def stale_zone(truth: GroundTruth) -> np.ndarray:
    """(n, n) bool: cells within the success distance of where a goal instance stood before a change
    made once the sequence had begun, and not within it of any goal instance now (never the success
    cells). A change before the first task (the fresh-memory control's) leaves nothing stale."""
    n = truth.world.size
    zone = np.zeros((n, n), dtype=bool)
    former = [
        c
        for e in truth.world_changes
        if e.kind == truth.task.target and e.action in STALE_ACTIONS and _after_start(e)
        for c in e.from_cells
    ]
    if not former:
        return zone
    yy, xx = np.mgrid[0:n, 0:n]
    cells = np.asarray(former, dtype=np.float64)
    near = np.min(np.hypot(xx[None] - cells[:, 0, None, None], yy[None] - cells[:, 1, None, None]), axis=0)
    reach = truth.success_distance_m / truth.cell_size_m + 1e-6
    return (near <= reach) & truth.world.free() & ~truth.success_cells


class StalenessTracker:
    """Measures one changing-world episode (reset with the first truth, update after every step)."""

    def __init__(self, first: GroundTruth) -> None:
        self.name = first.changes or "changes"
        self.steps: list[int] = []
        """Steps at which the robot stood in a stale place."""
        self.visits = 0
        self._inside = False
        self._zone_of: tuple[int, int] = (-1, -1)
        self._zone = np.zeros((1, 1), dtype=bool)
        self._last = first
        self._observe(first)

    def _zone_now(self, truth: GroundTruth) -> np.ndarray:
        key = (len(truth.world_changes), id(truth.success_cells))
        if key != self._zone_of:
            self._zone, self._zone_of = stale_zone(truth), key
        return self._zone

    def _observe(self, truth: GroundTruth) -> None:
        x, y = truth.agent_pos
        inside = bool(self._zone_now(truth)[y, x])
        if inside:
            self.steps.append(truth.step)
            self.visits += not self._inside
        self._inside = inside
        self._last = truth

    def update(self, truth: GroundTruth) -> None:
        self._observe(truth)

    def get(self) -> Staleness:
        last = self._last
        changed = any(
            e.kind == last.task.target and e.action in STALE_ACTIONS and _after_start(e) for e in last.world_changes
        )
        correct = self.steps[-1] - self.steps[0] + 1 if self.steps else None
        return Staleness(self.name, len(last.world_changes), changed, self.visits, correct)


# --------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class GoalRow:
    """Warm SPL of one agent on changed or unchanged goals, with a world-clustered 95% CI."""

    agent: str
    goals: str
    """changed or unchanged."""
    episodes: int
    worlds: int
    spl: float
    ci: tuple[float, float]
    stale_target_visits: float
    """Mean stale-target visits an episode."""


def _mean_ci(values: Sequence[float], worlds: Sequence[int]) -> tuple[float, float]:
    if len(set(worlds)) < 2:
        return (float("nan"), float("nan"))
    lo, hi = mean_ci(np.asarray(values, dtype=np.float64), clusters=list(worlds))
    return float(lo), float(hi)


def spl_by_goal(
    records: Sequence[EpisodeRecord],
    agent: str,
    condition: str = "warm",
    changed: Callable[[EpisodeRecord], bool] | None = None,
) -> list[GoalRow]:
    """SPL of ``agent``'s ``condition`` episodes of changing-world runs after the first task, split by
    whether the goal changed (the record's ``goal_changed``, or ``changed``: e.g. a control's
    episodes labelled by the changing run's); CIs resample whole worlds."""
    is_changed = changed or (lambda r: bool(r.stat("goal_changed")))
    rows = []
    for goals, want in (("changed", True), ("unchanged", False)):
        sel = [
            r
            for r in records
            if r.agent == agent
            and (r.condition is not None and r.condition.value == condition)
            and r.stat("goal_changed") is not None
            and is_changed(r) is want
            and (r.task_index or 0) > 1
            and r.spl is not None
        ]
        if not sel:
            continue
        spls = [float(r.spl or 0.0) for r in sel]
        worlds = [int(r.world_seed or 0) for r in sel]
        visits = [float(r.stat("stale_target_visits") or 0) for r in sel]
        rows.append(
            GoalRow(
                agent,
                goals,
                len(sel),
                len(set(worlds)),
                float(np.mean(spls)),
                _mean_ci(spls, worlds),
                float(np.mean(visits)),
            )
        )
    return rows


def _key(r: EpisodeRecord) -> tuple[object, ...]:
    return (r.sequence, r.world_seed, r.seed, r.task_index)


@dataclass(frozen=True)
class LossRow:
    """Steps an agent lost to stale memory against a control, on changed goals (paired by episode)."""

    agent: str
    control: str
    episodes: int
    worlds: int
    steps_lost: float
    """Mean (steps with stale memory - steps of the control) over the paired episodes."""
    ci: tuple[float, float]


def steps_lost(
    stale: Sequence[EpisodeRecord],
    control: Sequence[EpisodeRecord],
    agent: str,
    control_agent: str,
    control_name: str,
    condition: str = "warm",
    control_condition: str | None = None,
    goals_changed: bool = True,
) -> LossRow | None:
    """Steps ``agent`` took on changed (or unchanged) goals minus the steps the control took in the
    same episode (sequence, world, seed, task); the CI is the paired, world-clustered bootstrap."""
    want_control = control_condition or condition
    controls = {
        _key(r): r
        for r in control
        if r.agent == control_agent
        and r.condition is not None
        and r.condition.value == want_control
        and r.steps is not None
    }
    pairs = [
        (float(r.steps or 0), float(controls[_key(r)].steps or 0), int(r.world_seed or 0))
        for r in stale
        if r.agent == agent
        and r.condition is not None
        and r.condition.value == condition
        and r.stat("goal_changed") is goals_changed
        and (r.task_index or 0) > 1
        and r.steps is not None
        and _key(r) in controls
    ]
    if not pairs:
        return None
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    worlds = [p[2] for p in pairs]
    if len(set(worlds)) >= 2:
        lo, hi = paired_ci(a, b, difference_of_means, clusters=worlds)
        ci = (float(lo), float(hi))
    else:
        ci = (float("nan"), float("nan"))
    return LossRow(agent, control_name, len(pairs), len(set(worlds)), float(np.mean(a - b)), ci)


def correction_summary(
    records: Sequence[EpisodeRecord], agent: str, condition: str = "warm"
) -> tuple[int, float | None]:
    """(episodes with a stale-place visit, median steps to correct) of ``agent``'s changing-world episodes."""
    steps = [
        int(r.stat("steps_to_correct"))
        for r in records
        if r.agent == agent
        and r.condition is not None
        and r.condition.value == condition
        and r.stat("steps_to_correct") is not None
    ]
    return len(steps), (float(np.median(steps)) if steps else None)


# --------------------------------------------------------------------------- the run's report


def _spl_cell(row: GoalRow | None) -> str:
    if row is None:
        return "-"
    ci = "-" if np.isnan(row.ci[0]) else f"{row.ci[0]:.2f}, {row.ci[1]:.2f}"
    return f"{row.spl:.2f} [{ci}]"


def staleness_report(records: Sequence[EpisodeRecord]) -> str | None:
    """The staleness section of a run's printed report (None for a static world's records): per
    agent and condition, stale-target visits, steps to correct, and SPL after the first task on
    changed vs unchanged goals with world-clustered 95% CIs (``-`` with fewer than two worlds).

    Example:
        >>> from embodmem.metrics_record import EpisodeRecord
        >>> recs = [EpisodeRecord.model_validate({"agent": "memory", "condition": "warm", "world_seed": w,
        ...     "seed": 0, "sequence": "s", "task_index": 2, "steps": 30, "spl": 0.5, "success": 1,
        ...     "goal_changed": w % 2 == 0, "stale_target_visits": 1, "steps_to_correct": 3,
        ...     "world_changes": "m"}) for w in range(4)]
        >>> print(staleness_report(recs))
        == changing world: m (stale memory) ==
        agent   cond  episodes  stale visits  corrected  median steps to correct  SPL changed (95% CI)  SPL unchanged (95% CI)
        ------  ----  --------  ------------  ---------  -----------------------  --------------------  ----------------------
        memory  warm         4             4          4                        3  0.50 [0.50, 0.50]     0.50 [0.50, 0.50]
        >>> staleness_report(recs[:0]) is None
        True
    """
    changing = [r for r in records if r.stat("world_changes") is not None and r.condition is not None]
    if not changing:
        return None
    names = sorted({str(r.stat("world_changes")) for r in changing})
    header = (
        "agent",
        "cond",
        "episodes",
        "stale visits",
        "corrected",
        "median steps to correct",
        "SPL changed (95% CI)",
        "SPL unchanged (95% CI)",
    )
    rows: list[tuple[str, ...]] = []
    seen: list[tuple[str, str]] = []
    for r in changing:
        key = (str(r.agent), r.condition.value if r.condition is not None else "")
        if key not in seen:
            seen.append(key)
    for agent, condition in seen:
        mine = [r for r in changing if r.agent == agent and r.condition is not None and r.condition.value == condition]
        visits = sum(int(r.stat("stale_target_visits") or 0) for r in mine)
        corrected, median = correction_summary(mine, agent, condition)
        spl = {row.goals: row for row in spl_by_goal(mine, agent, condition)}

        rows.append(
            (
                agent,
                condition,
                str(len(mine)),
                str(visits),
                str(corrected),
                "-" if median is None else f"{median:.0f}",
                _spl_cell(spl.get("changed")),
                _spl_cell(spl.get("unchanged")),
            )
        )
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    numeric = {2, 3, 4, 5}

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if i in numeric else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths))
        ).rstrip()

    out = [f"== changing world: {', '.join(names)} (stale memory) ==", line(header), line(["-" * w for w in widths])]
    out += [line(row) for row in rows]
    return "\n".join(out)
