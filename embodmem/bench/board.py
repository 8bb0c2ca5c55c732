"""``embodmem-bench board``: a leaderboard of verified results, as markdown and a static HTML page.

Every result is verified first (hashes, spec, re-scored records: :func:`embodmem.bench.verify.verify_result`),
so the board shows nothing its records do not support. Results are grouped by spec version, split and
track; within a table they are ranked by the overall score, the mean of the episode groups' scores
(category, instance, lifelong and, from v2, the changing worlds; each a mean later-task SPL). Over-budget runs and privileged controls
(the oracle) are listed below the ranked rows, unranked; a run on fewer worlds or groups than the spec
holds is marked partial.

Example:
    >>> print(format_interval(None))
    —
"""

from __future__ import annotations

import html
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embodmem.bench.schema import BenchResult, Interval
from embodmem.bench.spec import load_spec
from embodmem.bench.verify import verify_result


@dataclass(frozen=True)
class BoardRow:
    result: BenchResult
    path: Path
    overall: float | None
    ranked: bool
    note: str


def format_interval(value: Interval | None, digits: int = 3) -> str:
    if value is None or value.mean is None:
        return "—"
    if value.lo is None or value.hi is None:
        return f"{value.mean:.{digits}f}"
    return f"{value.mean:.{digits}f} [{value.lo:.{digits}f}, {value.hi:.{digits}f}]"


def overall(result: BenchResult) -> float | None:
    """Mean of the episode groups' scores (None when no group has one)."""
    values = [g.score.mean for g in result.scores if g.score.mean is not None]
    return float(np.mean(values)) if values else None


def board_rows(paths: list[Path]) -> dict[tuple[int, str, str], list[BoardRow]]:
    """Verified results by (spec version, split, track), ranked rows first (best first)."""
    tables: dict[tuple[int, str, str], list[BoardRow]] = defaultdict(list)
    for path in paths:
        result = verify_result(path).result
        notes = []
        if result.status == "over_budget":
            notes.append("over budget: " + "; ".join(result.budget.violations))
        if result.agent.privileged:
            notes.append("privileged control")
        if not result.complete:
            notes.append(
                f"partial ({len(result.worlds)} of {load_spec(result.spec.version).split(result.split).worlds} worlds)"
            )
        ranked = result.status == "scored" and not result.agent.privileged
        tables[(result.spec.version, result.split, result.track.name)].append(
            BoardRow(result, path, overall(result), ranked, "; ".join(notes))
        )
    for rows in tables.values():
        rows.sort(key=lambda r: (not r.ranked, -(r.overall if r.overall is not None else -1.0), r.result.agent.name))
    return dict(sorted(tables.items()))


SELECTORS = ("agent.name=", "agent.variant=", "agent.plugin=", "agent.memory=")
"""Overrides that name the agent (embodmem.bench.agents); any other override is a setting the board shows."""


def settings(result: BenchResult) -> list[str]:
    """The ``--set`` overrides of a run (read from the overrides for results that predate ``sets``).

    >>> from embodmem.bench.schema import AgentRef
    >>> agent = AgentRef(name="memory", kind="stock", version="0.1.0", privileged=False, config_sha256="",
    ...                  overrides=["agent.name=memory", "agent.variant=memory", "embedder.pretrained=variants"])
    >>> [o for o in agent.overrides if not o.startswith(SELECTORS)]
    ['embedder.pretrained=variants']
    """
    if result.agent.sets:
        return result.agent.sets
    return [o for o in result.agent.overrides if not o.startswith(SELECTORS)]


BOARD_GROUPS = ("category", "instance", "lifelong", "changing", "changing_instance")
"""The episode groups of every spec version, one column each (a version without one shows a dash)."""
COLUMNS = (
    "rank",
    "agent",
    "overall",
    "category",
    "instance",
    "lifelong",
    "changing",
    "changing_instance",
    "eqa",
    "memory bytes",
    "steps",
    "commit",
    "note",
)


def _cells(row: BoardRow, rank: int | None) -> list[str]:
    r = row.result
    groups = {g.group: g.score for g in r.scores}
    memory = max(r.usage.memory_code_bytes_max, r.usage.carried_state_bytes_max)
    return [
        str(rank) if rank is not None else "—",
        f"{r.agent.name} ({r.agent.kind} {r.agent.version})" + "".join(f" {item}" for item in settings(r)),
        f"{row.overall:.3f}" if row.overall is not None else "—",
        *(format_interval(groups.get(g)) for g in BOARD_GROUPS),
        format_interval(r.eqa.accuracy) if r.eqa is not None else "—",
        f"{memory:,}",
        f"{r.usage.steps_total:,}",
        r.package.commit,
        row.note,
    ]


def _numbered(rows: list[BoardRow]) -> list[tuple[BoardRow, int | None]]:
    out, rank = [], 0
    for row in rows:
        rank += row.ranked
        out.append((row, rank if row.ranked else None))
    return out


HEADER = (
    "Scores are mean SPL of the later tasks (task 2 onwards) with 95% intervals resampling whole worlds; "
    "eqa is the share of questions answered right. Every row was verified against its records."
)


def board_markdown(tables: dict[tuple[int, str, str], list[BoardRow]]) -> str:
    lines = ["# embodmem-bench leaderboard", "", HEADER]
    for (version, split, track), rows in tables.items():
        lines += ["", f"## spec v{version}, {split} split, track {track}", ""]
        lines.append("| " + " | ".join(COLUMNS) + " |")
        lines.append(
            "|"
            + "|".join("---:" if c in ("rank", "overall", "memory bytes", "steps") else "---" for c in COLUMNS)
            + "|"
        )
        lines += ["| " + " | ".join(_cells(row, rank)) + " |" for row, rank in _numbered(rows)]
    return "\n".join(lines) + "\n"


def board_html(tables: dict[tuple[int, str, str], list[BoardRow]]) -> str:
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8"><title>embodmem-bench leaderboard</title>',
        "<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:80em}"
        "table{border-collapse:collapse;margin-bottom:2em}th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left}"
        "th{background:#f0f0f0}tr.unranked{color:#777}</style></head><body>",
        "<h1>embodmem-bench leaderboard</h1>",
        f"<p>{html.escape(HEADER)}</p>",
    ]
    for (version, split, track), rows in tables.items():
        parts.append(f"<h2>spec v{version}, {html.escape(split)} split, track {html.escape(track)}</h2>")
        parts.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS) + "</tr>")
        for row, rank in _numbered(rows):
            css = "" if row.ranked else ' class="unranked"'
            parts.append(f"<tr{css}>" + "".join(f"<td>{html.escape(c)}</td>" for c in _cells(row, rank)) + "</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
