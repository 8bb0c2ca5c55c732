"""The agents' per-step fast paths give exactly what the general code gives."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from embodmem.agents.explorer import mean_abs_difference
from embodmem.agents.mapping import OccupancyGrid
from embodmem.agents.recognizer import VARIANTS, KindLabeller, TargetRecognizer
from embodmem.embedding.embedder import ClipEmbedder
from embodmem.envs.spec import SensorSpec
from embodmem.envs.underwater import UnderwaterEnv
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


@pytest.fixture(scope="module")
def vectors(embedder: ClipEmbedder) -> np.ndarray:
    """Random unit vectors and the vectors of real frames (a tour of a dev world)."""
    random = np.random.default_rng(0).standard_normal((300, embedder.dim)).astype(np.float32)
    env = UnderwaterEnv(task="barrel", world_seed=1000, max_steps=100)
    obs, _ = env.reset(seed=0)
    frames = []
    for step in range(40):
        frames.append(obs["image"])
        obs, *_ = env.step(step % 3)
    real = embedder.embed_images(np.stack(frames))
    return np.concatenate([random / np.linalg.norm(random, axis=1, keepdims=True), real])


@pytest.mark.parametrize("mission", ["find oil drums", f"find {VARIANTS[0].phrase}", f"find {VARIANTS[-1].phrase}"])
def test_one_frame_probability_is_bit_identical(embedder: ClipEmbedder, vectors: np.ndarray, mission: str) -> None:
    recognizer = TargetRecognizer(embedder)
    recognizer.set_mission(mission)
    for vector in vectors:
        assert recognizer.probability_of(vector) == float(recognizer.probability(vector)[0])


def test_one_frame_kind_probabilities_are_bit_identical(embedder: ClipEmbedder, vectors: np.ndarray) -> None:
    labeller = KindLabeller(embedder)
    for vector in vectors:
        fast, general = labeller.probabilities_of(vector), labeller.probabilities(vector[None])[0]
        assert fast.dtype == general.dtype and fast.tobytes() == general.tobytes()


def test_ray_fans_are_cached_per_dtype_and_byte_order() -> None:
    grid = OccupancyGrid(SensorSpec(5.0, 64, 75.0, 40.0, 3, 60.0, 40.0, 16))
    angles = np.linspace(-0.5, 0.5, 11)
    swapped = angles.astype(">f8")
    other = angles.view(">f8")  # the same bytes, other values
    for fan in (angles, swapped, other, angles.astype(np.float32)):
        x, y = grid.rays(1, fan, 4.0)
        t = np.arange(0.25, 4.0, 0.25)
        a = np.pi / 2 + fan
        assert np.array_equal(x, np.cos(a)[:, None] * t[None, :], equal_nan=True)
        assert np.array_equal(y, np.sin(a)[:, None] * t[None, :], equal_nan=True)


def test_mean_abs_difference_is_numpys_to_the_last_bit() -> None:
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (200, 16, 16, 3), dtype=np.uint8)
    frames[1] = frames[0]
    frames[2], frames[3] = 0, 255
    for a, b in zip(frames[:-1], frames[1:]):
        assert mean_abs_difference(a, b) == float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())
