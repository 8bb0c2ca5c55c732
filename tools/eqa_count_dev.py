"""How frame memory counts, on dev tours: on the map (``count_on_map``) against clusters of look points.

The figure behind the EQA counting thresholds (``COUNT_REACH_CELLS``, ``INSTANCE_RADIUS_CELLS``,
``COUNT_VOTES`` in embodmem/eqa/answerers.py): one tour per dev world, every count question its
ground truth allows (before balancing, so each answer has as many as the split holds), answered by
frame memory with both counts from the same sightings. Reported per kind and true answer, and as
the accuracy a balanced file would give (per kind, every answer weighted alike, the kind weighted
by its rarest answer's number, as :func:`embodmem.eqa.questions.balance` keeps them).

    nice -n 10 python tools/eqa_count_dev.py                       # dev worlds 1000-1399
    nice -n 10 python tools/eqa_count_dev.py --first 1000 --tours 40

Dev worlds only: this is what chose the thresholds.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from hydra import compose, initialize_config_module

from embodmem.app import build_embedder
from embodmem.atomic import atomic_write_text
from embodmem.envs.config import EnvConfig
from embodmem.eqa.answerers import FrameMemoryAnswerer, answer_from_evidence
from embodmem.eqa.files import QuestionType
from embodmem.eqa.questions import generate
from embodmem.eqa.run import TOUR_SEED, TOUR_STEPS
from embodmem.eqa.tour import replay_tour, walk_tour
from embodmem.splits import get_split

RESULTS = Path(__file__).resolve().parent / "results"
METHODS = ("map", "look-point clusters")


def balanced_accuracy(hits: dict[tuple[str, str], list[bool]]) -> float:
    """Accuracy on a file balanced per kind: per kind, each true answer weighted alike, the kind
    weighted by its rarest answer's number of questions."""
    total = weight = 0.0
    for kind in {k for k, _ in hits}:
        answers = [a for k, a in hits if k == kind]
        n = min(len(hits[(kind, a)]) for a in answers)
        for a in answers:
            total += n * sum(hits[(kind, a)]) / len(hits[(kind, a)])
            weight += n
    return total / weight if weight else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first", type=int, default=1000)
    parser.add_argument("--tours", type=int, default=400)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    worlds = get_split("dev").worlds(args.tours, first=args.first)
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        embedder = build_embedder(compose("config"))
    env = EnvConfig()
    hits: dict[str, dict[tuple[str, str], list[bool]]] = {m: defaultdict(list) for m in METHODS}
    for world in worlds:
        tour, truth = walk_tour(env, world, TOUR_SEED, TOUR_STEPS, embedder)
        count = [(q, t) for q, t in generate(tour, truth, random.Random(world)) if q.type == QuestionType.count]
        if not count:
            continue
        answerer = FrameMemoryAnswerer(embedder)
        for step, obs, spec in replay_tour(env, tour):
            if step == 0:
                answerer.start_tour(tour.key, spec)
            answerer.observe(obs, step)
        for q, t in count:
            ev = answerer.map.evidence(answerer.recall(answerer.kinds_to_recall(q)))
            clusters = dataclasses.replace(ev, counts={})
            for method, evidence in zip(METHODS, (ev, clusters)):
                hits[method][(q.kinds[0], t.answer)].append(answer_from_evidence(evidence, q).choice == t.answer)
    groups = sorted(hits["map"])
    lines = [
        "# EQA counting on dev tours: on the map against clusters of look points",
        "",
        f"Command: `nice -n 10 python tools/eqa_count_dev.py --first {args.first} --tours {args.tours}`",
        "",
        f"Frame memory, one {TOUR_STEPS}-step tour per dev world {worlds[0]}-{worlds[-1]}, every count question "
        f"({sum(len(v) for v in hits['map'].values())}) before balancing.",
        "",
        "| count | " + " | ".join(f"{k}: {a} ({len(hits['map'][(k, a)])} q)" for k, a in groups) + " | balanced |",
        "|---|" + "---|" * (len(groups) + 1),
    ]
    for method in METHODS:
        cells = [f"{sum(hits[method][g]) / len(hits[method][g]):.2f}" for g in groups]
        lines.append(f"| {method} | " + " | ".join(cells) + f" | **{balanced_accuracy(hits[method]):.3f}** |")
    text = "\n".join(lines) + "\n"
    out = args.out or RESULTS / "eqa_count_dev.md"
    atomic_write_text(out, text)
    print(text)
    print(f"written: {out}")


if __name__ == "__main__":
    main()
