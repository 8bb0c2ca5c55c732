"""The per-episode records shipped beside a result: one JSON line each, hashed as bytes.

Every line is ``{"group": ..., "kind": "episode" | "answer" | "state", "record": {...}}``: an
episode's metrics record (embodmem.metrics_record.EpisodeRecord, as ``metrics.jsonl`` holds it), one
answered question (embodmem.eqa.scoring.EQARecord), or the size of the state a warm run carried at
the end of a sequence (``{"sequence", "world_seed", "bytes", "files"}``: what the memory budgets read). Lines are canonical JSON (sorted keys), so the same records
give the same bytes and the same hash on every machine; ``verify`` re-scores from them alone, as
HELM keeps per-instance predictions beside its summary.

Example:
    >>> line = BenchRecord("category", "episode", {"spl": 0.5, "agent": "memory"})
    >>> records_bytes([line])
    b'{"group":"category","kind":"episode","record":{"agent":"memory","spl":0.5}}\\n'
    >>> parse_records(records_bytes([line]))[0] == line
    True
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

from embodmem.bench.spec import canonical_json

RecordKind = Literal["episode", "answer", "state"]
RECORD_KINDS: tuple[str, ...] = ("episode", "answer", "state")


class RecordsError(ValueError):
    """A records file that does not read (one line naming the line)."""


@dataclass(frozen=True)
class BenchRecord:
    group: str
    kind: RecordKind
    record: dict[str, JsonValue]


def records_bytes(records: list[BenchRecord]) -> bytes:
    """The records file's content."""
    return b"".join(canonical_json({"group": r.group, "kind": r.kind, "record": r.record}) + b"\n" for r in records)


def parse_records(data: bytes) -> list[BenchRecord]:
    """The records of a file's bytes; a line that is not a record is refused with its number."""
    out = []
    for i, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            raise RecordsError(f"line {i} is not JSON") from None
        if (
            not isinstance(obj, dict)
            or set(obj) != {"group", "kind", "record"}
            or obj["kind"] not in RECORD_KINDS
            or not isinstance(obj["group"], str)
            or not isinstance(obj["record"], dict)
        ):
            raise RecordsError(f"line {i} is not a {{group, kind, record}} object")
        out.append(BenchRecord(obj["group"], obj["kind"], obj["record"]))
    return out
