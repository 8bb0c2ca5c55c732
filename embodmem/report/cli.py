"""``embodmem-report DIR``: the report of one run or a whole multirun directory, from the command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from embodmem.report.load import MetricsFormatError, find_metrics_files, load_records
from embodmem.report.summary import write_summary
from embodmem.report.tables import READING_GUIDE, print_report


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="embodmem-report",
        description=(
            "Summarise one embodmem run or a Hydra multirun directory: finds every metrics.jsonl "
            "under DIR and writes summary.csv, transfer.csv (and gem.csv when there are eval "
            "records) and PNG plots into DIR, then prints the tables."
        ),
    )
    parser.add_argument("dir", metavar="DIR", type=Path, help="run or multirun output directory")
    parser.add_argument("--out", type=Path, default=None, help="write outputs here instead of DIR")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("-q", "--quiet", action="store_true", help="do not print the tables")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point ``embodmem-report``; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        files = find_metrics_files(args.dir)
        records = load_records(files)
    except FileNotFoundError as e:
        print(f"embodmem-report: error: {e}", file=sys.stderr)
        return 2
    except MetricsFormatError as e:
        print(f"embodmem-report: error: {e}", file=sys.stderr)
        return 1
    if not records:
        print(f"embodmem-report: error: {', '.join(map(str, files))} hold no records", file=sys.stderr)
        return 1
    out_dir = args.out if args.out is not None else (args.dir if args.dir.is_dir() else args.dir.parent)
    result = write_summary(records, out_dir, plots=not args.no_plots)
    if not args.quiet:
        print(f"{len(records)} episodes from {len(files)} metrics file(s) under {args.dir}\n")
        print_report(result)
        print("\nwrote:")
        for f in result.files:
            print(f"  {f}")
        print(f"\n{READING_GUIDE}")
    return 0
