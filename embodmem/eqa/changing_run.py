"""Visits x answerers -> records and the report: the changing-world question run.

Every answerer watches every visit through the same replayed observations (scores are paired
question by question), then answers that visit's questions. The report: accuracy per type with
95% intervals that resample worlds (one visit a world), the chance level, the blind answerer against
chance per type, the paired differences that show which types separate the text log from the frame
memory, and the abstention questions scored apart (correct abstentions, false claims, false
abstentions). The ``experiment=eqa_changing`` run mode is :func:`run_changing`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from embodmem.agents.base import RecognitionEmbedder
from embodmem.atomic import atomic_write_jsonl, atomic_write_text
from embodmem.envs.config import EnvConfig
from embodmem.eqa.answerers import Answerer
from embodmem.eqa.changing import NOT_SEEN, VisitSet, check_types, generate_visit_set, replay_visit
from embodmem.eqa.changing_answerers import BLIND_CHECKS, CHANGING_ANSWERERS, build_visit_answerers
from embodmem.eqa.config import ChangingEQAConfig
from embodmem.eqa.files import CHANGING_QUESTION_TYPES
from embodmem.eqa.run import EQAResult, answer_replays
from embodmem.eqa.scoring import (
    EQARecord,
    TypeScore,
    format_table,
    paired_difference,
    type_scores,
)
from embodmem.splits import choose_worlds, get_split
from embodmem.stats import paired_ci

PRIOR_SPLIT = "dev"
PRIOR_FIRST = 1600
"""The blind answerer's prior comes from dev visits from this world on (never the reported ones)."""


def answer_visits(vs: VisitSet, answerers: list[Answerer], on_visit: Callable[[], None] | None = None) -> EQAResult:
    """Replay every visit to every answerer, ask its questions, score the answers."""
    visits = ((visit.key, functools.partial(replay_visit, vs.env, visit)) for visit in vs.visits)
    return answer_replays(visits, vs.by_visit(), vs.truths, vs.env.cell_size_m, answerers, on_visit)


# ----------------------------------------------------------------------------- abstention


@dataclass(frozen=True)
class AbstentionScore:
    """One answerer on the abstention questions, scored apart (rates with 95% intervals over worlds)."""

    answerer: str
    not_seen: int
    """Questions whose right answer is "not seen"."""
    seen: int
    correct_abstention: float
    correct_abstention_ci: tuple[float, float]
    false_claim: float
    """Share of the "not seen" questions answered with a look (something never seen, described)."""
    false_claim_ci: tuple[float, float]
    false_abstention: float
    """Share of the questions about something seen answered "not seen"."""
    false_abstention_ci: tuple[float, float]


def _rate(records: list[EQARecord], hit: Callable[[EQARecord], bool]) -> tuple[float, tuple[float, float]]:
    if not records:
        return math.nan, (math.nan, math.nan)
    tours = sorted({r.tour for r in records})
    num = np.array([sum(hit(r) for r in records if r.tour == t) for t in tours], dtype=float)
    den = np.array([sum(1 for r in records if r.tour == t) for t in tours], dtype=float)
    ci = paired_ci(num, den, lambda a, b, axis=-1: np.sum(a, axis=axis) / np.sum(b, axis=axis))
    return float(num.sum() / den.sum()), ci


