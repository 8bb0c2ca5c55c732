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
from embodmem.envs.objects import KINDS


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


def centre_view(image: np.ndarray) -> np.ndarray:
    """The middle half of a camera frame's columns, stretched back to the frame's size: what lies
    straight ahead (a cell two cells away fills about a third of the columns), for judging whether
    the target is there rather than beside it."""
    w = image.shape[1]
    return cv2.resize(np.ascontiguousarray(image[:, w // 4 : w - w // 4]), image.shape[1::-1])
