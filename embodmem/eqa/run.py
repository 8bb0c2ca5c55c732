"""Tours x answerers -> records: generate a split's question set, and answer one.

Every answerer watches every tour of the set through the same replayed observations (so their scores
are paired question by question), then answers that tour's questions; each answer is scored at once.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from embodmem.agents.base import RecognitionEmbedder
from embodmem.envs.config import EnvConfig
from embodmem.eqa.answerers import Answerer
from embodmem.eqa.files import QuestionSet, QuestionType
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


def answer_question_set(
    qs: QuestionSet, answerers: list[Answerer], on_tour: Callable[[], None] | None = None
) -> EQAResult:
    """Replay every tour to every answerer, ask its questions, score the answers."""
    result = EQAResult()
    counter = InvalidAnswerCounter()
    by_tour = qs.by_tour()
    for tour in qs.tours:
        questions = by_tour.get(tour.key, [])
        if questions:
            for step, obs, spec in replay_tour(qs.env, tour):
                if step == 0:
                    for a in answerers:
                        a.start_tour(tour.key, spec)
                for a in answerers:
                    a.observe(obs, step)
            for q in questions:
                for a in answerers:
                    record = score(a.name, q, qs.truths[q.id], a.answer(q), qs.env.cell_size_m)
                    counter.add(record, q)
                    result.records.append(record)
        if on_tour is not None:
            on_tour()
    result.invalid = dict(counter.counts)
    result.stats = {a.name: a.stats() for a in answerers}
    return result
