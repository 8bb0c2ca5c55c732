"""Scores: exact for choices, metres for "where"; accuracy per type with CIs over tours.

A choice counts only when it is one of the question's choices: anything else (a reply outside the
choices, an unreadable reply) is scored wrong and counted, with one log line per answerer, so it
never turns into a silent score. "where" is the distance in metres from the pointed cell to the
nearest cell of the instance asked about; a point within ``WHERE_HIT_CELLS`` cells is a hit (the
accuracy the table shows for it). Intervals resample whole tours (embodmem.stats): the questions of
one tour share its walk, so they are not independent.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from embodmem.eqa.answerers import Answer
from embodmem.eqa.files import ALL_QUESTION_TYPES, POINT_TYPES, Question, Truth
from embodmem.eqa.questions import chance
from embodmem.stats import paired_ci

log = logging.getLogger("embodmem.eqa")

WHERE_HIT_CELLS = 2.0


@dataclass(frozen=True)
class EQARecord:
    """One answered question (a line of eqa.jsonl)."""

    tour: str
    question: str
    type: str
    answerer: str
    answer: str
    correct: bool
    valid: bool
    """The answer was one of the choices (or a point, for "where")."""
    format_error: bool
    error_m: float | None = None
    error_cells: float | None = None


def score(answerer: str, question: Question, truth: Truth, answer: Answer, cell_size_m: float) -> EQARecord:
    if question.type.value in POINT_TYPES:
        if answer.point is None:
            return EQARecord(
                question.tour, question.id, question.type.value, answerer, "", False, False, answer.format_error
            )
        px, py = answer.point
        cells = np.asarray(truth.cells, dtype=float)
        d = float(np.min(np.hypot(cells[:, 0] - px, cells[:, 1] - py)))
        return EQARecord(
            question.tour,
            question.id,
            question.type.value,
            answerer,
            f"{px:.2f},{py:.2f}",
            d <= WHERE_HIT_CELLS,
            True,
            answer.format_error,
            d * cell_size_m,
            d,
        )
    valid = answer.choice in question.choices
    return EQARecord(
        question.tour,
        question.id,
        question.type.value,
        answerer,
        answer.choice,
        valid and answer.choice == truth.answer,
        valid,
        answer.format_error,
    )


class InvalidAnswerCounter:
    """Counts answers outside the choices, logging the first of each answerer in one line."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = defaultdict(int)

    def add(self, record: EQARecord, question: Question) -> None:
        if record.valid:
            return
        self.counts[record.answerer] += 1
        if self.counts[record.answerer] == 1:
            if record.format_error:
                shown = "an unreadable reply"
            elif not record.answer:
                shown = "no answer (nothing it kept names the kind)"
            else:
                shown = repr(record.answer)
            allowed = ", ".join(question.choices) if question.choices else "a point (x, y)"
            log.warning(
                "answerer %s gave %s to question %s (allowed: %s): scored wrong and counted",
                record.answerer,
                shown,
                question.id,
                allowed,
            )


@dataclass(frozen=True)
class TypeScore:
    """One answerer on one question type."""

    answerer: str
    type: str
    questions: int
    accuracy: float
    ci: tuple[float, float]
    chance: float
    invalid: int
    median_error_cells: float | None = None
    median_error_m: float | None = None


