"""The agents' per-step fast paths give exactly what the general code gives."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from embodmem.agents.recognizer import VARIANTS, KindLabeller, TargetRecognizer
from embodmem.embedding.embedder import ClipEmbedder
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


@pytest.fixture(scope="module")
def embedder() -> ClipEmbedder:
    return ClipEmbedder(threads=1)


def _unit_vectors(dim: int, n: int = 400) -> np.ndarray:
    vectors = np.random.default_rng(0).standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.parametrize("mission", ["find oil drums", f"find {VARIANTS[0].phrase}", f"find {VARIANTS[-1].phrase}"])
def test_one_frame_probability_is_bit_identical(embedder: ClipEmbedder, mission: str) -> None:
    recognizer = TargetRecognizer(embedder)
    recognizer.set_mission(mission)
    for vector in _unit_vectors(embedder.dim):
        assert recognizer.probability_of(vector) == float(recognizer.probability(vector)[0])


def test_one_frame_kind_probabilities_are_bit_identical(embedder: ClipEmbedder) -> None:
    labeller = KindLabeller(embedder)
    for vector in _unit_vectors(embedder.dim):
        fast, general = labeller.probabilities_of(vector), labeller.probabilities(vector[None])[0]
        assert fast.dtype == general.dtype and fast.tobytes() == general.tobytes()
