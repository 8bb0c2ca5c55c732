"""Captions for training frames, and the prompts used to query and classify with them.

Captions describe what is visible in words an agent's mission would use ("find a sunken ship"),
so that the mission text itself is a good memory query.
"""

from __future__ import annotations

import numpy as np

from embodmem.embedding.frames import CLASS_NAMES, NO_TARGET, kind_phrase
from embodmem.envs.objects import KINDS

TARGET_TEMPLATES = (
    "{p}",
    "find {p}",
    "a photo of {p} underwater",
    "{p} on the seabed",
    "{p} in {water} water",
    "find {p} in {water} water",
    "a camera view of {p}",
)
EMPTY_TEMPLATES = ("open water", "the empty seabed", "{p} on the seabed", "a camera view of {p}", "nothing of interest")


def caption(label: int, deep: bool, distractor: int, rng: np.random.Generator) -> str:
    """One random caption for a frame with class ``label``."""
    water = ("deep" if deep else "shallow") if rng.random() < 0.7 else ("dark" if deep else "clear")
    if label != NO_TARGET:
        template = TARGET_TEMPLATES[int(rng.integers(len(TARGET_TEMPLATES)))]
        return template.format(p=kind_phrase(label), water=water)
    phrase = KINDS[distractor].phrase if distractor else "open water"
    template = EMPTY_TEMPLATES[int(rng.integers(len(EMPTY_TEMPLATES)))]
    return template.format(p=phrase)


def class_prompts() -> list[str]:
    """One prompt per target class, for zero-shot classification (``NO_TARGET`` excluded)."""
    return [f"a photo of {kind_phrase(i)} underwater" for i in range(len(CLASS_NAMES) - 1)]


def query_prompt(class_id: int, deep: bool) -> str:
    """The memory query an agent would issue: its mission text."""
    return f"find {kind_phrase(class_id)} in deep water" if deep else f"find {kind_phrase(class_id)}"
