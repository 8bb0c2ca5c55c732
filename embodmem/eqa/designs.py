"""The memory designs side by side on question answering: one row per answerer.

The EQA run's counterpart of the suite's designs table (:func:`embodmem.report.tables.design_table`):
accuracy instead of SPL, and its difference to the stock frame memory with a paired bootstrap 95% CI
over the questions both answered, clustered by tour (questions of one tour share one memory). What a
memory kept is what the answerer's ``stats()`` reports after each tour as ``frames_kept`` and
``bytes_kept`` (the mean over tours; empty for an answerer that keeps nothing it counts), and the time
is the median over its answers.

Example:
    >>> from embodmem.eqa.scoring import EQARecord
    >>> recs = [EQARecord(f"t{i % 3}", f"q{i}", "existence", name, "yes", ok, True, False)
    ...         for i in range(6) for name, ok in (("frame_memory", True), ("textlog", i % 2 == 0))]
    >>> rows = design_rows(recs, kept={}, answer_ms={})
    >>> [(r.design, r.accuracy, r.d_accuracy) for r in rows]
    [('frame_memory', 1.0, 0.0), ('textlog', 0.5, -0.5)]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from embodmem.eqa.scoring import EQARecord
from embodmem.stats import difference_of_means, paired_ci

REFERENCE = "frame_memory"
"""The stock frame memory's answerer: every other design's difference is taken to it."""


@dataclass(frozen=True)
class KeptAfterTour:
    """What one answerer's memory held when one tour's questions were asked."""

    frames: float | None
    bytes: float | None


@dataclass(frozen=True)
class DesignRow:
    """One answerer in the side-by-side table."""

    design: str
    questions: int
    accuracy: float
    d_accuracy: float | None
    """Accuracy minus the reference's over the questions both answered (None without a reference)."""
    d_lo: float
    d_hi: float
    frames_kept: float | None
    bytes_kept: float | None
    answer_ms_p50: float | None


def kept_from_stats(stats: Mapping[str, float]) -> KeptAfterTour:
    """An answerer's ``stats()`` read for what its memory holds."""
    return KeptAfterTour(stats.get("frames_kept"), stats.get("bytes_kept"))


def _mean_of(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else None


def design_rows(
    records: Sequence[EQARecord],
    kept: Mapping[str, Sequence[KeptAfterTour]],
    answer_ms: Mapping[str, Sequence[float]],
    reference: str = REFERENCE,
) -> list[DesignRow]:
    """One row per answerer (the reference first, then in the order they answered)."""
    names = list(dict.fromkeys(r.answerer for r in records))
    names.sort(key=lambda name: name != reference)
    by_question = {(r.answerer, r.question): r for r in records}
    rows = []
    for name in names:
        mine = [r for r in records if r.answerer == name]
        both = [r for r in mine if (reference, r.question) in by_question]
        ref = [by_question[(reference, r.question)] for r in both]
        mine_v, ref_v = [float(r.correct) for r in both], [float(r.correct) for r in ref]
        d = float(difference_of_means(mine_v, ref_v)) if both else None
        lo, hi = (
            paired_ci(mine_v, ref_v, difference_of_means, clusters=[r.tour for r in both]) if both else (math.nan,) * 2
        )
        times = answer_ms.get(name, [])
        rows.append(
            DesignRow(
                design=name,
                questions=len(mine),
                accuracy=float(np.mean([r.correct for r in mine])),
                d_accuracy=d,
                d_lo=lo,
                d_hi=hi,
                frames_kept=_mean_of([k.frames for k in kept.get(name, [])]),
                bytes_kept=_mean_of([k.bytes for k in kept.get(name, [])]),
                answer_ms_p50=float(np.median(times)) if times else None,
            )
        )
    return rows


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def format_design_rows(rows: Sequence[DesignRow], reference: str = REFERENCE) -> str:
    """The table as printed and written to ``eqa.md``, with its title.

    Example:
        >>> print(format_design_rows([DesignRow("frame_memory", 4, 1.0, 0.0, 0.0, 0.0, 12.0, 6144.0, 0.5)]))
        == Memory designs side by side (question answering) ==
        Δ: accuracy minus frame_memory's over the questions both answered [paired 95% CI, clustered by tour]
        | design | questions | accuracy | Δ accuracy [95% CI] | frames | kB | ms/answer |
        |---|---:|---:|---|---:|---:|---:|
        | frame_memory | 4 | 1.00 | - | 12 | 6.1 | 0.500 |
    """
    lines = [
        "== Memory designs side by side (question answering) ==",
        f"Δ: accuracy minus {reference}'s over the questions both answered [paired 95% CI, clustered by tour]",
        "| design | questions | accuracy | Δ accuracy [95% CI] | frames | kB | ms/answer |",
        "|---|---:|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        if r.design == reference or r.d_accuracy is None:
            delta = "-"
        else:
            delta = f"{r.d_accuracy:+.2f} [{_number(r.d_lo, 2)}, {_number(r.d_hi, 2)}]"
        kb = None if r.bytes_kept is None else r.bytes_kept / 1000
        lines.append(
            f"| {r.design} | {r.questions} | {r.accuracy:.2f} | {delta} | {_number(r.frames_kept, 0)} "
            f"| {_number(kb, 1)} | {_number(r.answer_ms_p50, 3)} |"
        )
    return "\n".join(lines)
