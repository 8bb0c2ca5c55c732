"""Question types, their generation from a tour's ground truth, answer balance, and the JSONL file.

Every question is about what entered the robot's camera (:class:`~embodmem.eqa.tour.TourTruth`), never
about what the world merely holds: a barrel the robot never saw makes "did you see oil drums?" a "no".
Questions whose answer hangs on a borderline view (an instance seen in fewer than ``MIN_FRAMES``
frames, a kind glimpsed but never clearly seen) are not asked. Each type's answers are then balanced
over the whole split (:func:`balance`), so an answerer that sees only the question is near chance.

The file (``FORMAT``, version ``VERSION``; docs/eqa.md documents it) is JSON Lines: a header line
(format, version, split, env settings, tour length, counts, and the sha256 of the body), then one line
per tour and one per question. :func:`load_questions` refuses a file whose format, version or checksum
does not match, and any line with an unknown type or a bad field, with one line naming it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from embodmem.atomic import atomic_write_text
from embodmem.envs.config import EnvConfig
from embodmem.envs.objects import KIND_INDEX, KINDS, TARGET_KINDS
from embodmem.eqa.tour import Tour, TourTruth, cell_distance

FORMAT = "embodmem-eqa"
VERSION = 1
MIN_FRAMES = 2
"""An instance counts as seen when clearly visible in at least this many frames; fewer is borderline."""
ORDER_GAP = 10
"""Order questions pair kinds first seen at least this many steps apart."""
RELATION_MARGIN = 1.0
"""Relation questions: the nearest kind is at least this many cells nearer than the next one."""
RELATION_CHOICES = 3
ATTRIBUTE_VALUES: tuple[str, ...] = ()
"""Values of the instance attribute (e.g. colour bands) once worlds have variants; empty until then."""


class QuestionType(Enum):
    """What a question asks."""

    existence = "existence"
    count = "count"
    order = "order"
    relation = "relation"
    where = "where"
    attribute = "attribute"

    def __str__(self) -> str:
        return self.value


QUESTION_TYPES: tuple[str, ...] = tuple(t.value for t in QuestionType)


def question_type(name: str) -> QuestionType:
    if name not in QUESTION_TYPES:
        raise ValueError(f"question type {name!r} is unknown; allowed: {', '.join(QUESTION_TYPES)}")
    return QuestionType(name)


def phrase(kind: str) -> str:
    return KINDS[KIND_INDEX[kind]].phrase


@dataclass(frozen=True)
class Question:
    """What an answerer is given: no answer in it."""

    id: str
    tour: str
    """The tour's key (``world_seed:seed``)."""
    type: QuestionType
    text: str
    kinds: tuple[str, ...]
    """Target kinds the question names (what a memory would look up)."""
    choices: tuple[str, ...] = ()
    """The allowed answers; empty for "where" (the answer is a point in cells)."""


@dataclass(frozen=True)
class Truth:
    """The answer (read by the scorer and the oracle only)."""

    answer: str = ""
    cells: tuple[tuple[int, int], ...] = ()
    """"where": the cells of the instance asked about."""


@dataclass
class QuestionSet:
    """A split's tours and questions, as written to / read from the JSONL file."""

    split: str
    env: EnvConfig
    tour_steps: int
    tours: list[Tour] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    truths: dict[str, Truth] = field(default_factory=dict)
    """Question id -> answer."""

    def by_tour(self) -> dict[str, list[Question]]:
        out: dict[str, list[Question]] = defaultdict(list)
        for q in self.questions:
            out[q.tour].append(q)
        return out


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
        if value is not None and ATTRIBUTE_VALUES:
            add(
                QuestionType.attribute,
                f"What colour band did {phrase(kind)} have?",
                (kind,),
                Truth(value),
                ATTRIBUTE_VALUES,
            )
    return out


