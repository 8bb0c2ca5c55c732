"""Finding a run's or a sweep's ``metrics.jsonl`` files and checking every record they hold.

Each record is checked against the one schema of the metrics record
(:class:`embodmem.metrics_record.EpisodeRecord`); the tables also need to know whose episode it was
(:data:`REPORT_KEYS`). A bad line is a :class:`MetricsFormatError` naming the file, the line and the
field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from embodmem.metrics_record import EpisodeRecord

METRICS_FILE = "metrics.jsonl"

REPORT_KEYS = ("agent", "condition", "task_index")
"""Fields every record must set for the tables to place it (optional in the schema: an aborted
episode's record has no measures, but always says whose it was)."""


class MetricsFormatError(ValueError):
    """A metrics record that cannot be used; the message names the file and line (or record)."""


def _natural_key(path: Path) -> list[Any]:
    """Sort ``2/`` before ``10/`` so multirun jobs come out in job order."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", str(path)) if t]


def find_metrics_files(root: str | Path) -> list[Path]:
    """Every ``metrics.jsonl`` at or under ``root`` (a run or multirun directory), in job order.

    Raises:
        FileNotFoundError: if ``root`` does not exist or holds no ``metrics.jsonl`` anywhere.
    """
    root = Path(root)
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such directory")
    files = sorted((p for p in root.rglob(METRICS_FILE) if p.is_file()), key=_natural_key)
    if not files:
        raise FileNotFoundError(f"no {METRICS_FILE} found in {root} or any directory below it")
    return files


def validate_record(record: object, where: str) -> EpisodeRecord:
    """Read one record through :class:`~embodmem.metrics_record.EpisodeRecord` (a parsed JSON object,
    or a record already typed) and check :data:`REPORT_KEYS`; unknown keys (agent statistics) are
    kept as they are.

    Raises:
        MetricsFormatError: naming ``where`` (``file:line`` or ``record N``) and the field.
    """
    if isinstance(record, EpisodeRecord):
        typed = record
    elif not isinstance(record, dict):
        raise MetricsFormatError(f"{where}: expected a JSON object, got {type(record).__name__}")
    else:
        typed = _typed(record, where)
    for key in REPORT_KEYS:
        if getattr(typed, key) is None:
            raise MetricsFormatError(f"{where}: field {key!r} is missing; a record must say {', '.join(REPORT_KEYS)}")
    return typed


def _typed(record: dict[str, object], where: str) -> EpisodeRecord:
    try:
        return EpisodeRecord.model_validate(record)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        loc = ".".join(str(p) for p in err["loc"])
        got = f" (got {err['input']!r})" if err["type"] != "missing" and len(repr(err["input"])) < 80 else ""
        field = f"field {loc!r}: " if loc else ""
        raise MetricsFormatError(f"{where}: {field}{err['msg']}{got}") from None


def load_records(paths: Iterable[str | Path]) -> list[EpisodeRecord]:
    """Read and check every record of the given ``metrics.jsonl`` files (blank lines are skipped).

    Raises:
        MetricsFormatError: for a line that is not JSON or not a valid record, as ``file:line: why``.
    """
    records: list[EpisodeRecord] = []
    for path in paths:
        path = Path(path)
        with path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                where = f"{path}:{lineno}"
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise MetricsFormatError(f"{where}: not valid JSON ({e.msg}, column {e.colno})") from None
                records.append(validate_record(obj, where))
    return records
