"""Questions about a world that changes between tasks: the table of benchmarks/results/eqa_changing_<split>.md.

Walks one visit (four tasks of 60 steps; the world changes between them) in each of ``--worlds``
worlds of ``--split``, asks the changing-world questions (embodmem.eqa.changing; docs/eqa.md), and
answers them with the blind answerer (its prior from dev visits 1600 on), the text log, the frame
memory, keep-everything and the oracle. Reports accuracy per type with 95% intervals resampling
worlds, the blind answerer against chance per type, the paired differences that show which types
separate the text log from the frame memory, and the abstention questions scored apart. The
variants CLIP reads the looks (``embedder.pretrained=variants``).

    nice -n 10 python benchmarks/eqa_changing.py --split dev --worlds 100            # tuning
    nice -n 10 python benchmarks/eqa_changing.py --split test --worlds 200           # the report
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
from embodmem.eqa.changing import LEG_STEPS, VISIT_TASKS, ChangingQuestionError, check_types, generate_visit_set
from embodmem.eqa.changing_answerers import CHANGING_ANSWERERS, build_visit_answerers
from embodmem.eqa.changing_run import PRIOR_FIRST, answer_visits, prior_set, report
from embodmem.eqa.files import CHANGING_QUESTION_TYPES
from embodmem.provenance import Provenance, write_results_markdown
from embodmem.splits import choose_worlds

RESULTS = Path(__file__).resolve().parent / "results"
PRIOR_WORLDS = 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", help="dev, calibration or test (test: the report)")
    parser.add_argument("--worlds", type=int, default=100)
    parser.add_argument("--first", type=int, default=None)
    parser.add_argument("--types", default=",".join(CHANGING_QUESTION_TYPES))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    try:
        types = check_types([t for t in args.types.split(",") if t], key="--types")
        if (
            args.split == "dev"
            and (args.first or 1000) + args.worlds > PRIOR_FIRST
            and (args.first or 1000) < PRIOR_FIRST + PRIOR_WORLDS
        ):
            raise ValueError(
                f"--worlds/--first: dev worlds {args.first or 1000}.. overlap the blind prior's "
                f"{PRIOR_FIRST}-{PRIOR_FIRST + PRIOR_WORLDS - 1}; allowed: dev worlds outside them"
            )
        worlds = choose_worlds(args.split, args.worlds, args.first)
    except (ChangingQuestionError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        cfg = compose("config", overrides=["embedder.pretrained=variants"])
    embedder = build_embedder(cfg)
    env = EnvConfig()
    start = time.perf_counter()
    vs = generate_visit_set(args.split, worlds, embedder, env, types)
    prior = prior_set(embedder, env, PRIOR_WORLDS, VISIT_TASKS, LEG_STEPS)
    walked = time.perf_counter() - start
    answerers = build_visit_answerers(
        (*CHANGING_ANSWERERS, "blind_question"),
        embedder,
        prior.as_question_set(),
        vs.truths,
        VISIT_TASKS,
        LEG_STEPS + 1,
    )
    start = time.perf_counter()
    result = answer_visits(vs, answerers)
    answered = time.perf_counter() - start
    skipped = f"; left out (no change plan fits): {vs.skipped}" if vs.skipped else ""
    body = "\n".join(
        [
            f"## {args.split} worlds {worlds[0]}-{worlds[-1]}",
            "",
            f"{len(vs.visits)} visits (one a world; {VISIT_TASKS} tasks of {LEG_STEPS} steps, the world changing "
            f"between them){skipped}; {len(vs.questions)} questions after balancing. Blind prior: "
            f"{len(prior.questions)} questions on dev visits {PRIOR_FIRST}-{PRIOR_FIRST + PRIOR_WORLDS - 1}. "
            f"Walking {walked:.0f} s, answering {answered:.0f} s on this machine (2 cores shared with other work).",
            "",
            report(vs, result),
        ]
    )
    out = args.out or RESULTS / f"eqa_changing_{args.split}.md"
    write_results_markdown(out, "Questions about a world that changes between tasks (EQA)", body, Provenance.collect())
    print(out.read_text())
    print(f"written: {out}")


if __name__ == "__main__":
    main()