def balance(items: list[tuple[Question, Truth]], seed: int) -> list[tuple[Question, Truth]]:
    """Keep, per type and per kind asked about, equally many questions of every answer that occurs
    (the rarest answer sets the number), drawn with ``seed``; "where" and order questions are kept
    whole (a point has no prior to exploit; an order question's choices come in random order)."""
    rng = random.Random(seed)
    groups: dict[tuple[QuestionType, str], dict[str, list[tuple[Question, Truth]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    kept: list[tuple[Question, Truth]] = []
    for q, t in items:
        if q.type in (QuestionType.where, QuestionType.order):
            kept.append((q, t))
        elif q.type == QuestionType.relation:
            groups[(q.type, "")][t.answer].append((q, t))
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


# ----------------------------------------------------------------------------- the file


def _question_json(q: Question, t: Truth) -> dict[str, object]:
    return {
        "record": "question",
        "id": q.id,
        "tour": q.tour,
        "type": q.type.value,
        "text": q.text,
        "kinds": list(q.kinds),
        "choices": list(q.choices),
        "answer": t.answer,
        "cells": [list(c) for c in t.cells],
    }


def _tour_json(t: Tour) -> dict[str, object]:
    return {
        "record": "tour",
        "world_seed": t.world_seed,
        "seed": t.seed,
        "actions": t.actions,
        "end_pose": list(t.end_pose),
    }


def body_lines(qs: QuestionSet) -> list[str]:
    lines = [json.dumps(_tour_json(t), separators=(",", ":")) for t in qs.tours]
    lines += [json.dumps(_question_json(q, qs.truths[q.id]), separators=(",", ":")) for q in qs.questions]
    return lines


def checksum(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def save_questions(qs: QuestionSet, path: str | Path) -> Path:
    """Write the question set atomically (header line with the body's checksum, then the body)."""
    body = body_lines(qs)
    counts = Counter(q.type.value for q in qs.questions)
    header = {
        "format": FORMAT,
        "version": VERSION,
        "split": qs.split,
        "env": dataclasses.asdict(qs.env),
        "tour_steps": qs.tour_steps,
        "tours": len(qs.tours),
        "questions": dict(sorted(counts.items())),
        "sha256": checksum(body),
    }
    text = "\n".join([json.dumps(header, separators=(",", ":")), *body]) + "\n"
    atomic_write_text(Path(path), text)
    return Path(path)


class QuestionFileError(ValueError):
    """A question file that cannot be trusted (one line naming the file, the field and the value)."""


def load_questions(path: str | Path) -> QuestionSet:
    """Read and check a question file; :class:`QuestionFileError` names what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise QuestionFileError(f"{path}: no such question file")
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise QuestionFileError(f"{path}: empty file, expected a {FORMAT} header line")
    try:
        header = json.loads(lines[0])
    except json.JSONDecodeError as err:
        raise QuestionFileError(f"{path}: line 1 is not JSON ({err.msg}); expected the {FORMAT} header") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        got = header.get("format") if isinstance(header, dict) else header
        raise QuestionFileError(f"{path}: format={got!r}; expected {FORMAT!r}")
    if header.get("version") != VERSION:
        raise QuestionFileError(
            f"{path}: version={header.get('version')!r}; this embodmem reads version {VERSION} (regenerate the file)"
        )
    body = lines[1:]
    if header.get("sha256") != checksum(body):
        raise QuestionFileError(
            f"{path}: sha256 of the body is {checksum(body)[:12]}..., the header says "
            f"{str(header.get('sha256'))[:12]}...; the file was changed after it was written"
        )
    try:
        env = EnvConfig(**header["env"])
        qs = QuestionSet(split=str(header["split"]), env=env, tour_steps=int(header["tour_steps"]))
    except (KeyError, TypeError, ValueError) as err:
        raise QuestionFileError(f"{path}: header: {err}") from None
    for number, line in enumerate(body, start=2):
        try:
            rec = json.loads(line)
            if rec["record"] == "tour":
                pose = tuple(int(v) for v in rec["end_pose"])
                if len(pose) != 3 or set(rec["actions"]) - set("0123456"):
                    raise ValueError("end_pose must be [x, y, heading] and actions digits 0-6")
                qs.tours.append(Tour(int(rec["world_seed"]), int(rec["seed"]), str(rec["actions"]), pose))
            elif rec["record"] == "question":
                qtype = question_type(rec["type"])
                q = Question(
                    str(rec["id"]),
                    str(rec["tour"]),
                    qtype,
                    str(rec["text"]),
                    tuple(str(k) for k in rec["kinds"]),
                    tuple(str(c) for c in rec["choices"]),
                )
                unknown = [k for k in q.kinds if k not in TARGET_KINDS]
                if unknown:
                    raise ValueError(f"kinds: {unknown[0]!r} is not a target kind")
                t = Truth(str(rec["answer"]), tuple((int(c[0]), int(c[1])) for c in rec["cells"]))
                if q.choices and t.answer not in q.choices:
                    raise ValueError(f"answer {t.answer!r} is not one of the choices {list(q.choices)}")
                if qtype == QuestionType.where and not t.cells:
                    raise ValueError("a where question needs the cells of its answer")
                qs.questions.append(q)
                qs.truths[q.id] = t
            else:
                raise ValueError(f"record={rec['record']!r}; allowed: tour, question")
        except KeyError as err:
            raise QuestionFileError(f"{path}: line {number}: missing field {err}") from None
        except (TypeError, ValueError, IndexError) as err:
            raise QuestionFileError(f"{path}: line {number}: {err}") from None
    keys = {t.key for t in qs.tours}
    orphan = next((q for q in qs.questions if q.tour not in keys), None)
    if orphan is not None:
        raise QuestionFileError(f"{path}: question {orphan.id}: tour {orphan.tour!r} is not in the file")
    return qs
