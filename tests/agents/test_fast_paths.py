"""The agents' per-step fast paths give exactly what the general code gives."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from embodmem.memory import FrameMeta, Hit
from embodmem.retrieval import Retrieval, RetrievalEvent


def _validated(hit: Hit, score: float | None = None) -> Retrieval:
    meta = hit.meta
    return Retrieval(
        float(hit.score if score is None else score),
        None if meta.node is None else int(meta.node),
        (float(meta.x), float(meta.y), int(meta.heading)),
        str(meta.task),
        int(meta.step),
        meta.thumbnail,
    )


@pytest.mark.parametrize("score", [None, np.float32(0.25), 0.5, -2.0, 2.0])
@pytest.mark.parametrize(
    "meta",
    [
        FrameMeta("run", "wreck", 0, 5, 3.0, 4.0, 1, node=7),
        FrameMeta("run", "reef", 2, 0, 0.0, 14.5, 3),
        FrameMeta("run", "wreck", 0, 9, 1.0, 2.0, 2, node=0, thumbnail=np.zeros((4, 4, 3), np.uint8)),
    ],
)
def test_retrieval_from_hit_equals_the_validated_one(meta: FrameMeta, score: float | None) -> None:
    hit = Hit(np.float32(0.8), 3, meta)
    fast, checked = Retrieval.from_hit(hit, score), _validated(hit, score)
    assert fast == checked and fast.thumbnail is checked.thumbnail
    assert {k: type(v) for k, v in vars(fast).items()} == {k: type(v) for k, v in vars(checked).items()}
    event = RetrievalEvent(1, "find a wreck", [fast])
    assert RetrievalEvent.from_log(event.to_log()) == event


@pytest.mark.parametrize(
    ("meta", "score", "field"),
    [
        (FrameMeta("run", "wreck", 0, 5, 3.0, 4.0), math.nan, "score"),
        (FrameMeta("run", "wreck", 0, 5, 3.0, 4.0), 2.5, "score"),
        (FrameMeta("run", "wreck", 0, 5, -1.0, 4.0), 0.5, "pose.0"),
        (FrameMeta("run", "wreck", 0, 5, 3.0, -0.5), 0.5, "pose.1"),
    ],
)
def test_retrieval_from_hit_still_refuses_what_breaks_the_schema(meta: FrameMeta, score: float, field: str) -> None:
    with pytest.raises(ValidationError, match=rf"(?m)^{field}$"):
        Retrieval.from_hit(Hit(0.5, 1, meta), score)
