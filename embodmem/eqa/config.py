"""Settings of the question-answering mode (the ``experiment.eqa`` group), kept light: the config
layer and the preflight check import it."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Literal, Optional

from embodmem.eqa.files import CHANGING_QUESTION_TYPES
from embodmem.memory.protocol import missing_memory_members
from embodmem.plugins import PluginError, describe, installed, is_import_path, load_object
from embodmem.splits import SPLIT_NAMES

EQA_ANSWERERS: tuple[str, ...] = ("blind", "textlog", "frame_memory", "keep_everything", "vlm", "oracle")
"""Answerers of the question-answering mode (embodmem.eqa.answerers registers each)."""
ANSWERER_METHODS: tuple[str, ...] = ("start_tour", "observe", "answer", "stats")
"""The methods of the answerer protocol (:class:`embodmem.api.AnswererProtocol`): a plug-in class
lacking one is refused by name."""
ANSWERERS_KEY = "experiment.eqa.answerers"
CHANGING_ANSWERERS: tuple[str, ...] = ("blind", "textlog", "frame_memory", "keep_everything", "oracle")
"""Answerers of the changing-world questions (embodmem.eqa.changing_answerers builds each), in the
table's order; the VLM answerer and plug-ins answer single tours only."""

PluginAnswerer = tuple[Literal["answerer", "memory"], object]
"""A plug-in answerer: ``("answerer", class or factory called with the embedder)`` or ``("memory",
memory class)``: the frame-memory answerer with that memory in place of the stock one."""


def resolve_answerer(name: str) -> PluginAnswerer:
    """The plug-in ``name`` in ``experiment.eqa.answerers`` names: a ``module:Class`` path or an entry
    point of ``embodmem.answerers`` (an answerer) or ``embodmem.memories`` (a memory, read by the
    frame-memory answerer).

    Raises:
        PluginError: one line: unknown (listing every allowed name), not importable, or a class that
            lacks a protocol method (named).
    """
    answerers, memories = installed("answerer"), installed("memory")
    if is_import_path(name):
        target = load_object("answerer", name, key=ANSWERERS_KEY)
        is_memory = inspect.isclass(target) and not callable(getattr(target, "answer", None))
    elif name in answerers:
        target, is_memory = load_object("answerer", name, key=ANSWERERS_KEY), False
    elif name in memories:
        target, is_memory = load_object("memory", name, key=ANSWERERS_KEY), True
    else:
        raise PluginError(
            f"answerer {name!r} is unknown; allowed: {', '.join(EQA_ANSWERERS)}; installed plug-ins: "
            f"answerers: {', '.join(sorted(answerers)) or 'none'}, memories: {', '.join(sorted(memories)) or 'none'}; "
            "or a 'module:Class' path (an answerer or a memory class)"
        )
    if not callable(target):
        raise PluginError(f"{ANSWERERS_KEY}: {name!r} is a {type(target).__name__}, not a class or a factory")
    if inspect.isclass(target):
        missing = (
            missing_memory_members(target)
            if is_memory
            else [m for m in ANSWERER_METHODS if not callable(getattr(target, m, None))]
        )
        if missing:
            what, protocol = ("memory", "Memory") if is_memory else ("answerer", "AnswererProtocol")
            raise PluginError(
                f"{ANSWERERS_KEY}: {name!r}: class {describe(target)} lacks the {what} method(s) "
                f"{', '.join(missing)} (embodmem.api.{protocol})"
            )
    return ("memory" if is_memory else "answerer"), target


@dataclass
class ChangingEQAConfig:
    """Questions about a visit of several tasks to a world that changes between them
    (``experiment=eqa_changing``; :mod:`embodmem.eqa.changing`)."""

    enabled: bool = False
    """Ask the changing-world questions (visits walked here) instead of a question file's."""
    split: str = "dev"
    """Split the visits' worlds come from (test: reported figures only)."""
    worlds: int = 20
    """Visits (one a world)."""
    first: Optional[int] = None
    """First world seed (None: the split's first)."""
    types: list[str] = field(
        default_factory=lambda: ["first_seen", "tasks_ago", "where_before", "appearance", "count_now", "abstention"]
    )
    """Question types asked (embodmem.eqa.files.CHANGING_QUESTION_TYPES)."""
    tasks: int = 4
    """Tasks of a visit (the world changes between them)."""
    leg_steps: int = 60
    """Steps of each task's tour."""
    prior_worlds: int = 100
    """Dev visits (from world 1600) the blind answerer's prior is learned from."""

    def __post_init__(self) -> None:
        """Refuse bad settings in one line naming the key, before any visit is walked."""
        key = "experiment.eqa.changing"
        types = list(self.types)
        unknown = [t for t in types if t not in CHANGING_QUESTION_TYPES]
        if unknown or not types:
            shown = repr(unknown[0]) if unknown else "[]"
            raise ValueError(f"{key}.types: {shown} is not allowed; allowed: {', '.join(CHANGING_QUESTION_TYPES)}")
        if self.split not in SPLIT_NAMES:
            raise ValueError(f"{key}.split: {self.split!r} is unknown; allowed: {', '.join(SPLIT_NAMES)}")
        for name, low, high in (
            ("worlds", 1, None),
            ("tasks", 2, 8),
            ("leg_steps", 10, None),
            ("prior_worlds", 1, 400),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < low or (high is not None and value > high):
                allowed = f"an integer >= {low}" if high is None else f"an integer in {low}..{high}"
                raise ValueError(f"{key}.{name}: {value!r} is not allowed; allowed: {allowed}")


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
    """Who answers: blind, textlog, frame_memory, keep_everything, vlm (agent.vlm's server), oracle,
    or a plug-in: an answerer or a memory class (``module:Class`` or an installed name)."""
    prior: str = "dev"
    """Question file whose answers the blind answerer learns its per-type prior from (not test)."""
    tours: Optional[int] = None
    """Answer only the first this many tours of the file (None: all)."""
    vlm_frames: int = 6
    """Frames the VLM answerer retrieves and sends with each question."""
    changing: ChangingEQAConfig = field(default_factory=ChangingEQAConfig)
    """The changing-world questions (``experiment=eqa_changing``)."""

    def __post_init__(self) -> None:
        if isinstance(self.changing, dict):  # as the config layer hands the group over
            self.changing = ChangingEQAConfig(**self.changing)
        if self.changing.enabled:
            unable = [name for name in self.answerers if name not in CHANGING_ANSWERERS]
            if unable:
                raise ValueError(
                    f"{ANSWERERS_KEY}: {unable[0]!r} does not answer changing-world questions; "
                    f"allowed: {', '.join(CHANGING_ANSWERERS)}"
                )
