"""``embodmem-report DIR``: turn one run or a whole multirun directory into tables and plots.

A run writes ``metrics.jsonl`` (one JSON record per episode) into its output directory; a Hydra
multirun has one such directory per job (``0/``, ``1/``, ...). This module finds every
``metrics.jsonl`` under DIR, checks each record, and writes into DIR:

- ``summary.csv``: per agent x condition x task, mean, standard deviation and bootstrap 95% CI over
  seeds of success, SPL, SoftSPL, both distance scores, steps, path length and collisions, the
  chain's conditional success rate (CSR), and the number of seeds and episodes;
- ``transfer.csv``: warm against cold per task and seen group, every warm-minus-cold figure with
  its paired bootstrap 95% CI (:func:`embodmem.transfer.transfer_table`);
- ``gem.csv``: the GEM matrix with FWT and BWT, only when there are ``eval`` records;
- ``success_spl_<sequence>.png``: success and SPL bars per task for every agent and condition, with
  95% CI error bars;
- ``transfer_<sequence>.png``: warm-minus-cold success and SPL per task and seen group, with paired
  95% CI error bars;
- ``steps_ratio_<sequence>.png``: steps ratio cold / warm per task (bar: ratio of the means with
  its paired 95% CI, dots: the per-seed ratios).

docs/reading-output.md explains every column and word of the printed tables.

The runner calls :func:`write_summary` and :func:`print_table` at the end of a run, so a single run
and a sweep produce the same files.

Example:
    $ embodmem-report outputs/2025-01-01/12-00-00
    $ embodmem-report multirun/2025-01-01/12-00-00 --no-plots
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from embodmem.atomic import atomic_write_bytes, atomic_write_text
from embodmem.stats import mean_ci
from embodmem.transfer import (
    ALL,
    CHAIN_KEYS,
    TRANSFER_KEYS,
    chain_table,
    gem_report,
    mean,
    order_key,
    per_seed_steps_ratios,
    seed_means,
    seed_of,
    seen_groups,
    std,
    transfer_row,
    transfer_table,
)

Record = Mapping[str, Any]

METRICS_FILE = "metrics.jsonl"

#: Metrics summarised per group (mean, std and 95% CI over seeds).
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

#: Fields that must be numbers (or null) when a record has them.
NUMERIC_FIELDS = SUMMARY_METRICS + (
    "reports",
    "shortest_path",
    "memory_frames",
    "memory_bytes",
    "wall_time_s",
    "memory_query_ms",
    "world_seed",
    "seed",
)

#: The conditions a record's ``condition`` may take (docs/metrics.md).
CONDITIONS = ("warm", "cold", "eval", "single")


class MetricsFormatError(ValueError):
    """A metrics record that cannot be used; the message names the file and line (or record)."""


# --------------------------------------------------------------------------------------------------
# Loading and checking
# --------------------------------------------------------------------------------------------------


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


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float))  # bool is an int: success may be true/false


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_record(record: Any, where: str) -> dict[str, Any]:
    """Check one record against the ``metrics.jsonl`` schema; unknown keys are kept as they are.

    Only what the report relies on is enforced: ``agent`` and ``condition`` are strings,
    ``task_index`` is an integer >= 1, known metric fields are numbers or null, ``eval_after`` is
    an integer >= 0 or null (and set for ``eval`` records).

    Raises:
        MetricsFormatError: naming ``where`` (``file:line`` or ``record N``) and the field.
    """
    if not isinstance(record, dict):
        raise MetricsFormatError(f"{where}: expected a JSON object, got {type(record).__name__}")

    def bad(msg: str) -> MetricsFormatError:
        return MetricsFormatError(f"{where}: {msg}")

    for key in ("agent", "condition"):
        if not isinstance(record.get(key), str):
            raise bad(f"field {key!r} must be a string, got {record.get(key)!r}")
    if record["condition"] not in CONDITIONS:
        raise bad(f"field 'condition' must be one of {list(CONDITIONS)}, got {record['condition']!r}")
    if not _is_int(record.get("task_index")) or record["task_index"] < 1:
        raise bad(f"field 'task_index' must be an integer >= 1, got {record.get('task_index')!r}")
    for key in NUMERIC_FIELDS:
        value = record.get(key)
        if value is not None and not _is_number(value):
            raise bad(f"field {key!r} must be a number or null, got {value!r}")
    eval_after = record.get("eval_after")
    if eval_after is not None and (not _is_int(eval_after) or eval_after < 0):
        raise bad(f"field 'eval_after' must be an integer >= 0 or null, got {eval_after!r}")
    if record["condition"] == "eval" and eval_after is None:
        raise bad("an 'eval' record needs 'eval_after' (the number of tasks experienced)")
    return record


def load_records(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Read and check every record of the given ``metrics.jsonl`` files (blank lines are skipped).

    Raises:
        MetricsFormatError: for a line that is not JSON or not a valid record, as ``file:line: why``.
    """
    records: list[dict[str, Any]] = []
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


