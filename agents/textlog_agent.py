"""TextLogAgent: the reference benchmark's own memory, as the anchor that frame memory must beat.

The reference underwater benchmark remembers in text: a FIFO log of what the robot reported (here:
step, pose, kind, confidence), 1,000 entries, plus 500 "important" ones. This agent keeps exactly
that: every frame is classified over the target kinds (the same CLIP recogniser, the same prompts),
and a recognition above ``detect_probability`` is logged. At a task's start (and every few steps) it
looks up the log by the mission's kind and goes where those entries looked, with the memory agent's
evidence rules (viewpoints, rejected places) and map. No image is kept.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from embodmem.agents.base import Observation, RecognitionEmbedder
from embodmem.agents.memory_agent import MemoryAgentConfig, RecallAgent
from embodmem.agents.recognizer import KIND_PROMPT_NAMES, named_variant
from embodmem.atomic import atomic_write_json
from embodmem.envs.objects import KINDS, TARGET_KINDS
from embodmem.envs.spec import SensorSpec
from embodmem.memory.persistence import writer_lock

LOG_ENTRIES = 1000
IMPORTANT_ENTRIES = 500
IMPORTANT_CONFIDENCE = 0.9
"""A recognition at least this confident also enters the "important" log."""


@dataclass(frozen=True)
class LogEntry:
    """One line of the text log: ``step 41 at (12, 7) facing 2: oil drums (0.93)``."""

    task: str
    step: int
    x: int
    y: int
    heading: int
    kind: str
    confidence: float


class TextLogAgent(RecallAgent):
    """The memory agent's skeleton (explorer, carried map, recall of places) remembering in a FIFO
    text log of recognitions instead of frames."""

    name = "textlog"

    def __init__(self, embedder: RecognitionEmbedder, config: MemoryAgentConfig | None = None):
        super().__init__(embedder, config)
        self.log: deque[LogEntry] = deque(maxlen=LOG_ENTRIES)
        self.important: deque[LogEntry] = deque(maxlen=IMPORTANT_ENTRIES)
        self._mission_kind = ""

    def reset(self, observation: Observation, spec: SensorSpec) -> None:
        super().reset(observation, spec)
        # The recogniser's mission: the text, or for an image goal the words the goal image shows. The
        # log holds kinds only (as the reference's), so a description or image goal is looked up by
        # the kind it names: the log cannot tell the capsized ship from the upright one.
        mission = self.recognizer.mission or str(observation["mission"])
        variant = named_variant(mission)
        self._mission_kind = (
            variant.kind if variant else next((k.name for k in KINDS if k.is_target and k.phrase in mission), "")
        )

    # ---------------------------------------------------------------- writing

    def update(self, observation: Observation) -> None:
        super().update(observation)  # the explorer's perception; no frame is written
        self._log(self.kind_probabilities[None], [self.pose], self.steps)

    def _log(self, probs: np.ndarray, poses: list[tuple[int, int, int]], step: int) -> None:
        """Log each frame (its labeller probabilities, one row each) that shows a target kind."""
        for row, (x, y, h) in zip(probs, poses):
            best = int(row.argmax())
            kind, p = KIND_PROMPT_NAMES[best], float(row[best])
            if kind in TARGET_KINDS and p >= self.config.detect_probability:
                entry = LogEntry(str(self.context["task"]), int(step), int(x), int(y), int(h), kind, round(p, 3))
                self.log.append(entry)
                if p >= IMPORTANT_CONFIDENCE:
                    self.important.append(entry)

    def implant(self, images: np.ndarray, poses: list[tuple[int, int, int]]) -> None:
        self._log(self.labeller.probabilities(self.embedder.embed_images(images)), poses, 0)

    # ---------------------------------------------------------------- reading

    def sightings(self) -> list[tuple[tuple[int, int, int], float]]:
        self.queries += 1
        self.trace.query = self.recognizer.mission
        entries = {e for e in (*self.log, *self.important) if e.kind == self._mission_kind}
        return [
            ((e.x, e.y, e.heading), e.confidence) for e in entries if e.confidence >= self.config.memory_probability
        ]

    # ---------------------------------------------------------------- carried state

    def reset_memory(self) -> None:
        self.log.clear()
        self.important.clear()
        self._forget_map()

    def end_task(self, success: bool) -> None:
        """Nothing to flush: the log is written as the robot goes."""

    def save_state(self, directory: Path) -> None:
        directory = Path(directory)
        with writer_lock(directory):
            path = atomic_write_json(
                directory / "textlog.json",
                {"log": [asdict(e) for e in self.log], "important": [asdict(e) for e in self.important]},
            )
            self._save_map(directory, hashlib.sha256(path.read_bytes()).hexdigest())  # the map pinned to this log

    def load_state(self, directory: Path) -> None:
        directory = Path(directory)
        raw = (directory / "textlog.json").read_bytes()
        self._load_map(directory, hashlib.sha256(raw).hexdigest())
        data = json.loads(raw)
        self.log = deque((LogEntry(**e) for e in data["log"]), maxlen=LOG_ENTRIES)
        self.important = deque((LogEntry(**e) for e in data["important"]), maxlen=IMPORTANT_ENTRIES)

    def episode_stats(self) -> dict[str, float]:
        return {
            "memory_queries": self.queries,
            "textlog_entries": len(self.log),
            "textlog_important": len(self.important),
        }
