"""Trained memory probes (:mod:`embodmem.bench.trained_probe`): decoders fit on dev worlds' exported
tours, scored on test worlds' tours, per memory design beside the blind baseline and the fully observed
control.

Exports the spec v1 category sequences (warm memory agent) on the first ``--worlds`` dev worlds and the
first ``--worlds`` test worlds into a temporary directory (or reads ``--dev`` / ``--test`` datasets
already exported), embeds every frame once with the project's CLIP model, fits one decoder per design on
the dev tours' cells and writes the test tours' figures, with 95% intervals resampling whole test
worlds, into ``benchmarks/results/probe_<split>.md``.

    python benchmarks/bench_probe.py --worlds 8 --readers

``--readers`` adds the hand-written readers' table (:mod:`embodmem.bench.probe`) on the same test tours.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from embodmem.provenance import Provenance, write_results_markdown

ROOT = Path(__file__).resolve().parent.parent


def dataset(split: str, given: Path | None, worlds: int, tmp: Path) -> Path:
    """``given``, or a fresh export of ``worlds`` worlds of ``split`` under ``tmp``."""
    from embodmem.bench.export import ExportRequest, export_dataset

    if given is not None:
        return given
    root = tmp / split
    command = ["embodmem-bench", "export", "--split", split, "--worlds", str(worlds), "--agent", "memory"]
    export_dataset(ExportRequest(split=split, out=root, worlds=worlds, agent="memory"), argv=command)
    return root


def describe(name: str, root: Path) -> str:
    from embodmem.bench.dataset import OfflineDataset

    info = OfflineDataset(root).info
    g = info["generator"]
    return (
        f"{name}: {info['total_episodes']} episodes, {info['total_frames']:,} frames of the {g['agent']} agent on "
        f"{g['split']} worlds {g['worlds']} (groups {', '.join(g['groups'])}; generator: `{g['command']}`)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", type=int, default=8, help="worlds per split when exporting")
    parser.add_argument("--dev", type=Path, default=None, help="an exported dev dataset (else one is exported)")
    parser.add_argument("--test", type=Path, default=None, help="an exported test dataset (else one is exported)")
    parser.add_argument("--designs", default=",".join(_designs()))
    parser.add_argument(
        "--readers", action="store_true", help="also the reader-based probe (embodmem-bench probe) on the test tours"
    )
    parser.add_argument("--out", type=Path, default=None, help="default: benchmarks/results/probe_test.md")
    args = parser.parse_args(argv)
    from embodmem.bench.trained_probe import parse_designs

    try:
        designs = parse_designs(args.designs)
        if args.worlds < 2:
            raise ValueError(f"--worlds: {args.worlds} is not allowed; at least 2 (intervals resample worlds)")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    facts = Provenance.collect()
    import embodmem
    from embodmem.app import build_embedder
    from embodmem.bench.dataset import OfflineDataset
    from embodmem.bench.trained_probe import (
        kind_ap_markdown,
        summarise,
        tour_contents,
        train_and_score,
        trained_probe_markdown,
    )

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="embodmem-probe-") as tmp:
        dev = dataset("dev", args.dev, args.worlds, Path(tmp))
        test = dataset("test", args.test, args.worlds, Path(tmp))
        exported = time.perf_counter()
        embedder = build_embedder(embodmem.compose([]))
        train = list(tour_contents(OfflineDataset(dev), embedder))
        held_out = list(tour_contents(OfflineDataset(test), embedder))
        read = time.perf_counter()
        rows = summarise(train_and_score(designs, train, held_out))
        table = (
            trained_probe_markdown(rows) + "\n\nPer target kind, the average precision of its per-cell probability "
            "(over the test tours whose world holds it):\n\n" + kind_ap_markdown(rows)
        )
        fitted = time.perf_counter()
        readers = ""
        if args.readers:
            from embodmem.bench.probe import PROBE_DESIGNS, probe_dataset, probe_markdown

            readers = (
                "\n\nBeside it, the hand-written readers (`embodmem-bench probe`: the EQA answerers' own "
                "decoding, no training; existence and location of each target kind, walls from each design's "
                "sonar map) on the same test tours:\n\n"
                + probe_markdown(probe_dataset(test, list(PROBE_DESIGNS), embedder))
            )
        sources = f"{describe('Train', dev)}.\n{describe('Test', test)}."
    body = (
        f"{sources}\n\nOne tour is every episode of one sequence in one world, in order (what a warm memory "
        f"carries): {len(train)} dev tours train each design's decoder (every cell of every tour a sample), "
        f"{len(held_out)} test tours score it. The decoder is one logistic regression per target over each "
        "cell's features (a softmax over no target and the eight target kinds; a sigmoid for occupancy: any "
        "cell that is not open water), fit with L-BFGS from zero weights, L2 1e-3 on standardised features, "
        "nothing tuned on test worlds. Every design also gets the cell's position (the blind prior). "
        "Figures are means over test tours with 95% intervals resampling whole test worlds; the truth covers "
        'every cell of the world, seen or not. "object cells: kind right" is over the cells that hold a '
        "target; \"AP per kind\" is each present kind's average precision over the tour's cells, averaged.\n\n"
        f"{table}{readers}\n\n"
        f"Wall time on this 2-core machine (other work on it slows these): {exported - started:.0f} s "
        f"export, {read - exported:.0f} s CLIP load and embedding, {fitted - read:.0f} s fitting and scoring"
        + (f", {time.perf_counter() - fitted:.0f} s the readers." if args.readers else ".")
    )
    out = args.out or ROOT / "benchmarks" / "results" / "probe_test.md"
    path = write_results_markdown(
        out, "Trained memory probes: what each design holds, decoded on held-out worlds", body, facts
    )
    print(path.read_text())
    return 0


def _designs() -> tuple[str, ...]:
    from embodmem.bench.trained_probe import TRAINED_DESIGNS

    return TRAINED_DESIGNS


if __name__ == "__main__":
    raise SystemExit(main())
