"""Every figure the README's headline tables quote is the one in its results file, and every local link
of the README points at a file of the repository.

Each quoted figure is named below by where it lives in its results file (the file, the section, the
row and the column of a markdown table). The test reads the value there and the README's cell for
it; a benchmark re-run that changes a figure, or a README edit that mistypes one, fails here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

NUMBER = re.compile(r"[-+]?\d+(?:,\d{3})*(?:\.\d+)?")


@dataclass(frozen=True)
class Source:
    """Where one figure lives: a markdown table's cell in a results file."""

    path: str
    section: str | None
    """The start of the line that opens the part of the file holding the table (None: the first table)."""
    row: str
    """The start of the row's first cell."""
    column: str
    """The column's header."""


@dataclass(frozen=True)
class Quote:
    """A row of the README's headline table: the start of its first cell, and the source of each figure
    its second cell quotes, in order."""

    row: str
    sources: tuple[Source, ...]


def _instance(section: str, rows: tuple[str, ...]) -> tuple[Source, ...]:
    path = "benchmarks/results/instance_goals_test.md"
    return tuple(Source(path, section, row, "SPL") for row in rows)


def _eqa(path: str, column: str) -> tuple[Source, ...]:
    rows = ("frame_memory", "textlog", "blind")
    return tuple(Source(path, None, row, column) for row in rows)


MEMORY_ROWS = ("memory (warm)", "textlog (warm)", "explorer (single)")
EQA = "benchmarks/results/eqa_test.md"
EQA_ATTRIBUTE = "benchmarks/results/eqa_attr_test.md"
EQA_CHANGING = "benchmarks/results/eqa_changing_test.md"
ENV = "benchmarks/results/env.md"
FLOOR = "benchmarks/results/floor_test.md"
ONE_WORLD = "underwater 32x32, camera 64x64"
BATCH_64 = "batched B=64, 32x32 worlds"
MINIGRID = "MiniGrid-Empty-16x16"

QUOTES = (
    Quote("SPL, category goal seen", _instance("### category goals, goal seen earlier", MEMORY_ROWS)),
    Quote("SPL, description goal (", _instance("### description goals, goal seen earlier", MEMORY_ROWS)),
    Quote("SPL, image goal seen", _instance("### image goals, goal seen earlier", MEMORY_ROWS)),
    Quote("SPL, description goal not seen", _instance("### description goals, goal not seen earlier", MEMORY_ROWS)),
    Quote("EQA accuracy, existence", _eqa(EQA, "existence")),
    Quote("EQA accuracy, count", _eqa(EQA, "count")),
    Quote('EQA "where"', _eqa(EQA, "where")),
    Quote("EQA accuracy, attribute", _eqa(EQA_ATTRIBUTE, "attribute")),
    Quote("EQA in a world that changes between tasks, appearance", _eqa(EQA_CHANGING, "appearance")),
    Quote("EQA in a changing world, abstention", _eqa(EQA_CHANGING, "abstention")),
    Quote("EQA in a changing world, which of two", _eqa(EQA_CHANGING, "first_seen")),
    Quote(
        "Speed, one world",
        (
            Source(ENV, None, ONE_WORLD, "steps/s (median of 7)"),
            Source(ENV, None, MINIGRID, "steps/s (median of 7)"),
            Source(ENV, None, ONE_WORLD, "ratio to MiniGrid (median)"),
        ),
    ),
    Quote(
        "Speed, 64 worlds",
        (
            Source(ENV, None, BATCH_64, "steps/s (median of 7)"),
            Source(ENV, None, MINIGRID, "steps/s (median of 7)"),
            Source(ENV, None, BATCH_64, "ratio to MiniGrid (median)"),
        ),
    ),
    Quote(
        "Speed, the core suite against its floor",
        (
            Source(FLOOR, None, "wall", "suite s"),
            Source(FLOOR, None, "wall", "floor s"),
            Source(FLOOR, None, "wall", "suite / floor"),
        ),
    ),
)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def table_cell(source: Source) -> str:
    """The text of the cell ``source`` names, read from its results file (the tables of its section,
    up to the next heading)."""
    lines = (ROOT / source.path).read_text().splitlines()
    start = (
        0 if source.section is None else next(i for i, line in enumerate(lines) if line.startswith(source.section)) + 1
    )
    header: list[str] | None = None
    for line in lines[start:]:
        if source.section is not None and line.startswith("#"):
            break
        if not line.startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = cells
        elif cells[0].startswith(source.row) and source.column in header:
            return cells[header.index(source.column)]
    raise AssertionError(f"{source.path}: no row {source.row!r} with a column {source.column!r}")


def first_number(text: str) -> str:
    found = NUMBER.search(text)
    assert found is not None, f"no number in {text!r}"
    return found.group()


def readme_row(start: str) -> list[str]:
    rows = [_cells(line) for line in README.read_text().splitlines() if line.startswith("|")]
    matches = [cells for cells in rows if cells[0].startswith(start)]
    assert len(matches) == 1, f"README: {len(matches)} table rows start with {start!r}"
    return matches[0]


@pytest.mark.parametrize("quote", QUOTES, ids=[q.row for q in QUOTES])
def test_readme_figure_is_the_results_files(quote: Quote) -> None:
    cells = readme_row(quote.row)
    quoted = NUMBER.findall(cells[1])
    expected = [first_number(table_cell(source)) for source in quote.sources]
    assert quoted == expected, f"README row {quote.row!r} quotes {quoted}; its results files say {expected}"
    for source in quote.sources:  # the row names (links) the file every figure comes from, or says "as above"
        assert source.path in "".join(cells) or "as above" in cells[-1]


def test_every_headline_row_is_checked() -> None:
    """A figure added to the headline tables without a source here would go unchecked."""
    text = README.read_text()
    body = text[text.index("## Headline results") :]
    body = body[: body.index("\n## ", 1)]
    rows = [_cells(line) for line in body.splitlines() if line.startswith("|") and not line.startswith("|---")]
    figure_rows = [cells[0] for cells in rows[1:]]
    checked = [row for row in figure_rows if any(row.startswith(q.row) for q in QUOTES)]
    assert figure_rows == checked


def test_readme_links_point_at_files() -> None:
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local, "the README links to nothing in the repository"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README links to paths that do not exist: {missing}"