def _per_tour(records: list[EQARecord], value: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    tours = sorted({r.tour for r in records})
    idx = {t: i for i, t in enumerate(tours)}
    num = np.zeros(len(tours))
    den = np.zeros(len(tours))
    for r in records:
        num[idx[r.tour]] += float(getattr(r, value))
        den[idx[r.tour]] += 1
    return tours, num, den


def _ratio(num: np.ndarray, den: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.sum(num, axis=axis) / np.sum(den, axis=axis)


def type_scores(
    records: list[EQARecord], questions: dict[str, Question], truths: dict[str, Truth], world_size: int
) -> list[TypeScore]:
    """Accuracy per (answerer, type), with a 95% interval resampling tours; chance is a uniform
    guess among the choices, for "where" a uniformly random cell of the world."""
    groups: dict[tuple[str, str], list[EQARecord]] = defaultdict(list)
    for r in records:
        groups[(r.answerer, r.type)].append(r)
    out = []
    order = {t: i for i, t in enumerate(ALL_QUESTION_TYPES)}
    for (name, qtype), recs in sorted(groups.items(), key=lambda kv: (kv[0][0], order[kv[0][1]])):
        _, num, den = _per_tour(recs, "correct")
        acc = float(num.sum() / den.sum())
        ci = paired_ci(num, den, _ratio)
        errors = [r.error_cells for r in recs if r.error_cells is not None]
        if qtype in POINT_TYPES:
            ch = float(np.mean([where_chance(truths[r.question].cells, world_size) for r in recs]))
        else:
            ch = float(np.mean([chance(questions[r.question]) for r in recs]))
        out.append(
            TypeScore(
                name,
                qtype,
                len(recs),
                acc,
                ci,
                ch,
                sum(not r.valid for r in recs),
                float(np.median(errors)) if errors else None,
                float(np.median([r.error_m for r in recs if r.error_m is not None])) if errors else None,
            )
        )
    return out


def where_chance(cells: tuple[tuple[int, int], ...], world_size: int) -> float:
    """Share of the world's cells within ``WHERE_HIT_CELLS`` of the instance: the hit rate of a
    uniformly random point."""
    yy, xx = np.mgrid[0:world_size, 0:world_size]
    c = np.asarray(cells, dtype=float)
    d = np.min(np.hypot(xx[None] - c[:, 0, None, None], yy[None] - c[:, 1, None, None]), axis=0)
    return float((d <= WHERE_HIT_CELLS).mean())


def paired_difference(records: list[EQARecord], a: str, b: str, qtype: str) -> tuple[float, tuple[float, float], int]:
    """Accuracy of ``a`` minus ``b`` on the same questions of ``qtype``, with a 95% interval that
    resamples tours and keeps each tour's two answerers together."""
    ra = {r.question: r for r in records if r.answerer == a and r.type == qtype}
    rb = {r.question: r for r in records if r.answerer == b and r.type == qtype}
    common = sorted(set(ra) & set(rb))
    if not common:
        return (math.nan, (math.nan, math.nan), 0)
    tours = sorted({ra[q].tour for q in common})
    idx = {t: i for i, t in enumerate(tours)}
    diff = np.zeros(len(tours))
    den = np.zeros(len(tours))
    for q in common:
        i = idx[ra[q].tour]
        diff[i] += float(ra[q].correct) - float(rb[q].correct)
        den[i] += 1
    return (float(diff.sum() / den.sum()), paired_ci(diff, den, _ratio), len(common))


def format_table(scores: list[TypeScore]) -> str:
    """A markdown table: one row per answerer, accuracy [CI] per type; "where" adds the median
    error in cells."""
    types = [t for t in ALL_QUESTION_TYPES if any(s.type == t for s in scores)]
    names = list(dict.fromkeys(s.answerer for s in scores))
    by = {(s.answerer, s.type): s for s in scores}
    head = "| answerer | " + " | ".join(types) + " |"
    rows = [head, "|" + "---|" * (len(types) + 1)]
    for name in names:
        cells = []
        for t in types:
            s = by.get((name, t))
            if s is None:
                cells.append("")
                continue
            text = f"{s.accuracy:.2f} [{s.ci[0]:.2f}, {s.ci[1]:.2f}]"
            if s.median_error_cells is not None:
                text += f", median {s.median_error_cells:.1f} cells"
            if s.invalid:
                text += f" ({s.invalid} invalid)"
            cells.append(text)
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    chance_row = []
    for t in types:
        s = next(s for s in scores if s.type == t)
        chance_row.append(f"{s.chance:.2f}")
    rows.append("| chance | " + " | ".join(chance_row) + " |")
    counts = [str(next(s for s in scores if s.type == t).questions) for t in types]
    rows.append("| questions | " + " | ".join(counts) + " |")
    return "\n".join(rows)
