"""The report's tables: the summary over (world, seed) pairs, the transfer and GEM tables, as CSV and as printed text.

docs/reading-output.md explains every column and word of the printed tables.
"""

from __future__ import annotations

import csv
import io
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from embodmem.atomic import atomic_write_text
from embodmem.condition import Condition
from embodmem.stats import difference_of_means, mean_ci, paired_ci
from embodmem.transfer import (
    ALL,
    CHAIN_KEYS,
    GemReport,
    TableRow,
    chain_table,
    gem_report,
    group_records,
    mean,
    order_key,
    seed_means,
    seed_of,
    std,
)

Record = Mapping[str, Any]

#: Metrics summarised per group (mean, std and 95% CI over (world, seed) pairs).
SUMMARY_METRICS = (
    "success",
    "spl",
    "soft_spl",
    "distance_score",
    "distance_score_final",
    "steps",
    "path_length",
    "collisions",
)

#: Grouping of the summary table. ``eval_after`` keeps GEM evaluations after different numbers of
#: tasks apart; it is empty for warm / cold / single records.
SUMMARY_KEYS = ("agent", "condition", "sequence", "task_index", "task", "eval_after")

#: Metrics in the transfer table and the GEM matrices.
TRANSFER_METRICS = ("success", "spl")

MIN_CI_N = 3
"""Fewest (world, seed) pairs for which the report gives a 95% CI. A bootstrap over one or two pairs
has one or three distinct resamples: its "interval" (e.g. ``+0.25 [+0.02,+0.48]`` from n = 2) would
look like evidence and is none. Below it the CSVs leave ``_lo`` / ``_hi`` empty, the printed tables
say :data:`N_TOO_SMALL` and the plots draw no error bar."""

N_TOO_SMALL = "n too small"
"""What the printed tables and plots say where :data:`MIN_CI_N` withholds an interval."""

READING_GUIDE = "What each column and word means (ISR, CSR, SoftSPL, ft vs FT, seen, n): docs/reading-output.md"
"""The last line of the main job and of ``embodmem-report``: where every word of the tables is explained."""


def has_ci(n: Any) -> bool:
    """Whether ``n`` (world, seed) pairs are enough for the report to give an interval.

    >>> has_ci(2), has_ci(3), has_ci(None)
    (False, True, False)
    """
    return n is not None and not is_missing(n) and int(n) >= MIN_CI_N


def withhold_small_n_intervals(rows: Iterable[TableRow], n_key: str = "n_seeds") -> list[TableRow]:
    """Copies of ``rows`` with every ``*_lo`` / ``*_hi`` set to None where ``n_key`` is below
    :data:`MIN_CI_N` (see there why)."""
    out = []
    for r in rows:
        row = dict(r)
        if not has_ci(row.get(n_key)):
            row.update({k: None for k in row if k.endswith(("_lo", "_hi"))})
        out.append(row)
    return out


def summary_table(records: Iterable[Record], metrics: Sequence[str] = SUMMARY_METRICS) -> list[TableRow]:
    """Per agent x condition x task: ``<m>_mean``, ``<m>_std``, ``<m>_lo`` / ``<m>_hi`` over seeds,
    ``csr`` / ``n_csr`` (chain success, :func:`embodmem.transfer.chain_table`), ``n_seeds`` and
    ``n_episodes``.

    A "seed" here is one (world, seed) pair (``n_seeds`` counts them). Each seed's episodes are averaged first, so the standard deviation is the spread between seeds
    (sample std, NaN for a single seed) and ``lo`` / ``hi`` is the bootstrap 95% CI of the mean over
    seeds (:func:`embodmem.stats.mean_ci`, NaN for a single seed). ``success_mean`` is the chain's
    independent success rate (ISR).
    """
    records = list(records)
    chains = {tuple(c[k] for k in CHAIN_KEYS): c for c in chain_table(records)}
    rows = []
    for key, recs in group_records(records, SUMMARY_KEYS).items():
        row: TableRow = dict(zip(SUMMARY_KEYS, key))
        row["n_seeds"] = len({seed_of(r) for r in recs})
        row["n_episodes"] = len(recs)
        for m in metrics:
            per_seed = list(seed_means(recs, m).values())
            # None (an empty cell) when no episode reported the metric; NaN only from NaN data.
            row[f"{m}_mean"] = mean(per_seed) if per_seed else None
            row[f"{m}_std"] = std(per_seed) if per_seed else None
            row[f"{m}_lo"], row[f"{m}_hi"] = mean_ci(per_seed) if per_seed else (None, None)
        chain = chains.get(tuple(row[k] for k in CHAIN_KEYS)) if row["eval_after"] is None else None
        row["csr"] = None if chain is None else chain["csr"]
        row["n_csr"] = None if chain is None else chain["n_csr"]
        rows.append(row)
    return rows


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else format(value, ".10g")
    return value


