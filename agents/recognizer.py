"""Is the mission's target in this frame? Open-vocabulary recognition with the CLIP embedder.

The frame's embedding is compared with the mission text and with "negative" prompts for everything
else a survey robot may meet (the other target kinds, the distractors, open water). The softmax
over those prompts, at the model's own logit scale, gives the probability that the frame shows the
mission's target. Only text and pixels are used: no positions, no grid.
"""

from __future__ import annotations

import cv2
import numpy as np

from embodmem.agents.base import RecognitionEmbedder
from embodmem.envs.objects import KINDS, TARGET_KINDS, VARIANTS
from embodmem.envs.objects import Variant as Appearance
from embodmem.envs.spec import Observation
from embodmem.envs.tasks import IMAGE_MISSION

DEEP_SUFFIX = " in deep water"


DETECTION_RANGE_CELLS: dict[str, tuple[int, int]] = {
    "mining_robot": (3, 2),
    "pipeline": (2, 2),
    "barrel": (3, 2),
    "wreck": (4, 4),
    "electrical_box": (3, 2),
    "wind_station": (4, 4),
    "aircraft": (3, 2),
    "landing_platform": (3, 2),
}
"""Per target kind, (clear water, deep water): the farthest distance in cells at which the
recogniser finds the kind in at least 90% of frames facing it, straight ahead or one cell to the
side, on calibration worlds 500-529 (``python tools/detection_range.py``). Deep water was
measured for the kinds with deep tasks (pipeline, barrel, wreck, wind station); the others take the
smallest deep range measured (2)."""

SHALLOW_VIEW_RANGE_M = 40.0
"""The visibility the clear-water ranges were measured at; below it the deep-water ranges apply."""


FOUND_UP_TO_CELLS: dict[str, tuple[int | None, int | None]] = {
    "mining_robot": (3, 3),
    "pipeline": (None, None),
    "barrel": (4, 3),
    "wreck": (None, None),
    "electrical_box": (3, 3),
    "wind_station": (None, 5),
    "aircraft": (5, 5),
    "landing_platform": (4, 4),
}
"""Per target kind, (clear water, deep water): the farthest distance in cells at which the
recogniser finds the kind in at least 10% of frames facing it, straight ahead or one cell to the
side, on the same calibration frames as :data:`DETECTION_RANGE_CELLS` (``python
tools/detection_range.py``); ``None``: still found at the farthest distance measured (6
cells). Deep water was measured for the kinds with deep tasks; the others keep their clear-water
value, which fog can only shorten. A remembered sighting of the kind did not show it from farther
(``recall_within_found_range``)."""


def found_up_to(kind: str, view_range_m: float) -> int | None:
    """Cells beyond which the recogniser does not find ``kind`` in this light (None: no limit
    within the distances measured).

    >>> found_up_to("barrel", 40.0), found_up_to("barrel", 25.0), found_up_to("wreck", 25.0)
    (4, 3, None)
    """
    shallow, deep = FOUND_UP_TO_CELLS[kind]
    return shallow if view_range_m >= SHALLOW_VIEW_RANGE_M else deep


def detection_range(kind: str, view_range_m: float) -> int:
    """Cells within which the recogniser reliably finds ``kind`` in water of ``view_range_m``
    visibility (:data:`DETECTION_RANGE_CELLS`).

    >>> detection_range("barrel", 40.0), detection_range("barrel", 25.0), detection_range("wreck", 25.0)
    (3, 2, 4)
    """
    shallow, deep = DETECTION_RANGE_CELLS[kind]
    return shallow if view_range_m >= SHALLOW_VIEW_RANGE_M else deep


def mission_kind(mission: str) -> str | None:
    """The target kind a mission asks for (by its phrase, or by the variant it names).

    >>> mission_kind("find oil drums in deep water"), mission_kind("find open water")
    ('barrel', None)
    """
    variant = named_variant(mission)
    if variant is not None:
        return variant.kind
    named = [k for k in KINDS if k.is_target and k.phrase in mission]
    return max(named, key=lambda k: len(k.phrase)).name if named else None