def abstention_scores(records: list[EQARecord], truths: dict[str, str]) -> list[AbstentionScore]:
    """Per answerer: correct abstentions and false claims on the "not seen" questions, false
    abstentions on the others (``truths``: question id -> right answer).

    Example:
        >>> recs = [EQARecord("w1", "a", "abstention", "x", "not seen", True, True, False),
        ...         EQARecord("w1", "b", "abstention", "x", "the red oil drums", False, True, False),
        ...         EQARecord("w2", "c", "abstention", "x", "not seen", False, True, False)]
        >>> s = abstention_scores(recs, {"a": "not seen", "b": "not seen", "c": "the red oil drums"})[0]
        >>> s.correct_abstention, s.false_claim, s.false_abstention
        (0.5, 0.5, 1.0)
    """
    out = []
    names = list(dict.fromkeys(r.answerer for r in records if r.type == "abstention"))
    for name in names:
        mine = [r for r in records if r.answerer == name and r.type == "abstention"]
        absent = [r for r in mine if truths[r.question] == NOT_SEEN]
        present = [r for r in mine if truths[r.question] != NOT_SEEN]
        ok, ok_ci = _rate(absent, lambda r: r.answer == NOT_SEEN)
        claim, claim_ci = _rate(absent, lambda r: r.answer != NOT_SEEN)
        wrong, wrong_ci = _rate(present, lambda r: r.answer == NOT_SEEN)
        out.append(AbstentionScore(name, len(absent), len(present), ok, ok_ci, claim, claim_ci, wrong, wrong_ci))
    return out


def _interval(value: float, ci: tuple[float, float]) -> str:
    return "-" if math.isnan(value) else f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def format_abstention(scores: list[AbstentionScore]) -> str:
    rows = [
        '| answerer | correct abstentions (right answer "not seen") | false claims (a look for something not seen) '
        '| false abstentions ("not seen" for something seen) |',
        "|---|---|---|---|",
    ]
    for s in scores:
        rows.append(
            f"| {s.answerer} | {_interval(s.correct_abstention, s.correct_abstention_ci)} "
            f"| {_interval(s.false_claim, s.false_claim_ci)} | {_interval(s.false_abstention, s.false_abstention_ci)} |"
        )
    if scores:
        rows.append(f"| questions | {scores[0].not_seen} | {scores[0].not_seen} | {scores[0].seen} |")
    return "\n".join(rows)


# ----------------------------------------------------------------------------- the report


def blind_lines(scores: list[TypeScore]) -> list[str]:
    """The blind answerer against chance, per type: at chance when the interval holds chance."""
    out = []
    for s in sorted(scores, key=lambda s: s.answerer):
        if s.answerer in BLIND_CHECKS:
            verdict = "at chance" if s.ci[0] <= s.chance <= s.ci[1] else "NOT at chance"
            out.append(
                f"| {s.answerer} | {s.type} | {s.accuracy:.3f} [{s.ci[0]:.3f}, {s.ci[1]:.3f}] | {s.chance:.3f} "
                f"| {s.accuracy - s.chance:+.3f} | {verdict} |"
            )
    return [
        "| answerer | type | accuracy [95% CI] | chance | accuracy - chance | verdict |",
        "|---|---|---|---|---|---|",
        *out,
    ]


def separation_lines(records: list[EQARecord], types: list[str]) -> list[str]:
    """Paired differences per type, and whether frame memory and text log are told apart."""
    pairs = (("frame_memory", "textlog"), ("keep_everything", "textlog"), ("frame_memory", "keep_everything"))
    head = "| type | " + " | ".join(f"{a} - {b}" for a, b in pairs) + " | separates text log from frame memory |"
    rows = [head, "|" + "---|" * (len(pairs) + 2)]
    for qtype in types:
        cells = []
        verdict = ""
        for a, b in pairs:
            d, ci, n = paired_difference(records, a, b, qtype)
            cells.append(f"{d:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}]" if n else "")
            if (a, b) == ("frame_memory", "textlog") and n:
                if ci[0] > 0:
                    verdict = "yes: frame memory higher"
                elif ci[1] < 0:
                    verdict = "yes: text log higher"
                else:
                    verdict = "no (interval holds 0)"
        rows.append(f"| {qtype} | " + " | ".join(cells) + f" | {verdict} |")
    return rows