def write_csv(path: str | Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> Path:
    """Write rows as CSV atomically; columns default to the keys of the rows in first-seen order.

    Missing values are empty cells, NaN is written ``nan``.
    """
    if columns is None:
        columns = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow([_csv_cell(r.get(c)) for c in columns])
    return atomic_write_text(path, buf.getvalue())


def is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float))  # bool is an int: success may be true/false


def fmt_number(value: Any, decimals: int = 2, signed: bool = False) -> str:
    """A number with fixed decimals (``+`` shown when ``signed``); ``-`` for missing or NaN.

    Example:
        >>> fmt_number(0.333), fmt_number(0.25, signed=True), fmt_number(156.04, 1), fmt_number(None)
        ('0.33', '+0.25', '156.0', '-')
        >>> fmt_number(-1e-17, signed=True)
        '+0.00'
    """
    if is_missing(value):
        return "-"
    number = float(value)
    if round(number, decimals) == 0:
        number = 0.0  # no "-0.00" for a tiny negative
    return f"{number:{'+' if signed else ''}.{decimals}f}"


def fmt_ci(value: Any, lo: Any, hi: Any, decimals: int = 2, signed: bool = True, n: Any = None) -> str:
    """``value [lo,hi]`` with one format for all three; the value alone when there is no interval,
    and ``value (n too small)`` when ``n`` is given and below :data:`MIN_CI_N`.

    Example:
        >>> fmt_ci(0.33, 0.1, 0.55), fmt_ci(1.74, 1.11, 2.68, signed=False), fmt_ci(0.5, None, None)
        ('+0.33 [+0.10,+0.55]', '1.74 [1.11,2.68]', '+0.50')
        >>> fmt_ci(0.25, 0.02, 0.48, n=2)
        '+0.25 (n too small)'
    """
    text = fmt_number(value, decimals, signed)
    if n is not None and not is_missing(value) and not has_ci(n):
        return f"{text} ({N_TOO_SMALL})"
    if is_missing(value) or is_missing(lo) or is_missing(hi):
        return text
    return f"{text} [{fmt_number(lo, decimals, signed)},{fmt_number(hi, decimals, signed)}]"


def _column_decimals(values: Sequence[Any]) -> int:
    """One precision per column: 3 decimals under 10, 2 under 100, 1 from 100 on."""
    finite = [abs(float(v)) for v in values if isinstance(v, float) and math.isfinite(v)]
    biggest = max(finite, default=0.0)
    return 3 if biggest < 10 else 2 if biggest < 100 else 1


def _cell(value: Any, decimals: int) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    return fmt_number(value, decimals)


def format_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    *,
    headers: Mapping[str, str] | None = None,
    right: Sequence[str] = (),
) -> str:
    """Rows as plain aligned text: numbers right-aligned, text left-aligned.

    Floats of one column share one precision (:func:`_column_decimals`); ``headers`` renames
    columns for display; ``right`` right-aligns columns of preformatted text (numbers as strings).
    """
    if columns is None:
        columns = list(dict.fromkeys(k for r in rows for k in r))
    if not columns:
        return "(no rows)"
    headers = headers or {}
    names = [headers.get(c, c) for c in columns]
    decimals = [_column_decimals([r.get(c) for r in rows]) for c in columns]
    cells = [[_cell(r.get(c), d) for c, d in zip(columns, decimals)] for r in rows]
    numeric = [c in right or all(_is_number(r.get(c)) or r.get(c) is None for r in rows) for c in columns]
    widths = [max([len(n)] + [len(row[i]) for row in cells]) for i, n in enumerate(names)]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)]
        return "  ".join(parts).rstrip()

    out = [line(names), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    if not rows:
        out.append("(no rows)")
    return "\n".join(out)


def print_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    *,
    title: str | None = None,
    file: TextIO | None = None,
) -> None:
    """Print rows as a plain aligned table (see :func:`format_table`), with an optional title."""
    file = file if file is not None else sys.stdout
    if title:
        print(title, file=file)
    print(format_table(rows, columns), file=file)


#: Printed summary: (header, summary column, decimals). ``success`` is the ISR of a chain.
SUMMARY_PRINT = (
    ("success", "success_mean", 2),
    ("CSR", "csr", 2),
    ("SPL", "spl_mean", 2),
    ("SoftSPL", "soft_spl_mean", 2),
    ("score", "distance_score_mean", 1),
    ("final", "distance_score_final_mean", 1),
    ("steps", "steps_mean", 1),
    ("path m", "path_length_mean", 1),
)


