"""Settings of the question-answering mode (the ``experiment.eqa`` group), kept light: the config
layer and the preflight check import it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

EQA_ANSWERERS: tuple[str, ...] = ("blind", "textlog", "frame_memory", "keep_everything", "vlm", "oracle")
"""Answerers of the question-answering mode (embodmem.eqa.answerers registers each)."""


@dataclass
class EQAConfig:
    """Tour + questions mode (``experiment=eqa``): replay recorded tours, ask what the robot saw."""

    enabled: bool = False
    """Run the question-answering mode instead of navigation tasks."""
    questions: str = "dev"
    """The question file: one that ships with embodmem (dev, test; attr_dev, attr_test: the attribute
    questions, in worlds with variants) or a path to one."""
    answerers: list[str] = field(
        default_factory=lambda: ["blind", "textlog", "frame_memory", "keep_everything", "oracle"]
    )
    """Who answers: blind, textlog, frame_memory, keep_everything, vlm (agent.vlm's server), oracle."""
    prior: str = "dev"
    """Question file whose answers the blind answerer learns its per-type prior from (not test)."""
    tours: Optional[int] = None
    """Answer only the first this many tours of the file (None: all)."""
    vlm_frames: int = 6
    """Frames the VLM answerer retrieves and sends with each question."""
