"""The question file of the EQA mode and the types it holds: tours, questions, answers.

JSON Lines (format ``FORMAT``, version ``VERSION``; docs/eqa.md documents every field): a header line
(format, version, split, env settings, tour length, counts, and the sha256 of the body), then one line
per tour and one per question. :func:`load_questions` refuses a file whose format, version or checksum
does not match, and any line with an unknown type or a bad field, with one line naming it. Light on
purpose: the config layer checks question files before any work.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from embodmem.atomic import atomic_write_text
from embodmem.envs.config import EnvConfig
from embodmem.envs.objects import TARGET_KINDS

FORMAT = "embodmem-eqa"
VERSION = 1
DATA_DIR = Path(__file__).resolve().parent / "data"
SHIPPED = ("dev", "test", "attr_dev", "attr_test")
"""Question files that ship with embodmem (``DATA_DIR/eqa_<name>.jsonl``): ``dev``/``test`` in the
category worlds, ``attr_dev``/``attr_test`` the attribute questions in the same seeds' worlds with
variants (``env.instance_goals``)."""


def question_file(name: str) -> Path:
    """A shipped split's question file, or ``name`` as a path."""
    return DATA_DIR / f"eqa_{name}.jsonl" if name in SHIPPED else Path(name)


@dataclass(frozen=True)
class Tour:
    """One walk: enough to replay it bit for bit in the same environment settings."""

    world_seed: int
    seed: int
    actions: str
    """One digit per step (:class:`embodmem.envs.spec.Action` values)."""
    end_pose: tuple[int, int, int]
    """Where the walk ended (x, y, heading): a replay that ends elsewhere is refused."""

    @property
    def key(self) -> str:
        return f"{self.world_seed}:{self.seed}"

    def digest(self) -> str:
        return hashlib.sha256(f"{self.key}:{self.actions}:{self.end_pose}".encode()).hexdigest()[:16]


class QuestionType(Enum):
    """What a question asks."""

    existence = "existence"
    count = "count"
    order = "order"
    relation = "relation"
    where = "where"
    attribute = "attribute"
    first_seen = "first_seen"
    tasks_ago = "tasks_ago"
    where_before = "where_before"
    appearance = "appearance"
    count_now = "count_now"
    abstention = "abstention"

    def __str__(self) -> str:
        return self.value


CHANGING_QUESTION_TYPES: tuple[str, ...] = (
    "first_seen",
    "tasks_ago",
    "where_before",
    "appearance",
    "count_now",
    "abstention",
)
"""The questions about a visit of several tasks in a world that changes between them
(:mod:`embodmem.eqa.changing`)."""
QUESTION_TYPES: tuple[str, ...] = tuple(t.value for t in QuestionType if t.value not in CHANGING_QUESTION_TYPES)
"""The questions about one tour of a static world (the shipped question files)."""
ALL_QUESTION_TYPES: tuple[str, ...] = (*QUESTION_TYPES, *CHANGING_QUESTION_TYPES)
POINT_TYPES: tuple[str, ...] = ("where", "where_before")
"""Types answered with a point (x, y in cells), scored by distance; every other type has choices."""


def question_type(name: str) -> QuestionType:
    if name not in ALL_QUESTION_TYPES:
        raise ValueError(f"question type {name!r} is unknown; allowed: {', '.join(ALL_QUESTION_TYPES)}")
    return QuestionType(name)


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
                if qtype.value in POINT_TYPES and not t.cells:
                    raise ValueError(f"a {qtype.value} question needs the cells of its answer")
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