def _task_label(row: Mapping[str, Any]) -> str:
    return f"{row.get('task_index')} {row.get('task')}"


def summary_print_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Summary rows (not ``eval``) as printed: means over (world, seed) pairs, one format per column."""
    out = []
    for r in rows:
        if r.get("condition") == Condition.eval:
            continue
        d = {"cond": str(r.get("condition")), "task": _task_label(r), "n": str(r.get("n_seeds"))}
        for header, key, decimals in SUMMARY_PRINT:
            d[header] = fmt_number(r.get(key), decimals)
        out.append(d)
    return out


#: Printed transfer tables: (header, column stem, signed). Each cell is ``value [lo,hi]``.
TRANSFER_PRINT = (
    ("ft success", "ft_success", True),
    ("ft SPL", "ft_spl", True),
    ("steps ratio", "steps_ratio", False),
)

NORMALISED_PRINT = (("FT success", "ft_norm_success", True), ("FT SPL", "ft_norm_spl", True))


def transfer_print_rows(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str, bool]] = TRANSFER_PRINT
) -> list[dict[str, str]]:
    """Transfer rows as printed: each figure with its paired 95% CI (``n too small`` below
    :data:`MIN_CI_N` pairs); ``seen`` in transfer.csv's words (seen, not seen, all)."""
    out = []
    for r in rows:
        n = r.get("n_seeds")
        d = {"task": _task_label(r), "seen": str(r.get("seen", ALL)), "n": str(n)}
        for header, stem, signed in columns:
            d[header] = fmt_ci(r.get(stem), r.get(f"{stem}_lo"), r.get(f"{stem}_hi"), signed=signed, n=n)
        out.append(d)
    return out


@dataclass(frozen=True)
class GemResult:
    """GEM figures of one agent, sequence and metric, with the sequence's task names."""

    agent: str | None
    sequence: str | None
    metric: str
    tasks: dict[int, str | None]
    """Task position (from 1) -> task name."""
    report: GemReport


def gem_rows(records: Sequence[Record], metrics: Sequence[str]) -> list[GemResult]:
    """GEM results per agent, sequence and metric, for every pair that has eval records."""
    pairs = sorted(
        {(r.get("agent"), r.get("sequence")) for r in records if r.get("condition") == Condition.eval},
        key=lambda p: (order_key(p[0]), order_key(p[1])),
    )
    out = []
    for agent, sequence in pairs:
        mine = [r for r in records if r.get("agent") == agent and r.get("sequence") == sequence]
        tasks = {int(r["task_index"]): r.get("task") for r in mine}
        for m in metrics:
            out.append(GemResult(agent, sequence, m, tasks, gem_report(mine, m)))
    return out


GEM_COLUMNS = ("agent", "sequence", "metric", "kind", "eval_after", "task_index", "task", "value", "note")

#: GEM summaries: (``kind`` in gem.csv and the printout, key of :func:`embodmem.transfer.gem_report`).
GEM_SUMMARY = (
    ("FWT", "fwt"),
    ("BWT", "bwt"),
    ("FWT vs cold", "fwt_vs_cold"),
    ("FWT (GEM code)", "fwt_code"),
    ("BWT (GEM code)", "bwt_code"),
)


def gem_csv_rows(gems: Sequence[GemResult]) -> list[TableRow]:
    """GEM results in long form: one row per R cell, per baseline entry (``b`` is row 0 of R,
    ``b_cold`` the cold means), and one per summary of :data:`GEM_SUMMARY`."""
    rows = []
    for g in gems:
        base: TableRow = {"agent": g.agent, "sequence": g.sequence, "metric": g.metric}
        R, b = g.report.R, g.report.b
        for i in range(R.shape[0]):
            for j in range(1, R.shape[1] + 1):
                rows.append(
                    {
                        **base,
                        "kind": "R",
                        "eval_after": i,
                        "task_index": j,
                        "task": g.tasks.get(j),
                        "value": float(R[i, j - 1]),
                    }
                )
        for j in range(1, len(b) + 1):
            rows.append({**base, "kind": "b", "task_index": j, "task": g.tasks.get(j), "value": float(b[j - 1])})
        for j in range(1, len(b) + 1):
            rows.append(
                {
                    **base,
                    "kind": "b_cold",
                    "task_index": j,
                    "task": g.tasks.get(j),
                    "value": float(g.report.b_cold[j - 1]),
                }
            )
        for kind, key in GEM_SUMMARY:
            rows.append({**base, "kind": kind, "value": getattr(g.report, key), "note": g.report.note})
    return rows