def report(vs: VisitSet, result: EQAResult) -> str:
    qs = vs.as_question_set()
    every = type_scores(result.records, {q.id: q for q in qs.questions}, qs.truths, vs.env.size)
    scores = [s for s in every if s.answerer != "blind_question"]
    types = [t for t in CHANGING_QUESTION_TYPES if any(s.type == t for s in scores)]
    lines = [
        'Accuracy per type [95% interval resampling worlds]; "where_before": share within 2 cells of where the '
        "object was before it moved, and the median error. Chance: a uniform guess among the choices; for "
        "where_before, a uniformly random cell.",
        "",
        format_table(scores),
        "",
        "Which types separate the answerers (paired differences on the same questions, 95% interval resampling worlds):",
        "",
        *separation_lines(result.records, types),
        "",
        "Question-only answerers against chance (their answer: the one most often right in the dev prior "
        "visits; blind: per type; blind_question: per everything the question says: type, kinds, the task "
        "an abstention question names, the first choice of a first_seen question):",
        "",
        *blind_lines(every),
    ]
    if "abstention" in types:
        truths = {q: t.answer for q, t in vs.truths.items()}
        lines += [
            "",
            "Abstention questions scored apart (rates with 95% intervals resampling worlds):",
            "",
            format_abstention(abstention_scores(result.records, truths)),
        ]
    if result.invalid:
        lines.append("")
    for name, n in result.invalid.items():
        lines.append(f"- {name}: {n} answers outside the choices or unreadable (scored wrong)")
    return "\n".join(lines)


def prior_set(embedder: RecognitionEmbedder, env: EnvConfig, worlds: int, tasks: int, leg_steps: int) -> VisitSet:
    """The dev visits the blind answerer learns its per-type prior from."""
    seeds = get_split(PRIOR_SPLIT).worlds(worlds, first=PRIOR_FIRST)
    return generate_visit_set(PRIOR_SPLIT, seeds, embedder, env, tasks=tasks, leg_steps=leg_steps)


def run_changing(
    changing: ChangingEQAConfig,
    answerer_names: list[str],
    out_dir: Path,
    embedder: RecognitionEmbedder,
    env: EnvConfig | None = None,
    progress: bool = True,
) -> list[EQARecord]:
    """Walk ``changing.worlds`` visits of ``changing.split``, ask the questions of ``changing.types``,
    answer with ``answerer_names``; writes ``eqa.jsonl`` and ``eqa.md`` into ``out_dir``."""
    types = check_types(list(changing.types))
    names = list(answerer_names)
    bad = [n for n in names if n not in CHANGING_ANSWERERS]
    if bad:
        raise ValueError(
            f"experiment.eqa.answerers: {bad[0]!r} does not answer changing-world questions; "
            f"allowed: {', '.join(CHANGING_ANSWERERS)}"
        )
    worlds = choose_worlds(changing.split, changing.worlds, changing.first)
    env = env or EnvConfig()
    vs = generate_visit_set(changing.split, worlds, embedder, env, types, changing.tasks, changing.leg_steps)
    if not vs.questions:
        print(
            f"no question survived balancing on {len(vs.visits)} visits (each kind's group needs every answer): "
            "ask more worlds (experiment.eqa.changing.worlds)"
        )
    prior = prior_set(embedder, env, changing.prior_worlds, changing.tasks, changing.leg_steps)
    answerers = build_visit_answerers(
        names, embedder, prior.as_question_set(), vs.truths, changing.tasks, changing.leg_steps + 1
    )
    bar = tqdm(total=len(vs.visits), desc="visits", unit="visit", disable=not progress)

    def tick() -> None:
        bar.update(1)

    result = answer_visits(vs, answerers, on_visit=tick)
    bar.close()
    atomic_write_jsonl(out_dir / "eqa.jsonl", [dataclasses.asdict(r) for r in result.records])
    table = report(vs, result)
    atomic_write_text(out_dir / "eqa.md", table + "\n")
    print(
        f"Questions about a changing world: {len(vs.questions)} questions on {len(vs.visits)} visits "
        f"({changing.split}, {changing.tasks} tasks of {changing.leg_steps} steps)"
    )
    print(table)
    print(f"\noutputs: {out_dir}")
    return result.records
