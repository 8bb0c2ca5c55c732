"""Question answering from memory on the test split: the table of benchmarks/results/eqa_test.md.

Replays the shipped test question file's tours (embodmem/eqa/data/eqa_test.jsonl: 100 test worlds) to
every answerer, asks the questions, and reports accuracy per type with 95% intervals that resample
tours, the chance level, paired differences (frame memory minus the text log, frame memory minus
keep-everything, the blind answerer minus chance) and whether each bar is met. ``--first`` adds a run on
freshly generated tours of another test range (not shipped with the repo).

    nice -n 10 python benchmarks/eqa.py                              # the shipped 100 test tours
    nice -n 10 python benchmarks/eqa.py --first 105000 --tours 100   # another test range
    nice -n 10 python benchmarks/eqa.py --attribute                  # attribute questions (eqa_attr_test.md)

``--attribute`` answers the attribute questions (embodmem/eqa/data/eqa_attr_test.jsonl: the same
100 test seeds' worlds with appearance variants) with the variants CLIP (``embedder.pretrained=variants``),
the blind prior from eqa_attr_dev.jsonl.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from hydra import compose, initialize_config_module

from embodmem.app import build_embedder
from embodmem.envs.config import EnvConfig
from embodmem.eqa.answerers import AnswererContext, build_answerer
from embodmem.eqa.files import QUESTION_TYPES, QuestionSet, QuestionType, load_questions, question_file
from embodmem.eqa.run import answer_question_set, generate_question_set
from embodmem.eqa.scoring import EQARecord, TypeScore, format_table, paired_difference, type_scores
from embodmem.provenance import Provenance, write_results_markdown
from embodmem.splits import check_worlds, get_split

ANSWERERS = ("blind", "textlog", "frame_memory", "keep_everything", "oracle")
RESULTS = Path(__file__).resolve().parent / "results"


def bars(scores: list[TypeScore], records: list[EQARecord]) -> list[str]:
    by = {(s.answerer, s.type): s for s in scores}
    out = []
    for s in scores:
        if s.answerer == "blind":
            gap = s.accuracy - s.chance
            ok = abs(gap) <= 0.05
            out.append(
                f"- blind {s.type}: {s.accuracy:.3f} vs chance {s.chance:.3f} (gap {gap:+.3f}): {'met' if ok else 'NOT met'}"
            )
    for qtype, need in (("existence", 0.90), ("order", 0.90), ("count", 0.80), ("relation", 0.80)):
        s = by.get(("frame_memory", qtype))
        if s is not None:
            verdict = "met" if s.accuracy >= need else "NOT met"
            out.append(
                f"- frame memory {qtype}: {s.accuracy:.3f} [{s.ci[0]:.3f}, {s.ci[1]:.3f}] (bar >= {need}): {verdict}"
            )
    w = by.get(("frame_memory", "where"))
    if w is not None and w.median_error_cells is not None:
        verdict = "met" if w.median_error_cells <= 2 else "NOT met"
        out.append(
            f"- frame memory where: median error {w.median_error_cells:.2f} cells = {w.median_error_m:.1f} m "
            f"(bar <= 2 cells): {verdict}"
        )
    for qtype in ("attribute", "relation"):
        d, ci, n = paired_difference(records, "frame_memory", "textlog", qtype)
        if n:
            verdict = "met" if ci[0] > 0 else "NOT met"
            out.append(
                f"- frame memory minus text log, {qtype}: {d:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}] on {n} questions "
                f"(bar: interval above 0): {verdict}"
            )
        else:
            out.append(f"- frame memory minus text log, {qtype}: no {qtype} questions in this file")
    return out


def differences(records: list[EQARecord]) -> str:
    rows = ["| paired difference | " + " | ".join(QUESTION_TYPES) + " |", "|" + "---|" * (len(QUESTION_TYPES) + 1)]
    for a, b in (("frame_memory", "textlog"), ("frame_memory", "keep_everything"), ("textlog", "blind")):
        cells = []
        for qtype in QUESTION_TYPES:
            d, ci, n = paired_difference(records, a, b, qtype)
            cells.append(f"{d:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}]" if n else "")
        rows.append(f"| {a} - {b} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def section(title: str, qs: QuestionSet, records: list[EQARecord], stats: dict, seconds: float) -> str:
    scores = type_scores(records, {q.id: q for q in qs.questions}, qs.truths, qs.env.size)
    worlds = sorted(t.world_seed for t in qs.tours)
    return "\n".join(
        [
            f"## {title}",
            "",
            f"{len(qs.tours)} tours (worlds {worlds[0]}-{worlds[-1]}, {qs.tour_steps} steps each), "
            f"{len(qs.questions)} questions; {seconds:.0f} s on this machine.",
            'Accuracy per type, 95% interval resampling tours; "where": share within 2 cells, and the median '
            'error. Chance: a uniform guess among the choices; for "where", a uniformly random cell.',
            "",
            format_table(scores),
            "",
            "Paired differences (same questions; 95% interval resampling tours):",
            "",
            differences(records),
            "",
            "Bars:",
            "",
            *bars(scores, records),
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first", type=int, default=None, help="generate tours of this test range instead")
    parser.add_argument("--tours", type=int, default=100)
    parser.add_argument("--attribute", action="store_true", help="the attribute questions, in worlds with variants")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    prefix = "attr_" if args.attribute else ""
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        cfg = compose("config", overrides=["embedder.pretrained=variants"] if args.attribute else [])
    embedder = build_embedder(cfg)
    if args.first is None:
        qs = load_questions(question_file(f"{prefix}test"))
        title = f"Test split: the shipped question file (embodmem/eqa/data/eqa_{prefix}test.jsonl)"
    else:
        worlds = get_split("test").worlds(args.tours, first=args.first)
        check_worlds("test", worlds)
        if args.attribute:
            env = EnvConfig(instance_goals=True)
            qs = generate_question_set("test", worlds, embedder, env, types=(QuestionType.attribute,))
        else:
            qs = generate_question_set("test", worlds, embedder)
        title = f"Test worlds {worlds[0]}-{worlds[-1]}: tours and questions generated here (not in the repo)"
    if qs.split != "test":
        sys.exit(f"benchmarks/eqa.py reports on the test split; the file is of split {qs.split!r}")
    prior = load_questions(question_file(f"{prefix}dev"))
    context = AnswererContext(embedder, prior, qs.truths)
    start = time.perf_counter()
    result = answer_question_set(qs, [build_answerer(n, context) for n in ANSWERERS])
    seconds = time.perf_counter() - start
    name = f"eqa_{prefix}test" + ("" if args.first is None else f"_{args.first}")
    out = args.out or RESULTS / f"{name}.md"
    heading = f"Question answering from memory (EQA), test split{': attribute questions' if args.attribute else ''}"
    write_results_markdown(
        out, heading, section(title, qs, result.records, result.stats, seconds), Provenance.collect()
    )
    print(out.read_text())
    print(f"written: {out}")


if __name__ == "__main__":
    main()