def format_gem(g: GemResult) -> str:
    """One GEM result as text: R with rows = tasks experienced, columns = task evaluated, then the
    cold means, then FWT/BWT (GEM paper form, baseline row 0), FWT vs cold and GEM's code form."""
    R, b_cold = g.report.R, g.report.b_cold
    n = R.shape[1]
    rows = [
        {"after": str(i), **{f"T{j}": fmt_number(float(R[i, j - 1])) for j in range(1, n + 1)}} for i in range(n + 1)
    ]
    rows.append({"after": "cold", **{f"T{j}": fmt_number(float(b_cold[j - 1])) for j in range(1, n + 1)}})
    text = [
        f"GEM matrix of {g.metric} (rows: tasks experienced, 0 = none; last row: cold runs)",
        format_table(rows, right=[f"T{j}" for j in range(1, n + 1)]),
        "   ".join(f"{kind} {fmt_number(getattr(g.report, key), signed=True)}" for kind, key in GEM_SUMMARY[:3]),
        "GEM's code averages over T terms: "
        + "   ".join(
            f"{kind.split()[0]} {fmt_number(getattr(g.report, key), signed=True)}" for kind, key in GEM_SUMMARY[3:]
        ),
    ]
    if g.report.note:
        text.append(f"note: {g.report.note}")
    return "\n".join(text)


DESIGN_REFERENCE = "memory"
"""The design every other is compared with in :func:`design_table`: the stock frame memory, warm."""

DESIGN_COLUMNS = (
    "design", "condition", "n_seeds", "success_mean", "spl_mean",
    "d_success", "d_success_lo", "d_success_hi", "d_spl", "d_spl_lo", "d_spl_hi",
    "frames_kept", "bytes_kept", "query_ms_p50",
)  # fmt: skip
"""Columns of ``designs.csv``."""


def design_table(records: Sequence[Record], reference: str = DESIGN_REFERENCE) -> list[TableRow]:
    """One row per agent, the memory designs side by side: warm records for an agent that carries
    memory (``single`` for one that does not); success and SPL means over (world, seed) pairs; their
    difference to ``reference`` (warm) with the paired bootstrap 95% CI over the pairs both ran
    (:func:`embodmem.stats.paired_ci`, clustered by world); frames and bytes kept (per pair the most
    its memory held, then the mean) and the median of the episodes' median query times.

    Example:
        >>> recs = [{"agent": a, "condition": "warm", "world_seed": w, "seed": 0, "success": s, "spl": s / 2,
        ...          "memory_frames": 10, "memory_bytes": 100, "memory_query_ms": 0.5}
        ...         for w in (1, 2, 3) for a, s in (("memory", 1), ("mine", w % 2))]
        >>> [(r["design"], r["success_mean"], r["d_success"]) for r in design_table(recs)]
        [('memory', 1.0, 0.0), ('mine', 0.6666666666666666, -0.33333333333333337)]
    """
    plain = [r for r in records if r.get("eval_after") is None and not r.get("aborted")]
    agents = sorted({r.get("agent") for r in plain}, key=lambda a: (a != reference, order_key(a)))

    def runs(agent: Any) -> tuple[str, list[Record]]:
        mine = [r for r in plain if r.get("agent") == agent]
        warm = [r for r in mine if str(r.get("condition")) == Condition.warm]
        return (Condition.warm.value, warm) if warm else (Condition.single.value, mine)

    _, ref = runs(reference)
    ref_means = {m: seed_means(ref, m) for m in ("success", "spl")}
    rows = []
    for agent in agents:
        condition, recs = runs(agent)
        if not recs:
            continue
        row: TableRow = {"design": agent, "condition": condition, "n_seeds": len({seed_of(r) for r in recs})}
        for m in ("success", "spl"):
            per_seed = seed_means(recs, m)
            row[f"{m}_mean"] = mean(per_seed.values()) if per_seed else None
            both = [s for s in per_seed if s in ref_means[m]]
            mine_v = [per_seed[s] for s in both]
            ref_v = [ref_means[m][s] for s in both]
            row[f"d_{m}"] = float(difference_of_means(mine_v, ref_v)) if both and ref else None
            lo, hi = (
                paired_ci(mine_v, ref_v, difference_of_means, clusters=[s[0] for s in both]) if both else (None, None)
            )
            row[f"d_{m}_lo"], row[f"d_{m}_hi"] = (lo, hi) if has_ci(len(both)) else (None, None)
        for key, column in (("frames_kept", "memory_frames"), ("bytes_kept", "memory_bytes")):
            most: dict[tuple[Any, ...], float] = {}
            for r in recs:
                if r.get(column) is not None:
                    most[seed_of(r)] = max(most.get(seed_of(r), 0.0), float(r[column]))
            row[key] = mean(most.values()) if most and (condition == Condition.warm or any(most.values())) else None
        times = [float(r["memory_query_ms"]) for r in recs if r.get("memory_query_ms")]
        row["query_ms_p50"] = float(np.median(times)) if times else None
        rows.append(row)
    return rows


