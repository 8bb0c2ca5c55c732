"""``embodmem-bench``: run, verify and rank results of the frozen benchmark; export its dataset.

    embodmem-bench spec                                      # versions, tracks, groups, splits
    embodmem-bench run --agent memory --track open --split dev --worlds 3 --out results/memory-open
    embodmem-bench run --spec v1 --agent memory --track open --split dev --out results/v1-memory  # an older spec
    embodmem-bench verify results/memory-open/result.json --rerun 3
    embodmem-bench board results/*/result.json --out board  # board.md and board.html
    embodmem-bench export --split dev --worlds 2 --out data/embodmem-dev

Bad input is refused in one line before any work (exit 2); a result that does not verify is refused in
one line (exit 1).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from embodmem.bench.spec import available_versions, load_spec, spec_hash

PROG = "embodmem-bench"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)

    s = sub.add_parser("spec", help="print the spec versions, their hashes, tracks, groups and splits")
    s.add_argument("--spec", default=str(available_versions()[-1]), help="spec version (default: the newest)")

    r = sub.add_parser("run", help="run the spec's episodes for one agent on one track; write result.json")
    r.add_argument("--agent", required=True, help="a stock agent (memory, textlog, explorer, ...) or a plug-in")
    r.add_argument("--track", required=True)
    r.add_argument("--split", required=True, help="dev or test")
    r.add_argument(
        "--worlds", type=int, default=None, help="the split's first N worlds (default: all; fewer is partial)"
    )
    r.add_argument("--groups", default="", help="comma-separated groups (default: all the agent can run)")
    r.add_argument("--set", action="append", default=[], dest="sets", metavar="KEY=VALUE",
                   help="an override of the agent, memory or embedder config (repeatable)")  # fmt: skip
    r.add_argument("--spec", default=str(available_versions()[-1]), help="spec version (default: the newest)")
    r.add_argument("--out", required=True, type=Path)

    v = sub.add_parser("verify", help="check a result against its records, hashes and spec")
    v.add_argument("result", type=Path)
    v.add_argument("--rerun", type=int, default=0, metavar="K", help="also re-run K random episodes")
    v.add_argument("--seed", type=int, default=0, help="which episodes --rerun draws")

    b = sub.add_parser("board", help="leaderboard of verified results (markdown and HTML)")
    b.add_argument("results", nargs="+", type=Path)
    b.add_argument("--out", type=Path, default=Path("board"), help="directory for board.md and board.html")

    e = sub.add_parser("export", help="write a split's episodes as a Parquet dataset")
    e.add_argument("--split", required=True, help="dev or test")
    e.add_argument("--worlds", type=int, default=None)
    e.add_argument("--agent", default="memory", help="the agent whose episodes (and map) are recorded")
    e.add_argument("--groups", default="category", help="comma-separated episode groups (default: category)")
    e.add_argument("--spec", default=str(available_versions()[-1]), help="spec version (default: the newest)")
    e.add_argument("--out", required=True, type=Path)

    p = sub.add_parser("probe", help="decode the object map and the walls from each memory design on a dataset")
    p.add_argument("dataset", type=Path)
    p.add_argument(
        "--designs",
        default=None,
        help="designs to probe (default: frame_memory,keep_everything,textlog; with --train: every trained design)",
    )
    p.add_argument(
        "--train",
        type=Path,
        default=None,
        help="a dataset of dev worlds: train a decoder per design on it and score DATASET (the trained probe)",
    )
    p.add_argument("--out", type=Path, default=None, help="a markdown results file (with provenance)")
    return parser


def _spec_text(version: str) -> str:
    spec = load_spec(version)
    lines = [
        f"spec v{spec.version} sha256 {spec_hash(spec.version)} (versions here: {', '.join(map(str, available_versions()))})"
    ]
    for name, split in spec.splits.items():
        lines.append(
            f"split {name}: worlds {split.first_world}-{split.first_world + split.worlds - 1} ({split.purpose})"
        )
    for name, group in spec.groups.items():
        fixed = [f"embedder.{k}={v}" for k, v in (group.embedder or {}).items()]
        fixed += [f"world/changes={group.world_changes.name}"] if group.world_changes is not None else []
        extra = f" [fixed: {', '.join(fixed)}]" if fixed else ""
        lines.append(f"group {name}: {', '.join(group.sequences)}{extra} ({group.description})")
    lines.append(f"group eqa: question files {', '.join(f'{k}={q.file}' for k, q in spec.eqa.questions.items())}")
    for name, track in spec.tracks.items():
        lines.append(f"track {name}: {track.description}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _dispatch(args)
    except Exception as err:  # bad input and refused results: one line; anything else keeps its traceback
        from embodmem.bench.verify import VerifyError
        from embodmem.preflight import PreflightError

        if isinstance(err, VerifyError):
            print(f"{PROG}: refused: {err}", file=sys.stderr)
            return 1
        if isinstance(err, ValueError | PreflightError):
            print(f"{PROG}: error: {' '.join(str(err).split())}", file=sys.stderr)
            return 2
        raise


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "spec":
        print(_spec_text(args.spec))
        return 0
    if args.command == "run":
        from embodmem.bench.run import RunRequest, run_benchmark

        request = RunRequest(
            agent=args.agent,
            track=args.track,
            split=args.split,
            out=args.out,
            worlds=args.worlds,
            groups=tuple(g for g in args.groups.split(",") if g),
            sets=tuple(args.sets),
            spec_version=int(load_spec(args.spec).version),
        )
        result = run_benchmark(request)
        groups = ", ".join(f"{g.group} {g.score.mean:.3f}" for g in result.scores if g.score.mean is not None)
        eqa = (
            f", eqa {result.eqa.accuracy.mean:.3f}"
            if result.eqa is not None and result.eqa.accuracy.mean is not None
            else ""
        )
        print(f"{result.status}: {groups}{eqa} ({result.wall_time_s:.0f} s); {args.out / 'result.json'}")
        for line in result.budget.violations:
            print(f"over budget: {line}")
        return 0
    if args.command == "verify":
        from embodmem.bench.verify import verify_result

        if args.rerun < 0:
            raise ValueError(f"--rerun: {args.rerun} is not allowed; allowed: an integer >= 0")
        report = verify_result(args.result, rerun=args.rerun, seed=args.seed)
        rerun = f", {report.rerun} episodes re-run identically" if args.rerun else ""
        print(f"verified: {args.result} (spec v{report.result.spec.version}, {report.records} records{rerun})")
        return 0
    if args.command == "board":
        from embodmem.atomic import atomic_write_text
        from embodmem.bench.board import board_html, board_markdown, board_rows

        tables = board_rows(list(args.results))
        md = atomic_write_text(args.out / "board.md", board_markdown(tables))
        page = atomic_write_text(args.out / "board.html", board_html(tables))
        print(f"board: {md} and {page} ({sum(len(r) for r in tables.values())} results)")
        return 0
    if args.command == "export":
        from embodmem.bench.export import ExportRequest, export_dataset

        info = export_dataset(
            ExportRequest(
                split=args.split,
                worlds=args.worlds,
                agent=args.agent,
                groups=tuple(g for g in args.groups.split(",") if g),
                out=args.out,
                spec_version=int(load_spec(args.spec).version),
            )
        )
        print(f"exported {info.total_frames} frames of {info.total_episodes} episodes to {args.out}")
        return 0
    if args.command == "probe":
        return _probe(args)
    raise AssertionError(args.command)


def _probe(args: argparse.Namespace) -> int:
    import embodmem
    from embodmem.app import build_embedder
    from embodmem.bench.dataset import OfflineDataset
    from embodmem.bench.probe import build_answerers, probe_dataset, probe_markdown
    from embodmem.provenance import Provenance, write_results_markdown

    facts = Provenance.collect(["embodmem-bench", *sys.argv[1:]])
    info = OfflineDataset(args.dataset).info  # a directory that is no dataset: one line before the model loads
    if args.train is not None:
        table = _trained_probe_table(args)
    else:
        designs = [d for d in (args.designs or "frame_memory,keep_everything,textlog").split(",") if d]
        embedder = build_embedder(embodmem.compose([]))
        build_answerers(designs, embedder)
        table = probe_markdown(probe_dataset(args.dataset, designs, embedder))
    print(table)
    if args.out is not None:
        generator = info["generator"]
        body = (
            f"Dataset `{args.dataset}`: {info['total_episodes']} episodes, {info['total_frames']:,} frames of the "
            f"{generator['agent']} agent on {generator['split']} worlds {generator['worlds']} "
            f"(groups {', '.join(generator['groups'])}; generator: `{generator['command']}`). One tour is every "
            "episode of one sequence in one world, in order. 95% intervals resample whole worlds.\n\n" + table
        )
        write_results_markdown(args.out, "Memory probing: what each design holds", body, facts)
    return 0


def _trained_probe_table(args: argparse.Namespace) -> str:
    """Decoders trained on ``--train``'s tours (a dev dataset: never test worlds) scored on the dataset's."""
    import embodmem
    from embodmem.app import build_embedder
    from embodmem.bench.dataset import OfflineDataset
    from embodmem.bench.trained_probe import (
        TRAINED_DESIGNS,
        kind_ap_markdown,
        parse_designs,
        summarise,
        tour_contents,
        train_and_score,
        trained_probe_markdown,
    )

    designs = parse_designs(args.designs or ",".join(TRAINED_DESIGNS))
    train_set = OfflineDataset(args.train)
    if train_set.info["generator"]["split"] == "test":
        raise ValueError(f"--train: {args.train} holds test worlds; allowed: a dataset of dev worlds")
    embedder = build_embedder(embodmem.compose([]))
    train = list(tour_contents(train_set, embedder))
    held_out = list(tour_contents(OfflineDataset(args.dataset), embedder))
    rows = summarise(train_and_score(designs, train, held_out))
    return trained_probe_markdown(rows) + "\n\nAverage precision per target kind:\n\n" + kind_ap_markdown(rows)


if __name__ == "__main__":
    raise SystemExit(main())
