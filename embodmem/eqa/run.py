"""Tours x answerers -> records: generate a split's question set, and answer one.

Every answerer watches every tour of the set through the same replayed observations (so their scores
are paired question by question), then answers that tour's questions; each answer is scored at once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from embodmem.agents.base import RecognitionEmbedder
from embodmem.envs.config import EnvConfig
from embodmem.eqa.answerers import Answerer
from embodmem.eqa.designs import KeptAfterTour, kept_from_stats
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
    kept: dict[str, list[KeptAfterTour]] = field(default_factory=dict)
    """Per answerer, what its memory held at each tour's questions."""
    answer_ms: dict[str, list[float]] = field(default_factory=dict)
    """Per answerer, the wall time of each answer (not in the records: they stay reproducible)."""


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
                    start = time.perf_counter()
                    answer = a.answer(q)
                    result.answer_ms.setdefault(a.name, []).append((time.perf_counter() - start) * 1000)
                    record = score(a.name, q, qs.truths[q.id], answer, qs.env.cell_size_m)
                    counter.add(record, q)
                    result.records.append(record)
            for a in answerers:
                result.kept.setdefault(a.name, []).append(kept_from_stats(a.stats()))
        if on_tour is not None:
            on_tour()
    result.invalid = dict(counter.counts)
    result.stats = {a.name: a.stats() for a in answerers}
    return result