# --------------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------------


_CONDITION_ORDER = {"warm": 0, "cold": 1, "single": 2, "eval": 3}


def _sort_value(key: str, value: Any) -> tuple[int, float, str]:
    """Table order: conditions as warm, cold, single, eval; everything else naturally."""
    if key == "condition" and value in _CONDITION_ORDER:
        return (0, float(_CONDITION_ORDER[value]), "")
    return order_key(value)


def _group(records: Iterable[Record], keys: Sequence[str]) -> dict[tuple[Any, ...], list[Record]]:
    groups: dict[tuple[Any, ...], list[Record]] = {}
    for r in records:
        groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    return dict(sorted(groups.items(), key=lambda kv: tuple(_sort_value(k, v) for k, v in zip(keys, kv[0]))))


def summary_table(records: Iterable[Record], metrics: Sequence[str] = SUMMARY_METRICS) -> list[dict[str, Any]]:
    """Per agent x condition x task: ``<m>_mean``, ``<m>_std``, ``<m>_lo`` / ``<m>_hi`` over seeds,
    ``csr`` / ``n_csr`` (chain success, :func:`embodmem.transfer.chain_table`), ``n_seeds`` and
    ``n_episodes``.

    Each seed's episodes are averaged first, so the standard deviation is the spread between seeds
    (sample std, NaN for a single seed) and ``lo`` / ``hi`` is the bootstrap 95% CI of the mean over
    seeds (:func:`embodmem.stats.mean_ci`, NaN for a single seed). ``success_mean`` is the chain's
    independent success rate (ISR).
    """
    records = list(records)
    chains = {tuple(c[k] for k in CHAIN_KEYS): c for c in chain_table(records)}
    rows = []
    for key, recs in _group(records, SUMMARY_KEYS).items():
        row: dict[str, Any] = dict(zip(SUMMARY_KEYS, key))
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


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt_number(value: Any, decimals: int = 2, signed: bool = False) -> str:
    """A number with fixed decimals (``+`` shown when ``signed``); ``-`` for missing or NaN.

    Example:
        >>> fmt_number(0.333), fmt_number(0.25, signed=True), fmt_number(156.04, 1), fmt_number(None)
        ('0.33', '+0.25', '156.0', '-')
        >>> fmt_number(-1e-17, signed=True)
        '+0.00'
    """
    if _missing(value):
        return "-"
    number = float(value)
    if round(number, decimals) == 0:
        number = 0.0  # no "-0.00" for a tiny negative
    return f"{number:{'+' if signed else ''}.{decimals}f}"


def fmt_ci(value: Any, lo: Any, hi: Any, decimals: int = 2, signed: bool = True) -> str:
    """``value [lo,hi]`` with one format for all three; the value alone when there is no interval.

    Example:
        >>> fmt_ci(0.33, 0.1, 0.55), fmt_ci(1.74, 1.11, 2.68, signed=False), fmt_ci(0.5, None, None)
        ('+0.33 [+0.10,+0.55]', '1.74 [1.11,2.68]', '+0.50')
    """
    text = fmt_number(value, decimals, signed)
    if _missing(value) or _missing(lo) or _missing(hi):
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
    """Summary rows (not ``eval``) as printed: means over seeds with one format per column."""
    out = []
    for r in rows:
        if r.get("condition") == "eval":
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


