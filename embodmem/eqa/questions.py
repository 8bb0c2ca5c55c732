"""Questions generated from a tour's ground truth, and their answer balance over a split.

Every question is about what entered the robot's camera (:class:`~embodmem.eqa.tour.TourTruth`), never
about what the world merely holds: a barrel the robot never saw makes "did you see oil drums?" a "no".
Questions whose answer hangs on a borderline view (an instance seen in fewer than ``MIN_FRAMES``
frames, a kind glimpsed but never clearly seen) are not asked. Each type's answers are then balanced
over the whole split (:func:`balance`), so an answerer that sees only the question is near chance.
The types and the file are :mod:`embodmem.eqa.files`.
"""

from __future__ import annotations

import random
from collections import defaultdict

from embodmem.envs.objects import KIND_INDEX, KIND_VARIANTS, KINDS, TARGET_KINDS
from embodmem.eqa.files import Question, QuestionType, Truth
from embodmem.eqa.tour import Tour, TourTruth, cell_distance

MIN_FRAMES = 2
"""An instance counts as seen when clearly visible in at least this many frames; fewer is borderline."""
ORDER_GAP = 10
"""Order questions pair kinds first seen at least this many steps apart."""
RELATION_MARGIN = 1.0
"""Relation questions: the nearest kind is at least this many cells nearer than the next one."""
RELATION_CHOICES = 3


def phrase(kind: str) -> str:
    return KINDS[KIND_INDEX[kind]].phrase


# ----------------------------------------------------------------------------- generation


def _choices(rng: random.Random, answer: str, others: list[str], n: int) -> tuple[str, ...]:
    picks = [answer, *rng.sample(others, n - 1)]
    rng.shuffle(picks)
    return tuple(picks)


def generate(tour: Tour, truth: TourTruth, rng: random.Random) -> list[tuple[Question, Truth]]:
    """Every question the tour's ground truth answers unambiguously (before balancing)."""
    out: list[tuple[Question, Truth]] = []

    def add(qtype: QuestionType, text: str, kinds: tuple[str, ...], answer: Truth, choices: tuple[str, ...]) -> None:
        qid = f"{tour.key}:{qtype.value}:{len([o for o in out if o[0].type == qtype])}"
        out.append((Question(qid, tour.key, qtype, text, kinds, choices), answer))

    seen = {k: truth.seen_instances(k, MIN_FRAMES) for k in TARGET_KINDS}
    clear = [k for k in TARGET_KINDS if seen[k] and not truth.borderline(k, MIN_FRAMES)]
    for kind in TARGET_KINDS:
        if kind in clear:
            answer = "yes"
        elif kind not in truth.glimpsed_kinds:
            answer = "no"
        else:
            continue
        add(QuestionType.existence, f"Did you see {phrase(kind)}?", (kind,), Truth(answer), ("yes", "no"))
    for kind in clear:
        n = truth.instance_count[kind]
        if n >= 2:
            add(
                QuestionType.count,
                f"How many distinct {phrase(kind)} sites did you see?",
                (kind,),
                Truth(str(len(seen[kind]))),
                tuple(str(i) for i in range(1, n + 1)),
            )
    first = {k: seen[k][0].first_step for k in clear}
    for i, a in enumerate(clear):
        for b in clear[i + 1 :]:
            if abs(first[a] - first[b]) >= ORDER_GAP:
                earlier = a if first[a] < first[b] else b
                pair = [a, b]
                rng.shuffle(pair)
                add(
                    QuestionType.order,
                    f"Which did you see first: {phrase(pair[0])} or {phrase(pair[1])}?",
                    (pair[0], pair[1]),
                    Truth(earlier),
                    (pair[0], pair[1]),
                )
    single = [k for k in clear if len(seen[k]) == 1]
    for kind in single:
        anchor = seen[kind][0]
        others = sorted((min(cell_distance(anchor.cells, t.cells) for t in seen[k]), k) for k in clear if k != kind)
        if len(others) >= RELATION_CHOICES and others[1][0] - others[0][0] >= RELATION_MARGIN:
            nearest = others[0][1]
            add(
                QuestionType.relation,
                f"Of what you saw, what was nearest to {phrase(kind)}?",
                (kind,),
                Truth(nearest),
                _choices(rng, nearest, [k for _, k in others[1:]], RELATION_CHOICES),
            )
        add(
            QuestionType.where,
            f"Point to where you saw {phrase(kind)} (x, y in cells).",
            (kind,),
            Truth(cells=tuple(anchor.cells)),
            (),
        )
        value = truth.variants.get((kind, anchor.instance))
        if value is not None:
            add(
                QuestionType.attribute,
                f"You saw {phrase(kind)}: which one was it?",
                (kind,),
                Truth(value),
                attribute_choices(kind),
            )
    return out


def attribute_choices(kind: str) -> tuple[str, ...]:
    """The choices of an attribute question: the kind's variants in words, in their fixed order."""
    return tuple(v.phrase for v in KIND_VARIANTS[kind])


def balance(items: list[tuple[Question, Truth]], seed: int) -> list[tuple[Question, Truth]]:
    """Keep, per type and per kind asked about (per pair of kinds for order), equally many questions
    of every answer that occurs (the rarest answer sets the number), drawn with ``seed``; "where"
    questions are kept whole (a point has no prior to exploit). Order questions are balanced per pair
    because some kinds are seen early more often (a tall wind station is seen from afar): a prior
    over which kind comes first beat chance by 0.05 on unbalanced ones."""
    rng = random.Random(seed)
    groups: dict[tuple[QuestionType, str], dict[str, list[tuple[Question, Truth]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    kept: list[tuple[Question, Truth]] = []
    for q, t in items:
        if q.type == QuestionType.where:
            kept.append((q, t))
        elif q.type == QuestionType.relation:
            groups[(q.type, "")][t.answer].append((q, t))
        elif q.type == QuestionType.order:
            groups[(q.type, "+".join(sorted(q.kinds)))][t.answer].append((q, t))
        else:
            groups[(q.type, q.kinds[0])][t.answer].append((q, t))
    for (qtype, _), by_answer in sorted(groups.items(), key=lambda kv: (kv[0][0].value, kv[0][1])):
        allowed = _answer_space(qtype, by_answer)
        if any(a not in by_answer for a in allowed):
            continue  # some answer never occurs: the group would teach a prior
        n = min(len(by_answer[a]) for a in allowed)
        for a in sorted(allowed):
            kept += rng.sample(by_answer[a], n)
    order = {q.id: i for i, (q, _) in enumerate(items)}
    return sorted(kept, key=lambda qt: order[qt[0].id])


def _answer_space(qtype: QuestionType, by_answer: dict[str, list[tuple[Question, Truth]]]) -> list[str]:
    if qtype == QuestionType.relation:
        return sorted(by_answer)  # balanced over the kinds that occur as answers
    any_q = next(iter(by_answer.values()))[0][0]
    return list(any_q.choices)


def chance(q: Question) -> float:
    """Accuracy of a uniform guess among the choices (0 for "where")."""
    return 1.0 / len(q.choices) if q.choices else 0.0
