"""The answerers of the changing-world questions: the stock ones, reading time as well as places.

Each watches a whole visit (every task's tour, global step numbers; :func:`~embodmem.eqa.changing.task_of`
says which task a step was in) through the observations only, then answers. They read the same
evidence as on a single tour (:mod:`embodmem.eqa.answerers`: sightings, places, the sonar map, the
variant reader) and add the time each sighting carries:

- ``first_seen``: the kind whose ``MIN_SIGHTINGS``-th earliest sighting is earlier;
- ``tasks_ago``: the task of the kind's ``MIN_SIGHTINGS``-th latest sighting;
- ``where_before``: the best place among the sightings of the first task that has enough of them;
- ``appearance``: the look (:class:`~embodmem.eqa.answerers.VariantReader`) of the kind's frames in
  the last task that has enough of them; the text log logs kinds, not looks: its first choice;
- ``count_now``: the instances counted among the last task's sightings only;
- ``abstention``: ``not seen`` when the task holds fewer than ``MIN_SIGHTINGS`` sightings of the
  kind, else the look as for ``appearance``.

``blind`` (a per-type prior from dev visits) and ``oracle`` (the ground truth) are the stock ones.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from typing import cast

import numpy as np

from embodmem.agents.base import Observation, RecognitionEmbedder
from embodmem.agents.recognizer import KIND_PROMPT_NAMES
from embodmem.eqa.answerers import (
    DETECT_PROBABILITY,
    MIN_SIGHTINGS,
    Answer,
    Answerer,
    BlindAnswerer,
    FrameMemoryAnswerer,
    KeepEverythingAnswerer,
    Located,
    OracleAnswerer,
    PlaceEvidence,
    Sighting,
    TextLogAnswerer,
    gather,
    look_point,
    sightings_of,
)
from embodmem.eqa.changing import NOT_SEEN, abstention_task, task_of
from embodmem.eqa.config import CHANGING_ANSWERERS
from embodmem.eqa.files import Question, QuestionSet, QuestionType, Truth
from embodmem.memory import Hit

BLIND_CHECKS: tuple[str, ...] = ("blind", "blind_question")
"""The question-only answerers whose scores must sit at chance (the report's blind table)."""


def _last_step(s: Sighting) -> int:
    return s.step + s.span


class VisitReader:
    """What a time-aware answerer needs from its memory, and the answers read from it."""

    tasks: int
    steps_per_task: int

    @abstractmethod
    def sightings(self, kinds: tuple[str, ...]) -> list[Sighting]:
        """Sightings of ``kinds`` the memory gives back (with their steps)."""

    @abstractmethod
    def places(self, sightings: list[Sighting]) -> PlaceEvidence:
        """Places (and counts) of the sightings."""

    @abstractmethod
    def look(self, kind: str, task: int, choices: tuple[str, ...]) -> Answer:
        """The look of ``kind``'s frames in ``task`` (from 0), among ``choices``."""

    def in_task(self, sightings: list[Sighting], task: int) -> list[Sighting]:
        return [s for s in sightings if task_of(s.step, self.steps_per_task) == task]

    def answer_visit(self, question: Question) -> Answer:
        kind = question.kinds[0]
        qtype = question.type
        if qtype == QuestionType.first_seen:
            found = self.sightings(question.kinds)

            def first(k: str) -> float:
                steps = sorted(s.step for s in found if s.kind == k)
                return float(steps[MIN_SIGHTINGS - 1]) if len(steps) >= MIN_SIGHTINGS else math.inf

            return Answer(choice=min(question.choices, key=lambda k: (first(k), question.choices.index(k))))
        found = [s for s in self.sightings((kind,)) if s.kind == kind]
        if qtype == QuestionType.tasks_ago:
            steps = sorted((_last_step(s) for s in found), reverse=True)
            if len(steps) < MIN_SIGHTINGS:
                return Answer(choice=question.choices[0])
            ago = self.tasks - 1 - task_of(steps[MIN_SIGHTINGS - 1], self.steps_per_task)
            return Answer(choice=str(min(max(ago, 0), self.tasks - 1)))
        if qtype == QuestionType.where_before:
            for task in range(self.tasks):
                mine = self.in_task(found, task)
                if len(mine) >= MIN_SIGHTINGS:
                    ev = self.places(mine)
                    place = ev.best(kind)
                    return Answer(point=ev.centre(place) if place is not None else None)
            return Answer(point=None)
        if qtype == QuestionType.appearance:
            for task in reversed(range(self.tasks)):
                if len(self.in_task(found, task)) >= MIN_SIGHTINGS:
                    return self.look(kind, task, question.choices)
            return Answer(choice=question.choices[0])
        if qtype == QuestionType.count_now:
            mine = self.in_task(found, self.tasks - 1)
            ev = self.places(mine)
            n = ev.counts[kind] if kind in ev.counts else len(ev.instances(kind))
            return Answer(choice=str(min(max(n, 1), len(question.choices))))
        if qtype == QuestionType.abstention:
            task = abstention_task(question)
            if len(self.in_task(found, task)) < MIN_SIGHTINGS:
                return Answer(choice=NOT_SEEN)
            return self.look(kind, task, tuple(c for c in question.choices if c != NOT_SEEN))
        raise ValueError(f"question {question.id}: type {qtype.value!r} is not a changing-world question")


class VisitTextLog(TextLogAnswerer, VisitReader):
    """The text log over a visit: kinds, poses and steps; no look."""

    def __init__(self, embedder: RecognitionEmbedder, tasks: int, steps_per_task: int):
        super().__init__(embedder)
        self.tasks, self.steps_per_task = tasks, steps_per_task

    def sightings(self, kinds: tuple[str, ...]) -> list[Sighting]:
        return [Sighting(e.step, (e.x, e.y, e.heading), e.kind, e.confidence) for e in self.log if e.kind in kinds]

    def places(self, sightings: list[Sighting]) -> PlaceEvidence:
        return gather(sightings, lambda s: Located(look_point(s.pose)[0] - 0.5, look_point(s.pose)[1] - 0.5))

    def look(self, kind: str, task: int, choices: tuple[str, ...]) -> Answer:
        """A log line names the kind, never the look: the first choice (a guess)."""
        return Answer(choice=choices[0])

    def answer(self, question: Question) -> Answer:
        return self.answer_visit(question)


def _frames_in_task(
    labeller_probs: np.ndarray, kind: str, steps: list[tuple[int, int]], task: int, steps_per_task: int
) -> np.ndarray:
    """Rows labelled ``kind`` (at least ``DETECT_PROBABILITY``) whose steps reach into ``task``."""
    index = KIND_PROMPT_NAMES.index(kind)
    best = labeller_probs.argmax(axis=1)
    keep = (best == index) & (labeller_probs[:, index] >= DETECT_PROBABILITY)
    in_task = np.array(
        [task_of(lo, steps_per_task) <= task <= task_of(hi, steps_per_task) for lo, hi in steps], dtype=bool
    )
    return np.asarray(keep & in_task)


class VisitFrameMemory(FrameMemoryAnswerer, VisitReader):
    """The frame memory over a visit: retrieved frames carry their steps (merged records their span)."""

    def __init__(self, embedder: RecognitionEmbedder, tasks: int, steps_per_task: int):
        super().__init__(embedder)
        self.tasks, self.steps_per_task = tasks, steps_per_task

    def sightings(self, kinds: tuple[str, ...]) -> list[Sighting]:
        return self.recall(kinds)

    def places(self, sightings: list[Sighting]) -> PlaceEvidence:
        return self.map.evidence(sightings)

    def look(self, kind: str, task: int, choices: tuple[str, ...]) -> Answer:
        found = cast(list[Hit], self.memory.query(self.text_vector(kind), self.k, count_hits=False))
        vectors = self.memory.hit_vectors(found)
        if len(vectors) == 0:
            return Answer(choice=choices[0])
        steps = [
            (
                int(h.meta.step_min if h.meta.step_min is not None else h.meta.step),
                int(h.meta.step_max if h.meta.step_max is not None else h.meta.step),
            )
            for h in found
        ]
        rows = _frames_in_task(self.labeller.probabilities(vectors), kind, steps, task, self.steps_per_task)
        return self.variants.read(vectors[rows], choices)

    def answer(self, question: Question) -> Answer:
        return self.answer_visit(question)


class VisitKeepEverything(KeepEverythingAnswerer, VisitReader):
    """Every frame of the visit, unmerged, with its step."""

    def __init__(self, embedder: RecognitionEmbedder, tasks: int, steps_per_task: int):
        super().__init__(embedder)
        self.tasks, self.steps_per_task = tasks, steps_per_task
        self._all: list[Sighting] | None = None

    def observe(self, observation: Observation, step: int) -> None:
        super().observe(observation, step)
        self._all = None

    def _matrix(self) -> np.ndarray:
        return np.stack(self.vectors) if self.vectors else np.zeros((0, 1), np.float32)

    def sightings(self, kinds: tuple[str, ...]) -> list[Sighting]:
        if self._all is None:
            self._all = sightings_of(self.labeller, self._matrix(), self.steps, self.poses)
        return [s for s in self._all if s.kind in kinds]

    def places(self, sightings: list[Sighting]) -> PlaceEvidence:
        return self.map.evidence(sightings)

    def look(self, kind: str, task: int, choices: tuple[str, ...]) -> Answer:
        vectors = self._matrix()
        if len(vectors) == 0:
            return Answer(choice=choices[0])
        rows = _frames_in_task(
            self.labeller.probabilities(vectors), kind, [(s, s) for s in self.steps], task, self.steps_per_task
        )
        return self.variants.read(vectors[rows], choices)

    def answer(self, question: Question) -> Answer:
        return self.answer_visit(question)


def question_only_key(question: Question) -> tuple[str, ...]:
    """All a question-only answerer can read from a changing-world question: its type, the kinds
    it names, the task an abstention question names, the first choice of a first_seen question."""
    key = (question.type.value, "+".join(sorted(question.kinds)))
    if question.type == QuestionType.abstention:
        return (*key, str(abstention_task(question)))
    if question.type == QuestionType.first_seen:
        return (*key, question.choices[0])
    return key


class QuestionOnlyAnswerer(BlindAnswerer):
    """A blinder check than ``blind``: the answer most often right in the prior for everything the
    question says (:func:`question_only_key`), not only its type. On a balanced set it is at chance
    too when nothing but the type and the kinds carries a prior."""

    name = "blind_question"

    @staticmethod
    def prior_key(question: Question) -> object:
        return question_only_key(question)


def build_visit_answerers(
    names: list[str] | tuple[str, ...],
    embedder: RecognitionEmbedder,
    prior: QuestionSet,
    truths: dict[str, Truth],
    tasks: int,
    steps_per_task: int,
) -> list[Answerer]:
    """The answerers ``names`` (each one of :data:`CHANGING_ANSWERERS` or ``blind_question``)."""
    makers: dict[str, Callable[[], Answerer]] = {
        "blind": lambda: BlindAnswerer(prior),
        "blind_question": lambda: QuestionOnlyAnswerer(prior),
        "textlog": lambda: VisitTextLog(embedder, tasks, steps_per_task),
        "frame_memory": lambda: VisitFrameMemory(embedder, tasks, steps_per_task),
        "keep_everything": lambda: VisitKeepEverything(embedder, tasks, steps_per_task),
        "oracle": lambda: OracleAnswerer(truths),
    }
    for name in names:
        if name not in makers:
            raise ValueError(
                f"experiment.eqa.answerers: {name!r} does not answer changing-world questions; "
                f"allowed: {', '.join(CHANGING_ANSWERERS)}"
            )
    return [makers[name]() for name in names]
