"""Captions for training frames, and the prompts used to query and classify with them.

Captions describe what is visible in words an agent's mission would use ("find a sunken ship"),
so that the mission text itself is a good memory query.
"""

from __future__ import annotations

import numpy as np

from embodmem.embedding.frames import CLASS_NAMES, NO_TARGET, kind_phrase
from embodmem.envs.objects import KIND_VARIANTS, KINDS, VARIANTS

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


VARIANT_CAPTION_SHARE = 0.5
"""Share of target captions that name the instance's variant ("the oil drums with a yellow band");
the others name only the kind, so category missions stay good queries for every variant."""


def caption(label: int, deep: bool, distractor: int, rng: np.random.Generator, variant: int = -1) -> tuple[str, bool]:
    """One random caption for a frame with class ``label`` (and ``variant`` of it, when >= 0), and
    whether it names the variant (then only frames of that variant are its positives)."""
    water = ("deep" if deep else "shallow") if rng.random() < 0.7 else ("dark" if deep else "clear")
    if label != NO_TARGET:
        template = TARGET_TEMPLATES[int(rng.integers(len(TARGET_TEMPLATES)))]
        if variant >= 0 and rng.random() < VARIANT_CAPTION_SHARE:
            return template.format(p=variant_phrase(label, variant), water=water), True
        return template.format(p=kind_phrase(label), water=water), False
    phrase = KINDS[distractor].phrase if distractor else "open water"
    template = EMPTY_TEMPLATES[int(rng.integers(len(EMPTY_TEMPLATES)))]
    return template.format(p=phrase), False


def variant_phrase(class_id: int, variant: int) -> str:
    """The words naming one variant of a target class ("the capsized sunken ship")."""
    return KIND_VARIANTS[CLASS_NAMES[class_id]][variant].phrase


def variant_prompts(class_id: int) -> list[str]:
    """Zero-shot prompts for the variants of one class (classification among same-kind variants)."""
    return [f"a photo of {v.phrase} underwater" for v in KIND_VARIANTS[CLASS_NAMES[class_id]]]


def variant_query_prompt(variant_number: int, deep: bool) -> str:
    """A description goal's mission, the memory query for one variant (index into ``VARIANTS``)."""
    phrase = VARIANTS[variant_number].phrase
    return f"find {phrase} in deep water" if deep else f"find {phrase}"


def class_prompts() -> list[str]:
    """One prompt per target class, for zero-shot classification (``NO_TARGET`` excluded)."""
    return [f"a photo of {kind_phrase(i)} underwater" for i in range(len(CLASS_NAMES) - 1)]


def query_prompt(class_id: int, deep: bool) -> str:
    """The memory query an agent would issue: its mission text."""
    return f"find {kind_phrase(class_id)} in deep water" if deep else f"find {kind_phrase(class_id)}"