def design_print_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """:func:`design_table` rows as printed (the design's name last: plug-in paths are long)."""
    out = []
    for r in rows:
        reference = r.get("design") == DESIGN_REFERENCE
        d = {"cond": str(r.get("condition")), "n": str(r.get("n_seeds"))}
        d["success"], d["SPL"] = fmt_number(r.get("success_mean"), 2), fmt_number(r.get("spl_mean"), 2)
        for header, stem in (("Δ success", "d_success"), ("Δ SPL", "d_spl")):
            d[header] = (
                "-" if reference else fmt_ci(r.get(stem), r.get(f"{stem}_lo"), r.get(f"{stem}_hi"), n=r.get("n_seeds"))
            )
        d["frames"] = fmt_number(r.get("frames_kept"), 0)
        kept = r.get("bytes_kept")
        d["kB"] = fmt_number(None if kept is None else kept / 1000, 1)
        d["ms/q"] = fmt_number(r.get("query_ms_p50"), 3)
        d["design"] = str(r.get("design"))
        out.append(d)
    return out


def format_designs(rows: Sequence[Mapping[str, Any]]) -> str:
    """The side-by-side table of memory designs, with its title."""
    printed = design_print_rows(rows)
    return "\n".join(
        [
            "== Memory designs side by side (warm; single for agents without memory) ==",
            f"means over n (world, seed) pairs; Δ: minus {DESIGN_REFERENCE} warm over the pairs both ran",
            "[paired 95% CI; none for n < 3]; frames, kB: the most its memory kept; ms/q: median per query",
            format_table(printed, right=[h for h in (printed[0] if printed else {}) if h not in ("cond", "design")]),
        ]
    )


@dataclass
class ReportOutput:
    """What :func:`write_summary` computed and wrote, so the caller can print or test it."""

    summary: list[TableRow]
    transfer: list[TableRow]
    gem: list[GemResult]
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    designs: list[TableRow] = field(default_factory=list)
    """:func:`design_table`: printed first, written to ``designs.csv``."""


def format_report(result: ReportOutput) -> str:
    """The printed report: per sequence and agent, the summary, transfer and GEM tables.

    Every line fits 100 columns; docs/reading-output.md explains the columns.
    """
    blocks: list[str] = [format_designs(result.designs)] if result.designs else []
    keys = {(r.get("sequence"), r.get("agent")) for r in result.summary}
    for sequence, agent in sorted(keys, key=lambda k: (order_key(k[0]), order_key(k[1]))):
        mine = [r for r in result.summary if (r.get("sequence"), r.get("agent")) == (sequence, agent)]
        text = [f"== sequence {sequence} | agent {agent} =="]
        summary = summary_print_rows(mine)
        if summary:
            text += [
                "Per task, means over (world, seed) pairs (n); success is the ISR",
                format_table(summary, right=["n"] + [h for h, _, _ in SUMMARY_PRINT]),
            ]
        transfer = [r for r in result.transfer if (r.get("sequence"), r.get("agent")) == (sequence, agent)]
        if any(not is_missing(r.get("ft_success")) for r in transfer):
            headers = [h for h, _, _ in TRANSFER_PRINT]
            text += [
                "",
                "Warm minus cold over n (world, seed) pairs, [paired bootstrap 95% CI; none for n < 3];",
                "seen: target seen in an earlier task of the warm run, not seen: it was not, all: both",
                format_table(transfer_print_rows(transfer), right=["n"] + headers),
                "",
                "Continual World forward transfer, (warm - cold) / (1 - cold), [paired 95% CI]",
                format_table(
                    transfer_print_rows(transfer, NORMALISED_PRINT),
                    right=["n"] + [h for h, _, _ in NORMALISED_PRINT],
                ),
            ]
        for g in result.gem:
            if (g.sequence, g.agent) == (sequence, agent):
                text += ["", format_gem(g)]
        blocks.append("\n".join(text))
    blocks += [f"note: {note}" for note in result.notes]
    return "\n\n".join(blocks)


def print_report(result: ReportOutput, file: TextIO | None = None) -> None:
    """Print :func:`format_report`."""
    print(format_report(result), file=file if file is not None else sys.stdout)