def named_variant(mission: str) -> Appearance | None:
    """The appearance variant a description mission names ("find the capsized sunken ship"), if any."""
    named = [v for v in VARIANTS if v.phrase in mission]
    return max(named, key=lambda v: len(v.phrase)) if named else None


def negative_prompts(mission: str) -> list[str]:
    """Prompts for every kind of thing not named in ``mission`` (and for open water); a mission that
    names one instance by its variant also gets the same kind's other variants as negatives, so a
    sibling (the upright ship when the capsized one is wanted) scores low."""
    out = ["open water", "the empty seabed"]
    variant = named_variant(mission)
    for kind in KINDS[1:]:
        if kind.phrase not in mission and (variant is None or kind.name != variant.kind):
            out.append(kind.phrase)
    if variant is not None:
        out += [v.phrase for v in VARIANTS if v.kind == variant.kind and v.index != variant.index]
    return out


def check_goal_image(goal_image: object, shape: tuple[int, ...]) -> np.ndarray:
    """A goal image as the environment declares it ((S, S, 3) uint8, S the camera's side), or a one-line
    refusal naming what came instead."""
    if not isinstance(goal_image, np.ndarray):
        raise ValueError(f"goal_image: expected a numpy array {shape} uint8, got {type(goal_image).__name__}")
    if goal_image.shape != shape or goal_image.dtype != np.uint8:
        raise ValueError(f"goal_image: shape {goal_image.shape} dtype {goal_image.dtype}; allowed: shape {shape} uint8")
    if not goal_image.any():
        raise ValueError("goal_image: all zeros (no goal image) for an image goal")
    return goal_image


def describe_goal_image(embedder: RecognitionEmbedder, goal_image: np.ndarray) -> Appearance:
    """The variant whose words best match the goal image (zero-shot over every variant's prompt):
    an image goal becomes a description goal the recogniser and the memory query can use."""
    vector = embedder.embed_images(goal_image[None])[0]
    prompts = embedder.embed_texts([f"a photo of {v.phrase} underwater" for v in VARIANTS])
    return VARIANTS[int(np.argmax(prompts @ vector))]


class TargetRecognizer:
    """Scores frames (unit vectors) by the probability that they show the mission's target."""

    def __init__(self, embedder: RecognitionEmbedder, logit_scale: float | None = None):
        self.embedder = embedder
        self.logit_scale = embedder.logit_scale if logit_scale is None else logit_scale
        self.mission: str | None = None
        self.prompts = np.zeros((0, 1), np.float32)

    def set_mission(self, mission: str) -> None:
        """Embed the mission and its negatives once per task."""
        if mission != self.mission:
            self.mission = mission
            self.prompts = self.embedder.embed_texts([mission] + negative_prompts(mission))

    def set_goal(self, observation: Observation) -> None:
        """Take the task's goal from an observation: its mission text, or for an image goal the words
        of the variant the goal image shows (:func:`describe_goal_image`), with the mission's light."""
        mission = str(observation["mission"])
        if mission.startswith(IMAGE_MISSION):
            image = observation.get("goal_image")
            shape = observation["image"].shape
            variant = describe_goal_image(self.embedder, check_goal_image(image, shape))
            mission = f"find {variant.phrase}" + (DEEP_SUFFIX if mission.endswith(DEEP_SUFFIX) else "")
        self.set_mission(mission)

    @property
    def query(self) -> np.ndarray:
        """The mission's own text vector (the memory query)."""
        return self.prompts[0]

    def probability(self, vectors: np.ndarray) -> np.ndarray:
        """P(target) for each row of ``vectors`` (N, D) -> (N,)."""
        logits = self.logit_scale * (np.atleast_2d(vectors) @ self.prompts.T)
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p[:, 0] / p.sum(axis=1)

    def probability_of(self, vector: np.ndarray) -> float:
        """:meth:`probability` of one (D,) frame, the same float operations in the same order with
        half the numpy calls: the explorer scores a frame every step, where each call costs more
        than the arithmetic."""
        row = (self.logit_scale * (vector[None] @ self.prompts.T))[0]
        row -= max(row.tolist())
        np.exp(row, out=row)
        return float(row[0] / row.sum())


