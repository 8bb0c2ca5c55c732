"""Tours x answerers -> records: generate a split's question set, and answer one.

Every answerer watches every tour of the set through the same replayed observations (so their scores
are paired question by question), then answers that tour's questions; each answer is scored at once.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from embodmem.agents.base import Observation, RecognitionEmbedder
from embodmem.envs.config import EnvConfig
from embodmem.envs.spec import SensorSpec
from embodmem.eqa.answerers import Answerer
from embodmem.eqa.designs import KeptAfterTour, kept_from_stats
from embodmem.eqa.files import Question, QuestionSet, QuestionType, Truth
from embodmem.eqa.questions import balance, generate
from embodmem.eqa.scoring import EQARecord, InvalidAnswerCounter, score
from embodmem.eqa.tour import replay_tour, walk_tour

TOUR_STEPS = 120
"""Steps per tour: long enough to see several kinds, short enough that some stay unseen."""
TOUR_SEED = 0


def generate_question_set(
    split: str,
    world_seeds: list[int],
    embedder: RecognitionEmbedder,
    env: EnvConfig | None = None,
    tour_steps: int = TOUR_STEPS,
    types: tuple[QuestionType, ...] | None = None,
) -> QuestionSet:
    """Walk one tour per world, generate its questions (only ``types``, if given), balance them over
    the split."""
    env = env or EnvConfig()
    qs = QuestionSet(split=split, env=env, tour_steps=tour_steps)
    items = []
    for world_seed in world_seeds:
        tour, truth = walk_tour(env, world_seed, TOUR_SEED, tour_steps, embedder)
        qs.tours.append(tour)
        items += [
            (q, t) for q, t in generate(tour, truth, random.Random(world_seed)) if types is None or q.type in types
        ]
    for q, t in balance(items, seed=len(world_seeds)):
        qs.questions.append(q)
        qs.truths[q.id] = t
    return qs


@dataclass
class EQAResult:
    records: list[EQARecord] = field(default_factory=list)
    invalid: dict[str, int] = field(default_factory=dict)
    """Answers outside the choices (or unreadable), per answerer."""
    stats: dict[str, dict[str, float]] = field(default_factory=dict)
    """Each answerer's own counters (requests, format errors, ...)."""
    kept: dict[str, list[KeptAfterTour]] = field(default_factory=dict)
    """Per answerer, what its memory held at each tour's questions."""
    answer_ms: dict[str, list[float]] = field(default_factory=dict)
    """Per answerer, the wall time of each answer (not in the records: they stay reproducible)."""


ReplaySteps = Callable[[], Iterator[tuple[int, Observation, SensorSpec]]]
"""A tour's observations replayed from its record, started only when the tour has questions."""


def answer_replays(
    tours: Iterable[tuple[str, ReplaySteps]],
    questions: Mapping[str, list[Question]],
    truths: Mapping[str, Truth],
    cell_size_m: float,
    answerers: list[Answerer],
    on_tour: Callable[[], None] | None = None,
) -> EQAResult:
    """Replay every tour (its key and its replay) to every answerer, ask the tour's questions, score
    the answers; the static tours and the changing world's visits both run through here."""
    result = EQAResult()
    counter = InvalidAnswerCounter()
    for key, replay in tours:
        asked = questions.get(key, [])
        if asked:
            for step, obs, spec in replay():
                if step == 0:
                    for a in answerers:
                        a.start_tour(key, spec)
                for a in answerers:
                    a.observe(obs, step)
            for q in asked:
                for a in answerers:
                    start = time.perf_counter()
                    answer = a.answer(q)
                    result.answer_ms.setdefault(a.name, []).append((time.perf_counter() - start) * 1000)
                    record = score(a.name, q, truths[q.id], answer, cell_size_m)
                    counter.add(record, q)
                    result.records.append(record)
            for a in answerers:
                result.kept.setdefault(a.name, []).append(kept_from_stats(a.stats()))
        if on_tour is not None:
            on_tour()
    result.invalid = dict(counter.counts)
    result.stats = {a.name: a.stats() for a in answerers}
    return result


def answer_question_set(
    qs: QuestionSet, answerers: list[Answerer], on_tour: Callable[[], None] | None = None
) -> EQAResult:
    """Replay every tour to every answerer, ask its questions, score the answers."""
    tours = ((tour.key, functools.partial(replay_tour, qs.env, tour)) for tour in qs.tours)
    return answer_replays(tours, qs.by_tour(), qs.truths, qs.env.cell_size_m, answerers, on_tour)
