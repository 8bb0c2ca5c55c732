"""Quality and speed of the project's own CLIP, on worlds it never saw.

Quality: mission-text retrieval precision@5 per target kind in shallow and deep water, and
zero-shot classification accuracy per kind (embodmem/embedding/quality.py), over frames rendered
in the held-out test worlds (9000+). Per appearance variant (instance goals), over frames of the same test
worlds built with variants: p@5 of the description goal's mission ("find the capsized sunken
ship") and zero-shot accuracy among the kind's three variants, each in shallow and deep water. Speed: frames/s at batch 64 (PyTorch) and at batch 1 (the
agent's case: ONNX Runtime, and PyTorch for comparison), the content cache turned off so every
frame goes through the network.

    python benchmarks/bench_embedder.py            # 60 test worlds x 200 frames
    python benchmarks/bench_embedder.py --quick
    python benchmarks/bench_embedder.py --checkpoint variants --no-speed   # the variants CLIP's quality
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from embodmem.embedding.checkpoints import NAMED_CHECKPOINTS
from embodmem.embedding.embedder import ClipEmbedder
from embodmem.embedding.frames import TEST_WORLDS, render_frames
from embodmem.embedding.quality import evaluate, evaluate_variants, table, variant_table
from embodmem.provenance import Provenance, write_results_markdown


def frames_per_second(emb: ClipEmbedder, images: np.ndarray, batch: int, rounds: int) -> float:
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        for i in range(0, len(images), batch):
            emb.embed_images(images[i : i + batch])
        rates.append(len(images) / (time.perf_counter() - start))
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=len(TEST_WORLDS))
    parser.add_argument("--frames-per-world", type=int, default=200)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--checkpoint", default="default", help="the model to judge: default, variants (both shipped) or a path"
    )
    parser.add_argument("--no-speed", action="store_true", help="quality only")
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="also write the tables here with the command, commit and machine (e.g. benchmarks/results/embedder.md)",
    )
    args = parser.parse_args()
    if args.quick:
        args.worlds, args.frames_per_world = 10, 100
    worlds = TEST_WORLDS[: args.worlds]
    span = f"test worlds {TEST_WORLDS.start}-{TEST_WORLDS.start + args.worlds - 1}"
    emb = ClipEmbedder(pretrained=NAMED_CHECKPOINTS.get(args.checkpoint, args.checkpoint), threads=2)
    printed: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        printed.append(text)

    frames = render_frames(worlds, args.frames_per_world, seed=2024)
    res = evaluate(emb.embed_images(frames.images), frames, emb.embed_texts)
    say(f"\nQuality on {len(frames)} frames from {span} (category worlds)\n")
    say(table(res))
    frames = render_frames(worlds, args.frames_per_world, seed=2024, variants=True)
    vectors = emb.embed_images(frames.images)
    res = evaluate(vectors, frames, emb.embed_texts)
    say(f"\nQuality on {len(frames)} frames from {span} built with variants (three instances per kind)\n")
    say(table(res))
    say("\nPer variant, same frames: description-mission p@5, zero-shot accuracy among the kind's variants\n")
    say(variant_table(evaluate_variants(vectors, frames, emb.embed_texts)))
    if not args.no_speed:
        sample = frames.images[:2048]
        say("\n| batch | runtime | threads | frames/s (median of 5) |\n|---:|---|---:|---:|")
        for batch, threads, runtime in (
            (64, 2, "torch"),
            (64, 1, "torch"),
            (64, 1, "onnx"),
            (1, 1, "onnx"),
            (1, 1, "torch"),
        ):
            emb = ClipEmbedder(cache_size=0, threads=threads, runtime=runtime)  # sets torch's thread count
            rate = frames_per_second(emb, sample if batch > 1 else sample[:1000], batch, 5)
            say(f"| {batch} | {'ONNX Runtime' if runtime == 'onnx' else 'PyTorch'} | {threads} | {rate:,.0f} |")
    if args.results is not None:
        title = f"The {args.checkpoint} CLIP on {span}"
        write_results_markdown(args.results, title, "\n".join(printed), Provenance.collect())


if __name__ == "__main__":
    main()