KIND_PROMPT_NAMES: tuple[str, ...] = (
    *TARGET_KINDS,
    "water",
    "seabed",
    *(k.name for k in KINDS[1:] if not k.is_target),
)
"""What each of :class:`KindLabeller`'s prompts names: the eight targets first, then open water, the
empty seabed, and the rocks, reefs and distractors (the negatives of :func:`negative_prompts`)."""


class KindLabeller:
    """Names the target kind each frame most likely shows, with its probability.

    One softmax, at the embedder's logit scale, over every target kind's phrase and the negatives a
    :class:`TargetRecognizer` weighs a mission against (open water, the empty seabed, rocks, reefs,
    distractors). The prompts are embedded once, so labelling a frame costs one small matrix
    product: cheap enough for every frame the memory agent writes. Only the frame's own vector is
    used, never the world.
    """

    def __init__(self, embedder: RecognitionEmbedder, logit_scale: float | None = None):
        self.logit_scale = embedder.logit_scale if logit_scale is None else logit_scale
        by_name = {k.name: k.phrase for k in KINDS}
        by_name.update(water="open water", seabed="the empty seabed")
        self.prompts = embedder.embed_texts([by_name[name] for name in KIND_PROMPT_NAMES])

    def probabilities(self, vectors: np.ndarray) -> np.ndarray:
        """(N, D) frames -> (N, P) probabilities over the prompts of :data:`KIND_PROMPT_NAMES`."""
        logits = self.logit_scale * (np.atleast_2d(vectors) @ self.prompts.T)
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    def probabilities_of(self, vector: np.ndarray) -> np.ndarray:
        """:meth:`probabilities` of one (D,) frame -> (P,): the same float operations in the same
        order with half the numpy calls (the memory agent labels every frame it writes)."""
        row = (self.logit_scale * (vector[None] @ self.prompts.T))[0]
        row -= max(row.tolist())
        np.exp(row, out=row)
        row /= row.sum()
        return row

    def label(self, vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
        """For each row of ``vectors`` (N, D): the most likely of the eight target kinds and its
        probability (N,)."""
        return self.best(self.probabilities(vectors))

    @staticmethod
    def best(probabilities: np.ndarray) -> tuple[list[str], np.ndarray]:
        """:meth:`label` from :meth:`probabilities` already computed (N, P)."""
        p = probabilities[:, : len(TARGET_KINDS)]
        best = p.argmax(axis=1)
        return [TARGET_KINDS[i] for i in best], p[np.arange(len(p)), best]


def centre_view(image: np.ndarray) -> np.ndarray:
    """The middle half of a camera frame's columns, stretched back to the frame's size: what lies
    straight ahead (a cell two cells away fills about a third of the columns), for judging whether
    the target is there rather than beside it."""
    w = image.shape[1]
    return cv2.resize(np.ascontiguousarray(image[:, w // 4 : w - w // 4]), image.shape[1::-1])


def centre_at_scale(image: np.ndarray) -> np.ndarray:
    """The middle half of a camera frame's columns at their own scale, the outermost of them repeated
    out to the frame's edges: what lies straight ahead, with the edges' other objects gone but the
    shapes unstretched (a low pipeline seen side-on from next to it stays a band across the view).

    >>> frame = np.zeros((4, 8, 3), np.uint8); frame[:, 2:6] = np.arange(4)[None, :, None] + 1
    >>> centre_at_scale(frame)[0, :, 0].tolist()
    [1, 1, 1, 2, 3, 4, 4, 4]
    """
    quarter = image.shape[1] // 4
    middle = image[:, quarter : image.shape[1] - quarter]
    return np.pad(middle, ((0, 0), (quarter, quarter), (0, 0)), mode="edge")
