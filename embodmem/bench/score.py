"""The pinned scorer: a result's figures from its per-episode records alone.

``verify`` runs this same function on the shipped records and compares every number with the result
file, so the scorer is versioned with the spec (:data:`SCORER` must equal the spec's
``scoring.scorer``). What it computes (spec v1):

- per sequence, the scored condition (warm for an agent that carries memory, else single): mean SPL,
  success and steps of the later tasks (the second task onwards: where memory can help), SPL of every
  task, and for memory carriers warm minus cold SPL and cold/warm steps, paired by world and task;
- per group, each world's mean over the sequences of their later-task SPL, then the mean over worlds;
- question answering: the share answered right;
- changing-world sequences (records with ``goal_changed``), from scorer 2 on the same figures plus, over
  the revisits of the scored condition (tasks whose goal was asked for before in the world): SPL on
  changed and on unchanged goals, stale-target visits per changed-goal revisit, and steps to correct
  over the episodes that entered a stale place (:class:`~embodmem.bench.schema.StalenessScore`).
  Static records score the same under scorer 1 and 2.

Episodes an error stopped count as failures (success 0, SPL 0), never as missing. Every interval is
the project's 95% percentile bootstrap (embodmem.stats) resampling whole worlds (tours for answers):
a world's tasks share its seabed and what the robot learnt there.

Example:
    >>> recs = [BenchRecord("category", "episode", {"sequence": "s", "world_seed": w, "task_index": t,
    ...     "condition": "single", "agent": "explorer", "spl": 0.5 * w, "success": 1, "steps": 10})
    ...     for w in (0, 1) for t in (1, 2)]
    >>> [round(g.score.mean, 3) for g in score_groups(recs)]
    [0.25]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from pydantic import JsonValue

from embodmem.bench.records import BenchRecord
from embodmem.bench.schema import EQAScore, GroupScore, Interval, SequenceScore, StalenessScore
from embodmem.stats import difference_of_means, mean_ci, paired_ci, ratio_of_means

SCORERS: tuple[str, ...] = ("embodmem-bench-score/1", "embodmem-bench-score/2")
"""Every scorer this package scores with (a spec's ``scoring.scorer``): 2 adds the changing world's
staleness figures, which static records do not have, so 1 and 2 agree on them."""
SCORER = SCORERS[-1]
"""The newest scorer."""


def _number(record: dict[str, JsonValue], key: str) -> float:
    value = record.get(key)
    if record.get("aborted") or value is None:
        return 0.0  # an aborted episode is a failure: no success, no SPL
    assert isinstance(value, int | float), f"{key} is not a number"
    return float(value)


def _steps(record: dict[str, JsonValue]) -> float:
    value = record.get("steps") if not record.get("aborted") else record.get("steps_before_abort")
    return float(value) if isinstance(value, int | float) else 0.0


def _interval(values: Sequence[float], clusters: Sequence[object]) -> Interval:
    if not values:
        return Interval(mean=None, lo=None, hi=None, n=0)
    return Interval.of(float(np.mean(values)), mean_ci(values, clusters=list(clusters)), len(values))


def _world(record: dict[str, JsonValue]) -> int:
    world = record.get("world_seed")
    assert isinstance(world, int), "world_seed is not an integer"
    return world


def _task_index(record: dict[str, JsonValue]) -> int:
    index = record.get("task_index")
    assert isinstance(index, int), "task_index is not an integer"
    return index


def scored_condition(records: list[dict[str, JsonValue]]) -> str:
    """warm when the sequence ran warm (an agent that carries memory), else single."""
    return "warm" if any(r.get("condition") == "warm" for r in records) else "single"


def score_sequence(sequence: str, records: list[dict[str, JsonValue]]) -> SequenceScore:
    """One sequence's figures from its episode records (every condition, no GEM rows)."""
    condition = scored_condition(records)
    main = [r for r in records if r.get("condition") == condition]
    later = [r for r in main if _task_index(r) >= 2]
    worlds = [_world(r) for r in later]
    warm_minus_cold = steps_ratio = None
    if condition == "warm":
        cold = {(_world(r), _task_index(r)): r for r in records if r.get("condition") == "cold"}
        pairs = [(r, cold[(_world(r), _task_index(r))]) for r in later if (_world(r), _task_index(r)) in cold]
        w_spl = np.array([_number(w, "spl") for w, _ in pairs])
        c_spl = np.array([_number(c, "spl") for _, c in pairs])
        w_steps = np.array([_steps(w) for w, _ in pairs])
        c_steps = np.array([_steps(c) for _, c in pairs])
        clusters = [_world(w) for w, _ in pairs]
        if pairs:
            warm_minus_cold = Interval.of(
                float(difference_of_means(w_spl, c_spl)),
                paired_ci(w_spl, c_spl, difference_of_means, clusters=clusters),
                len(pairs),
            )
            steps_ratio = Interval.of(
                float(ratio_of_means(w_steps, c_steps)),
                paired_ci(w_steps, c_steps, ratio_of_means, clusters=clusters),
                len(pairs),
            )
    return SequenceScore(
        sequence=sequence,
        condition=condition,
        worlds=len({_world(r) for r in main}),
        episodes=len(main),
        aborted=sum(bool(r.get("aborted")) for r in main),
        later_spl=_interval([_number(r, "spl") for r in later], worlds),
        later_success=_interval([_number(r, "success") for r in later], worlds),
        later_steps=_interval([_steps(r) for r in later], worlds),
        all_spl=_interval([_number(r, "spl") for r in main], [_world(r) for r in main]),
        warm_minus_cold_spl=warm_minus_cold,
        steps_cold_over_warm=steps_ratio,
        staleness=score_staleness(main),
    )


def revisits(records: list[dict[str, JsonValue]]) -> list[dict[str, JsonValue]]:
    """The records of one condition whose task an earlier task of the same world asked for too."""
    asked: dict[int, dict[int, str]] = defaultdict(dict)
    for r in records:
        asked[_world(r)][_task_index(r)] = str(r.get("task"))
    return [
        r
        for r in records
        if any(i < _task_index(r) and task == str(r.get("task")) for i, task in asked[_world(r)].items())
    ]


def score_staleness(records: list[dict[str, JsonValue]]) -> StalenessScore | None:
    """The staleness figures of one condition's records of a changing world (None: a static world).

    >>> recs = [{"world_seed": w, "task_index": t, "task": "wreck", "condition": "warm", "spl": s,
    ...     "goal_changed": t == 2 and w == 0, "stale_target_visits": v, "steps_to_correct": c}
    ...     for w, t, s, v, c in [(0, 1, 1.0, 0, None), (0, 2, 0.2, 2, 9), (1, 1, 1.0, 0, None), (1, 2, 0.8, 0, None)]]
    >>> st = score_staleness(recs)
    >>> st.changed_spl.mean, st.unchanged_spl.mean, st.stale_target_visits.mean, st.steps_to_correct.mean
    (0.2, 0.8, 2.0, 9.0)
    """
    if not any(r.get("goal_changed") is not None for r in records):
        return None
    again = revisits(records)
    changed = [r for r in again if r.get("goal_changed")]
    unchanged = [r for r in again if not r.get("goal_changed")]
    corrected = [r for r in again if isinstance(r.get("steps_to_correct"), int)]
    return StalenessScore(
        changed_spl=_interval([_number(r, "spl") for r in changed], [_world(r) for r in changed]),
        unchanged_spl=_interval([_number(r, "spl") for r in unchanged], [_world(r) for r in unchanged]),
        stale_target_visits=_interval(
            [_number(r, "stale_target_visits") for r in changed], [_world(r) for r in changed]
        ),
        steps_to_correct=_interval([_number(r, "steps_to_correct") for r in corrected], [_world(r) for r in corrected]),
    )


def score_groups(records: list[BenchRecord]) -> list[GroupScore]:
    """Every episode group's score, in the order the groups first appear in ``records``."""
    by_group: dict[str, dict[str, list[dict[str, JsonValue]]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.kind == "episode" and r.record.get("condition") != "eval":
            sequence = r.record.get("sequence")
            assert isinstance(sequence, str), "an episode record without a sequence"
            by_group[r.group][sequence].append(r.record)
    scores = []
    for group, sequences in by_group.items():
        per_world: dict[int, list[float]] = defaultdict(list)
        for records_of_sequence in sequences.values():
            scored = scored_condition(records_of_sequence)
            world_values: dict[int, list[float]] = defaultdict(list)
            for rec in records_of_sequence:
                if rec.get("condition") == scored and _task_index(rec) >= 2:
                    world_values[_world(rec)].append(_number(rec, "spl"))
            for world, values in world_values.items():
                per_world[world].append(float(np.mean(values)))
        worlds = sorted(per_world)
        world_scores = [float(np.mean(per_world[w])) for w in worlds]
        scores.append(
            GroupScore(
                group=group,
                score=_interval(world_scores, worlds),
                sequences=[score_sequence(name, recs) for name, recs in sequences.items()],
            )
        )
    return scores


def score_answers(records: list[BenchRecord]) -> EQAScore | None:
    """The question-answering score (None when the run answered no question)."""
    answers = [line.record for line in records if line.kind == "answer"]
    if not answers:
        return None
    tours = [str(a.get("tour")) for a in answers]
    correct = [float(bool(a.get("correct"))) for a in answers]
    by_type: dict[str, tuple[list[float], list[str]]] = defaultdict(lambda: ([], []))
    for a, c, t in zip(answers, correct, tours):
        values, clusters = by_type[str(a.get("type"))]
        values.append(c)
        clusters.append(t)
    return EQAScore(
        answerer=str(answers[0].get("answerer")),
        questions=len(answers),
        tours=len(set(tours)),
        accuracy=_interval(correct, tours),
        by_type={k: _interval(v, c) for k, (v, c) in sorted(by_type.items())},
    )
