"""The EQA scorer's definitions: a choice counts only when it is one of the choices and right; a point
is a hit within WHERE_HIT_CELLS cells; accuracy per type over tours with an interval that resamples
tours; chance a uniform guess (a uniformly random cell for "where"). Fast, no tours walked."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embodmem.eqa.answerers import Answer
from embodmem.eqa.files import Question, QuestionType, Truth
from embodmem.eqa.scoring import (
    WHERE_HIT_CELLS,
    EQARecord,
    InvalidAnswerCounter,
    TypeScore,
    format_table,
    paired_difference,
    score,
    type_scores,
    where_chance,
)
from embodmem.stats import mean_ci, paired_ci

YES_NO = ("yes", "no")


def choice_q(qid: str, tour: str = "t0", qtype: QuestionType = QuestionType.existence) -> Question:
    return Question(qid, tour, qtype, "Did you see oil drums?", ("barrel",), YES_NO)


def where_q(qid: str, tour: str = "t0") -> Question:
    return Question(qid, tour, QuestionType.where, "Point to the barrel", ("barrel",))


def test_choice_scoring() -> None:
    q = choice_q("q")
    right = score("a", q, Truth("yes"), Answer(choice="yes"), 5.0)
    assert right == EQARecord("t0", "q", "existence", "a", "yes", True, True, False)
    wrong = score("a", q, Truth("yes"), Answer(choice="no"), 5.0)
    assert (wrong.correct, wrong.valid, wrong.answer) == (False, True, "no")
    # the truth's own string outside the choices is still not a valid answer
    odd = score(
        "a",
        Question("q2", "t0", QuestionType.count, "How many?", ("barrel",), ("1", "2")),
        Truth("3"),
        Answer(choice="3"),
        5.0,
    )
    assert (odd.correct, odd.valid) == (False, False)
    unreadable = score("a", q, Truth("yes"), Answer(format_error=True), 5.0)
    assert (unreadable.correct, unreadable.valid, unreadable.format_error) == (False, False, True)
    assert right.error_m is None and right.error_cells is None


@settings(max_examples=60, deadline=None)
@given(
    px=st.floats(-5, 25, allow_nan=False),
    py=st.floats(-5, 25, allow_nan=False),
    cells=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=4),
    cell_m=st.sampled_from([1.0, 5.0]),
)
def test_where_is_a_hit_within_the_hit_distance_of_the_nearest_cell(
    px: float, py: float, cells: list[tuple[int, int]], cell_m: float
) -> None:
    r = score("a", where_q("w"), Truth(cells=tuple(cells)), Answer(point=(px, py)), cell_m)
    d = min(math.hypot(x - px, y - py) for x, y in cells)
    assert r == EQARecord(
        "t0", "w", "where", "a", f"{px:.2f},{py:.2f}", r.correct, True, False, r.error_m, r.error_cells
    )
    assert r.error_cells == pytest.approx(d) and r.error_m == pytest.approx(d * cell_m)
    assert r.correct == (d <= WHERE_HIT_CELLS)
    assert r.answer == f"{px:.2f},{py:.2f}"


def test_where_boundary_and_missing_point() -> None:
    truth = Truth(cells=((10, 10),))
    at = score("a", where_q("w"), truth, Answer(point=(12.0, 10.0)), 5.0)
    beyond = score("a", where_q("w"), truth, Answer(point=(12.5, 10.0)), 5.0)
    assert at.correct and not beyond.correct
    none = score("a", where_q("w"), truth, Answer(format_error=True), 5.0)
    assert none == EQARecord("t0", "w", "where", "a", "", False, False, True)


def test_invalid_answers_are_counted_per_answerer_and_logged_once(caplog) -> None:
    q = choice_q("q")
    counter = InvalidAnswerCounter()
    with caplog.at_level(logging.WARNING, logger="embodmem.eqa"):
        for name, answer in [
            ("a", Answer(format_error=True)),
            ("a", Answer(choice="x")),
            ("b", Answer()),
            ("b", Answer(choice="yes")),
            ("c", Answer(choice="maybe")),
        ]:
            counter.add(score(name, q, Truth("yes"), answer, 5.0), q)
        counter.add(score("d", where_q("w"), Truth(cells=((0, 0),)), Answer(), 5.0), where_q("w"))
    assert dict(counter.counts) == {"a": 2, "b": 1, "c": 1, "d": 1}
    assert [r.getMessage() for r in caplog.records] == [
        "answerer a gave an unreadable reply to question q (allowed: yes, no): scored wrong and counted",
        "answerer b gave no answer (nothing it kept names the kind) to question q (allowed: yes, no): "
        "scored wrong and counted",
        "answerer c gave 'maybe' to question q (allowed: yes, no): scored wrong and counted",
        "answerer d gave no answer (nothing it kept names the kind) to question w (allowed: a point (x, y)): "
        "scored wrong and counted",
    ]


def _records() -> tuple[list[EQARecord], dict[str, Question], dict[str, Truth]]:
    """Answerer a: 3 of 4 existence questions right over two tours (2 + 1); b: 1 of 4. One where
    question per tour; a hits one of them."""
    questions, truths, records = {}, {}, []
    for tour, oks_a, oks_b in (("t0", (1, 1), (0, 0)), ("t1", (1, 0), (1, 0))):
        for k in range(2):
            q = choice_q(f"{tour}:e{k}", tour)
            questions[q.id], truths[q.id] = q, Truth("yes")
            records.append(score("a", q, truths[q.id], Answer(choice="yes" if oks_a[k] else "no"), 5.0))
            records.append(score("b", q, truths[q.id], Answer(choice="yes" if oks_b[k] else "maybe"), 5.0))
        w = where_q(f"{tour}:w", tour)
        questions[w.id], truths[w.id] = w, Truth(cells=((5, 5),))
        records.append(score("a", w, truths[w.id], Answer(point=(5.0, 6.0) if tour == "t0" else (9.0, 8.0)), 5.0))
    return records, questions, truths


def test_type_scores_per_answerer_and_type() -> None:
    records, questions, truths = _records()
    scores = type_scores(records, questions, truths, world_size=12)
    assert [(s.answerer, s.type, s.questions) for s in scores] == [
        ("a", "existence", 4),
        ("a", "where", 2),
        ("b", "existence", 4),
    ]
    a_exist, a_where, b_exist = scores
    assert a_exist.accuracy == 0.75 and b_exist.accuracy == 0.25
    assert a_exist.chance == 0.5 and a_exist.invalid == 0 and b_exist.invalid == 3
    # tours as the resampled unit: per-tour (right, asked) pairs, the ratio of sums
    assert a_exist.ci == paired_ci([2.0, 1.0], [2.0, 2.0], lambda n, d, axis=-1: np.sum(n, axis) / np.sum(d, axis))
    assert a_exist.ci == (0.5, 1.0)
    assert a_exist.median_error_cells is None and a_exist.median_error_m is None
    assert a_where.accuracy == 0.5 and a_where.invalid == 0
    assert a_where.median_error_cells == pytest.approx((1.0 + 5.0) / 2)
    assert a_where.median_error_m == pytest.approx(5.0 * 3.0)
    assert a_where.chance == pytest.approx(where_chance(((5, 5),), 12))


def test_type_scores_order_types_as_defined_not_alphabetically() -> None:
    q = choice_q("c", qtype=QuestionType.count)
    e = choice_q("e")
    records = [
        score("a", q, Truth("yes"), Answer(choice="yes"), 5.0),
        score("a", e, Truth("no"), Answer(choice="no"), 5.0),
    ]
    scores = type_scores(records, {"c": q, "e": e}, {"c": Truth("yes"), "e": Truth("no")}, world_size=5)
    assert [s.type for s in scores] == ["existence", "count"]


@settings(max_examples=30, deadline=None)
@given(cells=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=1, max_size=3, unique=True))
def test_where_chance_is_the_share_of_cells_within_the_hit_distance(cells: list[tuple[int, int]]) -> None:
    size = 10
    hits = sum(
        min(math.hypot(x - cx, y - cy) for cx, cy in cells) <= WHERE_HIT_CELLS for x in range(size) for y in range(size)
    )
    assert where_chance(tuple(cells), size) == pytest.approx(hits / size**2)


def test_where_chance_on_an_asymmetric_instance() -> None:
    # A cell at the world's edge: x and y must not be swapped, nor the hit distance made strict.
    assert where_chance(((0, 3),), 8) == pytest.approx(
        sum(math.hypot(x, y - 3) <= 2.0 for x in range(8) for y in range(8)) / 64
    )
    assert where_chance(((0, 0),), 3) == pytest.approx(6 / 9)  # (0,0) (1,0) (0,1) (1,1) (2,0) (0,2)


def test_paired_difference_keeps_each_tours_two_answerers_together() -> None:
    records, _, _ = _records()
    diff, ci, n = paired_difference(records, "a", "b", "existence")
    assert n == 4 and diff == 0.5
    # per tour: t0 a-b = 2, t1 a-b = 0, each over 2 questions
    assert ci == paired_ci([2.0, 0.0], [2.0, 2.0], lambda n, d, axis=-1: np.sum(n, axis) / np.sum(d, axis))
    assert ci == (0.0, 1.0)
    assert paired_difference(records, "b", "a", "existence")[0] == -0.5
    nothing = paired_difference(records, "a", "b", "where")
    assert math.isnan(nothing[0]) and all(math.isnan(v) for v in nothing[1]) and nothing[2] == 0


def test_paired_difference_uses_only_common_questions() -> None:
    records, _, _ = _records()
    only_a = [r for r in records if not (r.answerer == "b" and r.question == "t1:e0")]
    diff, _, n = paired_difference(only_a, "a", "b", "existence")
    assert n == 3 and diff == pytest.approx((2 - 0 + 0) / 3)


def test_format_table() -> None:
    scores = [
        TypeScore("a", "existence", 4, 0.75, (0.5, 1.0), 0.5, 0),
        TypeScore("a", "where", 2, 0.5, (0.0, 1.0), 0.1234, 1, 3.0, 15.0),
        TypeScore("b", "where", 2, 0.0, (0.0, 0.0), 0.1234, 0),
        TypeScore("c", "existence", 4, 0.25, (0.0, 0.5), 0.5, 2),
    ]
    assert format_table(scores).splitlines() == [
        "| answerer | existence | where |",
        "|---|---|---|",
        "| a | 0.75 [0.50, 1.00] | 0.50 [0.00, 1.00], median 3.0 cells (1 invalid) |",
        "| b |  | 0.00 [0.00, 0.00] |",
        "| c | 0.25 [0.00, 0.50] (2 invalid) |  |",
        "| chance | 0.50 | 0.12 |",
        "| questions | 4 | 2 |",
    ]


def test_mean_ci_agrees_with_the_tour_ratio_when_every_tour_asks_alike() -> None:
    # With the same number of questions per tour, the ratio of sums is the mean of tour accuracies.
    records, questions, truths = _records()
    a_exist = type_scores(records, questions, truths, world_size=12)[0]
    assert a_exist.ci == mean_ci([1.0, 0.5])
