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
from embodmem.envs.objects import KINDS, TARGET_KINDS


def negative_prompts(mission: str) -> list[str]:
    """Prompts for every kind of thing not named in ``mission`` (and for open water)."""
    out = ["open water", "the empty seabed"]
    for kind in KINDS[1:]:
        if kind.phrase not in mission:
            out.append(kind.phrase)
    return out


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

    def label(self, vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
        """For each row of ``vectors`` (N, D): the most likely of the eight target kinds and its
        probability (N,)."""
        p = self.probabilities(vectors)[:, : len(TARGET_KINDS)]
        best = p.argmax(axis=1)
        return [TARGET_KINDS[i] for i in best], p[np.arange(len(p)), best]


def centre_view(image: np.ndarray) -> np.ndarray:
    """The middle half of a camera frame's columns, stretched back to the frame's size: what lies
    straight ahead (a cell two cells away fills about a third of the columns), for judging whether
    the target is there rather than beside it."""
    w = image.shape[1]
    return cv2.resize(np.ascontiguousarray(image[:, w // 4 : w - w // 4]), image.shape[1::-1])