#: Printed words for the seen groups (short, so the transfer table fits 100 columns).
_SEEN_WORDS = {"seen": "yes", "not seen": "no", ALL: "all"}


def transfer_print_rows(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str, bool]] = TRANSFER_PRINT
) -> list[dict[str, str]]:
    """Transfer rows as printed: each figure with its paired 95% CI."""
    out = []
    for r in rows:
        d = {
            "task": _task_label(r),
            "seen": _SEEN_WORDS.get(r.get("seen"), "all"),
            "n": str(r.get("n_seeds")),
        }
        for header, stem, signed in columns:
            d[header] = fmt_ci(r.get(stem), r.get(f"{stem}_lo"), r.get(f"{stem}_hi"), signed=signed)
        out.append(d)
    return out


def _gem_rows(records: Sequence[Record], metrics: Sequence[str]) -> list[dict[str, Any]]:
    """GEM results per agent, sequence and metric, for every pair that has eval records."""
    pairs = sorted(
        {(r.get("agent"), r.get("sequence")) for r in records if r.get("condition") == "eval"},
        key=lambda p: (order_key(p[0]), order_key(p[1])),
    )
    out = []
    for agent, sequence in pairs:
        mine = [r for r in records if r.get("agent") == agent and r.get("sequence") == sequence]
        tasks = {int(r["task_index"]): r.get("task") for r in mine}
        for m in metrics:
            rep = gem_report(mine, m)
            out.append({"agent": agent, "sequence": sequence, "metric": m, "tasks": tasks, **rep})
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


