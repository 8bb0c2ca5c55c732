"""Generate the shipped question files of the EQA mode (embodmem/eqa/data/eqa_<split>.jsonl).

One tour per world (embodmem.eqa.run.TOUR_STEPS steps of the tour guide from the world's first fixed
start, episode seed 0), questions from what entered the camera, balanced over the split. The dev file
(worlds 1000-1099) is what the run mode answers by default and what the blind answerer learns its
prior from; the test file (100000-100099) is read by benchmarks/eqa.py only.

    python tools/eqa_questions.py --split dev --first 1000 --tours 100
    python tools/eqa_questions.py --split test --first 100000 --tours 100

``--attribute`` writes the attribute questions (eqa_attr_<split>.jsonl) instead: tours in the same
seeds' worlds with appearance variants (env ``instance_goals``), walked with the variants CLIP
(``embedder.pretrained=variants``), only attribute questions kept:

    python tools/eqa_questions.py --attribute --split dev --first 1000 --tours 100
    python tools/eqa_questions.py --attribute --split test --first 100000 --tours 100
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from hydra import compose, initialize_config_module

from embodmem.app import build_embedder
from embodmem.envs.config import EnvConfig
from embodmem.eqa.files import DATA_DIR, QuestionType, save_questions
from embodmem.eqa.run import generate_question_set
from embodmem.splits import get_split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", required=True, choices=["dev", "test", "calibration"])
    parser.add_argument("--first", type=int, default=None, help="first world seed (default: the split's first)")
    parser.add_argument("--tours", type=int, default=100)
    parser.add_argument("--attribute", action="store_true", help="attribute questions in worlds with variants")
    parser.add_argument("--out", type=Path, default=None, help="default: embodmem/eqa/data/eqa_[attr_]<split>.jsonl")
    args = parser.parse_args()
    worlds = get_split(args.split).worlds(args.tours, first=args.first)
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        cfg = compose("config", overrides=["embedder.pretrained=variants"] if args.attribute else [])
    if args.attribute:
        qs = generate_question_set(
            args.split, worlds, build_embedder(cfg), EnvConfig(instance_goals=True), types=(QuestionType.attribute,)
        )
    else:
        qs = generate_question_set(args.split, worlds, build_embedder(cfg))
    name = f"eqa_attr_{args.split}.jsonl" if args.attribute else f"eqa_{args.split}.jsonl"
    out = save_questions(qs, args.out or DATA_DIR / name)
    counts = Counter(q.type.value for q in qs.questions)
    print(f"{out}: {len(qs.tours)} tours, {len(qs.questions)} questions {dict(sorted(counts.items()))}")


if __name__ == "__main__":
    main()
