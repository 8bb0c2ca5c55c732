"""Are two runs the same, record by record? The check behind "the figures are bit-identical before
and after a change" (docs/experiments.md, "Same records before and after").

Compares every record of run directory A with the record of the same key in B (sequence, world,
seed, task, agent, condition, evaluation and poisoning settings), every field but the wall-clock
ones, and the ``summary.csv`` / ``transfer.csv`` files byte for byte where both runs dealt their
worlds into the same jobs (runs with another ``--jobs`` write other per-job reports). Prints the first differences
and a one-line verdict; exits 1 if anything differs.

    python benchmarks/suite.py --split dev --worlds 20 --agents all --out /tmp/before   # on the old tree
    python benchmarks/suite.py --split dev --worlds 20 --agents all --out /tmp/after    # on the new tree
    python tools/same_records.py /tmp/before /tmp/after
    python tools/same_records.py --allow-added OLD NEW   # OLD run before fields were added to the record
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from suite import file_records  # benchmarks/suite.py reads a run's records

TIMING_FIELDS = frozenset({"wall_time_s", "memory_query_ms", "run_id"})
"""Fields that measure the machine (or name the run), not the episode."""
KEY_FIELDS = ("sequence", "world_seed", "seed", "task_index", "agent", "condition", "eval_after", "poison_k")


@functools.cache
def job_records(directory: Path) -> dict[Path, list[dict]]:
    """Each job's folder (relative to the run) and its records: a run is read once, however many
    questions are asked of it."""
    return {path.parent.relative_to(directory): file_records(path) for path in sorted(directory.rglob("metrics.jsonl"))}


def keyed(directory: Path) -> dict[tuple[object, ...], dict]:
    out: dict[tuple[object, ...], dict] = {}
    for record in (r for records in job_records(directory).values() for r in records):
        key = tuple(record.get(f) for f in KEY_FIELDS)
        if key in out:
            raise SystemExit(f"{directory}: two records with the key {key}")
        out[key] = record
    return out


def same_value(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def differences(a: Path, b: Path, allow_added: bool = False, reports: bool = True) -> list[str]:
    """Every difference between the runs, as lines (empty: the same); ``allow_added``: A was run on an
    older tree, so a field only B's records have is not a difference, and the report files (whose
    columns and formatting may have changed since) are not compared; nor are they without
    ``reports`` (runs that dealt their worlds into other jobs, :func:`same_jobs`)."""
    ra, rb = keyed(a), keyed(b)
    found = [f"only in {a}: {k}" for k in sorted(set(ra) - set(rb), key=str)]
    found += [f"only in {b}: {k}" for k in sorted(set(rb) - set(ra), key=str)]
    for key in sorted(set(ra) & set(rb), key=str):
        x, y = ra[key], rb[key]
        for name in sorted((set(x) | set(y)) - TIMING_FIELDS):
            if allow_added and name not in x and name in y:
                continue
            if not same_value(x.get(name, "<absent>"), y.get(name, "<absent>")):
                found.append(f"{key} {name}: {x.get(name, '<absent>')!r} != {y.get(name, '<absent>')!r}")
    if allow_added or not reports:
        return found
    for name in ("summary.csv", "transfer.csv"):
        for fa in sorted(a.rglob(name)):
            fb = b / fa.relative_to(a)
            if not fb.exists() or fa.read_bytes() != fb.read_bytes():
                found.append(f"{fa.relative_to(a)} differs")
    return found


def job_worlds(directory: Path) -> dict[Path, frozenset[object]]:
    """Each job's folder (relative to the run) and the worlds its records cover."""
    return {job: frozenset(r["world_seed"] for r in records) for job, records in job_records(directory).items()}


def same_jobs(a: Path, b: Path) -> bool:
    """Do the two runs split their worlds into the same jobs? Each job writes its own summary.csv and
    transfer.csv, so only then can they be compared file by file (``--jobs 1`` and ``--jobs 2`` deal
    the worlds into other chunks: the same records, other reports)."""
    return job_worlds(a) == job_worlds(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument(
        "--allow-added",
        action="store_true",
        help="A is from an older tree: fields only B's records have are not differences; the CSVs are not compared",
    )
    args = parser.parse_args()
    for d in (args.a, args.b):
        if not any(d.rglob("metrics.jsonl")):
            parser.error(f"{d}: no metrics.jsonl below it; allowed: a run or multirun directory")
    reports = not args.allow_added and same_jobs(args.a, args.b)
    found = differences(args.a, args.b, args.allow_added, reports)
    for line in found[:20]:
        print(line)
    if not args.allow_added and not reports:
        print("the runs deal their worlds into other jobs (another --jobs): records compared, per-job reports not")
    n_a, n_b = (sum(map(len, job_records(d).values())) for d in (args.a, args.b))
    print(f"{n_a} records in A, {n_b} in B: " + ("IDENTICAL" if not found else f"{len(found)} differences"))
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