def _gem_csv_rows(gems: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """GEM results in long form: one row per R cell, per baseline entry (``b`` is row 0 of R,
    ``b_cold`` the cold means), and one per summary of :data:`GEM_SUMMARY`."""
    rows = []
    for g in gems:
        base = {"agent": g["agent"], "sequence": g["sequence"], "metric": g["metric"]}
        R, b = g["R"], g["b"]
        for i in range(R.shape[0]):
            for j in range(1, R.shape[1] + 1):
                rows.append(
                    {
                        **base,
                        "kind": "R",
                        "eval_after": i,
                        "task_index": j,
                        "task": g["tasks"].get(j),
                        "value": float(R[i, j - 1]),
                    }
                )
        for j in range(1, len(b) + 1):
            rows.append({**base, "kind": "b", "task_index": j, "task": g["tasks"].get(j), "value": float(b[j - 1])})
        for j in range(1, len(b) + 1):
            rows.append(
                {
                    **base,
                    "kind": "b_cold",
                    "task_index": j,
                    "task": g["tasks"].get(j),
                    "value": float(g["b_cold"][j - 1]),
                }
            )
        for kind, key in GEM_SUMMARY:
            rows.append({**base, "kind": kind, "value": g[key], "note": g["note"]})
    return rows


def format_gem(g: Mapping[str, Any]) -> str:
    """One GEM result as text: R with rows = tasks experienced, columns = task evaluated, then the
    cold means, then FWT/BWT (GEM paper form, baseline row 0), FWT vs cold and GEM's code form."""
    R, b_cold = g["R"], g["b_cold"]
    n = R.shape[1]
    rows = [
        {"after": str(i), **{f"T{j}": fmt_number(float(R[i, j - 1])) for j in range(1, n + 1)}} for i in range(n + 1)
    ]
    rows.append({"after": "cold", **{f"T{j}": fmt_number(float(b_cold[j - 1])) for j in range(1, n + 1)}})
    text = [
        f"GEM matrix of {g['metric']} (rows: tasks experienced, 0 = none; last row: cold runs)",
        format_table(rows, right=[f"T{j}" for j in range(1, n + 1)]),
        "   ".join(f"{kind} {fmt_number(g[key], signed=True)}" for kind, key in GEM_SUMMARY[:3]),
        "GEM's code averages over T terms: "
        + "   ".join(f"{kind.split()[0]} {fmt_number(g[key], signed=True)}" for kind, key in GEM_SUMMARY[3:]),
    ]
    if g["note"]:
        text.append(f"note: {g['note']}")
    return "\n".join(text)


# --------------------------------------------------------------------------------------------------
# Plots (matplotlib's Agg canvas directly: no pyplot state, no display needed)
# --------------------------------------------------------------------------------------------------


def _safe_name(value: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(value)) if value is not None else "all"


def _save_png(fig: Any, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return atomic_write_bytes(path, buf.getvalue())


def _task_positions(rows: Sequence[Mapping[str, Any]]) -> list[tuple[int, Any]]:
    return sorted({(int(r["task_index"]), r.get("task")) for r in rows}, key=lambda t: (t[0], order_key(t[1])))


def _error_bars(rows: Sequence[Mapping[str, Any]], value: str, lo: str, hi: str) -> list[list[float]]:
    """Matplotlib ``yerr`` from CI columns: distances below and above the value (0 without a CI)."""
    below, above = [], []
    for r in rows:
        v, a, b = r.get(value), r.get(lo), r.get(hi)
        missing = any(_missing(x) for x in (v, a, b))
        below.append(0.0 if missing else max(0.0, float(v) - float(a)))
        above.append(0.0 if missing else max(0.0, float(b) - float(v)))
    return [below, above]


def plot_success_spl(summary_rows: Sequence[Mapping[str, Any]], path: str | Path, title: str = "") -> Path | None:
    """Success and SPL per task, one bar per agent/condition, error bars = bootstrap 95% CI of the
    mean over seeds (none with one seed).

    Returns None (and writes nothing) when there are no warm / cold / single rows.
    """
    from matplotlib.figure import Figure

    rows = [r for r in summary_rows if r.get("condition") != "eval"]
    if not rows:
        return None
    tasks = _task_positions(rows)
    with_warm = {r["agent"] for r in rows if r["condition"] == "warm"}
    # Memory agents (warm, then cold) first, then the baselines that ran one condition.
    labels = sorted(
        {(r["agent"], r["condition"]) for r in rows},
        key=lambda ac: (ac[0] not in with_warm, order_key(ac[0]), _CONDITION_ORDER.get(ac[1], 9), ac[1]),
    )
    by_key = {(int(r["task_index"]), r.get("task"), r["agent"], r["condition"]): r for r in rows}
    width = 0.8 / max(1, len(labels))
    fig = Figure(figsize=(max(7.0, 3.2 * len(tasks)), 4.0), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, metric, name in zip(axes, ("success", "spl"), ("success rate", "SPL")):
        for k, (agent, cond) in enumerate(labels):
            xs, shown = [], []
            for t, (idx, task) in enumerate(tasks):
                r = by_key.get((idx, task, agent, cond))
                if r is None or r[f"{metric}_mean"] is None:
                    continue
                xs.append(t - 0.4 + width * (k + 0.5))
                shown.append(r)
            ys = [r[f"{metric}_mean"] for r in shown]
            yerr = _error_bars(shown, f"{metric}_mean", f"{metric}_lo", f"{metric}_hi")
            ax.bar(xs, ys, width=width, yerr=yerr, capsize=3, label=f"{agent} / {cond}")
        ax.set_xticks(range(len(tasks)), [f"T{idx}\n{task}" for idx, task in tasks])
        ax.set_ylim(0, 1.05)
        ax.set_ylabel(name)
        ax.set_title(f"{name} (error bars: bootstrap 95% CI over seeds)", fontsize=8)
    handles, names = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, names, loc="outside lower center", ncols=min(len(names), 4), fontsize=8)
    if title:
        fig.suptitle(title)
    return _save_png(fig, Path(path))


def _transfer_positions(rows: Sequence[Mapping[str, Any]]) -> list[tuple[int, Any, str]]:
    """x positions of the transfer plots: (task_index, task, seen group) in table order."""
    return list(dict.fromkeys((int(r["task_index"]), r.get("task"), str(r.get("seen"))) for r in rows))


def _bars_by_agent(ax: Any, rows: Sequence[Mapping[str, Any]], stem: str) -> list[tuple[float, Mapping[str, Any]]]:
    """One bar per agent at each (task, seen) position, with the ``stem`` CI as error bars."""
    positions = _transfer_positions(rows)
    agents = sorted({r["agent"] for r in rows}, key=order_key)
    width = 0.8 / max(1, len(agents))
    placed = []
    for k, agent in enumerate(agents):
        xs, shown = [], []
        for t, pos in enumerate(positions):
            r = next(
                (r for r in rows if r["agent"] == agent and (r["task_index"], r.get("task"), r.get("seen")) == pos),
                None,
            )
            if r is None or _missing(r.get(stem)):
                continue
            xs.append(t - 0.4 + width * (k + 0.5))
            shown.append(r)
        yerr = _error_bars(shown, stem, f"{stem}_lo", f"{stem}_hi")
        ax.bar(xs, [r[stem] for r in shown], width=width, yerr=yerr, capsize=3, label=agent)
        placed += list(zip(xs, shown))
    labels = [f"T{idx} {task}\n{seen}" for idx, task, seen in positions]
    ax.set_xticks(range(len(positions)), labels, fontsize=8)
    return placed


def plot_transfer(transfer_rows: Sequence[Mapping[str, Any]], path: str | Path, title: str = "") -> Path | None:
    """Warm-minus-cold success and SPL (ft) per task and seen group, error bars = paired 95% CI.

    Returns None (and writes nothing) when no agent ran both warm and cold.
    """
    from matplotlib.figure import Figure

    rows = [r for r in transfer_rows if not _missing(r.get("ft_success")) or not _missing(r.get("ft_spl"))]
    if not rows:
        return None
    n = len(_transfer_positions(rows))
    fig = Figure(figsize=(max(7.0, 2.4 * n), 4.0), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, stem, name in zip(axes, ("ft_success", "ft_spl"), ("success", "SPL")):
        _bars_by_agent(ax, rows, stem)
        ax.axhline(0.0, color="grey", linewidth=1)
        ax.set_ylabel(f"warm - cold {name}")
        ax.set_title(f"ft {name} (error bars: paired bootstrap 95% CI)", fontsize=8)
    axes[0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return _save_png(fig, Path(path))


def plot_steps_ratio(
    records: Sequence[Record],
    path: str | Path,
    title: str = "",
    transfer_rows: Sequence[Mapping[str, Any]] | None = None,
) -> Path | None:
    """Steps ratio cold/warm per task, seen group and agent: bar = ratio of the means with its
    paired 95% CI, dots = per-seed ratios.

    Returns None (and writes nothing) when no agent ran both conditions.
    """
    from matplotlib.figure import Figure

    table = transfer_table(records) if transfer_rows is None else transfer_rows
    rows = [r for r in table if not _missing(r.get("steps_ratio"))]
    if not rows:
        return None
    fig = Figure(figsize=(max(5.0, 1.8 * len(_transfer_positions(rows))), 4.0), layout="constrained")
    ax = fig.subplots()
    for x, r in _bars_by_agent(ax, rows, "steps_ratio"):
        mine = [
            q
            for q in records
            if (q.get("agent"), q.get("task_index"), q.get("task")) == (r["agent"], r["task_index"], r["task"])
        ]
        warm = [q for q in mine if q.get("condition") == "warm"]
        cold = [q for q in mine if q.get("condition") == "cold"]
        ratios = per_seed_steps_ratios(warm, cold)
        if r.get("seen") != ALL:
            groups = seen_groups(mine)
            ratios = {s: v for s, v in ratios.items() if groups.get(s) == r.get("seen")}
        ax.scatter([x] * len(ratios), list(ratios.values()), color="black", s=8, zorder=3)
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1, label="no change")
    ax.set_ylabel("steps cold / steps warm")
    ax.set_title("steps ratio (bar: ratio of means, paired 95% CI; dots: per seed)", fontsize=9)
    ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return _save_png(fig, Path(path))


# --------------------------------------------------------------------------------------------------
# Writing everything
# --------------------------------------------------------------------------------------------------


@dataclass
class ReportOutput:
    """What :func:`write_summary` computed and wrote, so the caller can print or test it."""

    summary: list[dict[str, Any]]
    transfer: list[dict[str, Any]]
    gem: list[dict[str, Any]]
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def write_summary(records: Iterable[Record], out_dir: str | Path, *, plots: bool = True) -> ReportOutput:
    """Write ``summary.csv``, ``transfer.csv``, ``gem.csv`` (if eval records) and the plots into ``out_dir``.

    Records are checked first (:func:`validate_record`), so the runner's in-memory records meet the
    same schema as files read back.

    Raises:
        MetricsFormatError: for an invalid record, naming its position (``record N``, 1-based).
    """
    records = [validate_record(r, f"record {i}") for i, r in enumerate(records, start=1)]
    out = Path(out_dir)
    summary = summary_table(records)
    transfer = transfer_table(records, TRANSFER_METRICS)
    gems = _gem_rows(records, TRANSFER_METRICS)
    result = ReportOutput(summary=summary, transfer=transfer, gem=gems)

    summary_cols = list(SUMMARY_KEYS) + ["n_seeds", "n_episodes"]
    summary_cols += [f"{m}_{s}" for m in SUMMARY_METRICS for s in ("mean", "std", "lo", "hi")]
    summary_cols += ["csr", "n_csr"]
    result.files.append(write_csv(out / "summary.csv", summary, summary_cols))
    transfer_cols = list(TRANSFER_KEYS) + list(transfer_row([], [], TRANSFER_METRICS))
    result.files.append(write_csv(out / "transfer.csv", transfer, transfer_cols))
    if gems:
        result.files.append(write_csv(out / "gem.csv", _gem_csv_rows(gems), GEM_COLUMNS))
        result.notes += [f"GEM {g['agent']}/{g['sequence']}/{g['metric']}: {g['note']}" for g in gems if g["note"]]

    if plots:
        for sequence in sorted({r.get("sequence") for r in records}, key=order_key):
            seq_records = [r for r in records if r.get("sequence") == sequence]
            seq_summary = [r for r in summary if r.get("sequence") == sequence]
            seq_transfer = [r for r in transfer if r.get("sequence") == sequence]
            name = _safe_name(sequence)
            title = f"sequence: {sequence}" if sequence is not None else ""
            bars_png = plot_success_spl(seq_summary, out / f"success_spl_{name}.png", title)
            if bars_png is not None:
                result.files.append(bars_png)
            transfer_png = plot_transfer(seq_transfer, out / f"transfer_{name}.png", title)
            ratio_png = plot_steps_ratio(seq_records, out / f"steps_ratio_{name}.png", title, seq_transfer)
            if transfer_png is None or ratio_png is None:
                result.notes.append(f"no transfer plots for sequence {sequence}: no agent ran both warm and cold")
            result.files += [p for p in (transfer_png, ratio_png) if p is not None]
    return result


def format_report(result: ReportOutput) -> str:
    """The printed report: per sequence and agent, the summary, transfer and GEM tables.

    Every line fits 100 columns; docs/reading-output.md explains the columns.
    """
    blocks: list[str] = []
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
        if any(not _missing(r.get("ft_success")) for r in transfer):
            headers = [h for h, _, _ in TRANSFER_PRINT]
            text += [
                "",
                "Warm minus cold, [paired bootstrap 95% CI]; seen: target seen in an earlier task",
                format_table(transfer_print_rows(transfer), right=["n"] + headers),
                "",
                "Continual World forward transfer, (warm - cold) / (1 - cold), [95% CI]",
                format_table(
                    transfer_print_rows(transfer, NORMALISED_PRINT),
                    right=["n"] + [h for h, _, _ in NORMALISED_PRINT],
                ),
            ]
        for g in result.gem:
            if (g["sequence"], g["agent"]) == (sequence, agent):
                text += ["", format_gem(g)]
        blocks.append("\n".join(text))
    blocks += [f"note: {note}" for note in result.notes]
    return "\n\n".join(blocks)


def print_report(result: ReportOutput, file: TextIO | None = None) -> None:
    """Print :func:`format_report`."""
    print(format_report(result), file=file if file is not None else sys.stdout)


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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
