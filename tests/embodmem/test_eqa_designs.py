"""The question-answering designs table: accuracy, its paired difference to the frame memory, what was kept."""

from __future__ import annotations

import math

from embodmem.eqa.designs import KeptAfterTour, design_rows, kept_from_stats
from embodmem.eqa.scoring import EQARecord


def record(answerer: str, question: int, correct: bool) -> EQARecord:
    return EQARecord(f"tour{question % 4}", f"q{question}", "existence", answerer, "yes", correct, True, False)


def test_the_reference_comes_first_and_differences_pair_the_same_questions() -> None:
    records = [record("textlog", i, i % 4 != 0) for i in range(16)] + [
        record("frame_memory", i, True) for i in range(12)
    ]
    rows = design_rows(records, kept={}, answer_ms={})
    assert [r.design for r in rows] == ["frame_memory", "textlog"]
    text = rows[1]
    # 16 questions answered, accuracy over all of them; the difference only over the 12 both answered.
    assert text.questions == 16 and text.accuracy == 12 / 16
    assert math.isclose(text.d_accuracy or 0.0, 9 / 12 - 1.0)
    assert text.d_lo <= (text.d_accuracy or 0.0) <= text.d_hi


def test_what_was_kept_is_the_mean_over_tours_and_time_the_median() -> None:
    records = [record("frame_memory", i, True) for i in range(4)]
    kept = {"frame_memory": [KeptAfterTour(10, 100), KeptAfterTour(30, 300), KeptAfterTour(None, None)]}
    (row,) = design_rows(records, kept=kept, answer_ms={"frame_memory": [1.0, 5.0, 2.0]})
    assert (row.frames_kept, row.bytes_kept, row.answer_ms_p50) == (20.0, 200.0, 2.0)
    assert kept_from_stats({"requests": 3.0, "bytes_kept": 5.0}) == KeptAfterTour(None, 5.0)


def test_without_the_reference_there_is_no_difference() -> None:
    (row,) = design_rows([record("textlog", i, True) for i in range(3)], kept={}, answer_ms={})
    assert row.d_accuracy is None and math.isnan(row.d_lo)
