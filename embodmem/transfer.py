"""Transfer across a task sequence: jumpstart, steps ratio, the GEM matrix with FWT and BWT.

A sequence T1..Tn is run in one persistent world *warm* (memory carried from task to task) and
*cold* (memory reset before each task); the difference is what memory bought (docs/metrics.md).
Everything here works on the per-episode records of ``metrics.jsonl`` (plain dicts), so it runs the
same on a live run and on files read back later.

Seeds: a record's seed is its ``(world_seed, seed)`` pair. Metrics are averaged within a seed first
and then across seeds, so a seed that happened to log more episodes does not weigh more.

Example:
    >>> recs = [
    ...     {"agent": "memory", "condition": "warm", "seed": 0, "task_index": 2, "task": "barrel",
    ...      "success": 1, "spl": 0.8, "steps": 50},
    ...     {"agent": "memory", "condition": "cold", "seed": 0, "task_index": 2, "task": "barrel",
    ...      "success": 0, "spl": 0.0, "steps": 200},
    ... ]
    >>> row = transfer_table(recs)[0]
    >>> row["jumpstart_success"], row["jumpstart_spl"], row["steps_ratio"]
    (1.0, 0.8, 4.0)
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

Record = Mapping[str, Any]

#: Keys that together name one seed (one independent repetition).
SEED_KEYS = ("world_seed", "seed")


# --------------------------------------------------------------------------------------------------
# Small statistics helpers (also used by the report)
# --------------------------------------------------------------------------------------------------


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean; NaN for no values (a missing cell, not an error)."""
    vals = [float(v) for v in values]
    return statistics.fmean(vals) if vals else math.nan


def std(values: Iterable[float]) -> float:
    """Sample standard deviation (ddof=1); NaN with fewer than two values (no spread to report)."""
    vals = [float(v) for v in values]
    return statistics.stdev(vals) if len(vals) >= 2 else math.nan


def median(values: Iterable[float]) -> float:
    """Median; NaN for no values."""
    vals = [float(v) for v in values]
    return statistics.median(vals) if vals else math.nan


def seed_of(record: Record) -> tuple[Any, ...]:
    """The seed a record belongs to: its ``(world_seed, seed)`` values (None where absent)."""
    return tuple(record.get(k) for k in SEED_KEYS)


def metric_value(record: Record, metric: str) -> float | None:
    """A record's value for ``metric`` as a float (bools become 0/1), or None if it has none."""
    value = record.get(metric)
    if value is None:
        return None
    return float(value)


def seed_means(records: Iterable[Record], metric: str) -> dict[tuple[Any, ...], float]:
    """Per-seed mean of ``metric``; records without the metric are skipped.

    Example:
        >>> seed_means([{"seed": 0, "spl": 0.5}, {"seed": 0, "spl": 1.0}, {"seed": 1, "spl": 0.0}], "spl")
        {(None, 0): 0.75, (None, 1): 0.0}
    """
    by_seed: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    for r in records:
        v = metric_value(r, metric)
        if v is not None:
            by_seed[seed_of(r)].append(v)
    return {s: mean(vs) for s, vs in by_seed.items()}


def order_key(value: Any) -> tuple[int, float, str]:
    """Sort key that puts numbers first (numerically), then strings, then None."""
    if value is None:
        return (2, 0.0, "")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, str(value))


# --------------------------------------------------------------------------------------------------
# Jumpstart and steps ratio
# --------------------------------------------------------------------------------------------------


def jumpstart(warm: Iterable[Record], cold: Iterable[Record], metric: str) -> float:
    """``metric_warm - metric_cold`` for one task, each side averaged over seeds.

    Positive means carrying memory over helped from the first episode of the task on.

    Example:
        >>> jumpstart([{"seed": 0, "success": 1}, {"seed": 1, "success": 1}],
        ...           [{"seed": 0, "success": 0}, {"seed": 1, "success": 1}], "success")
        0.5
    """
    return mean(seed_means(warm, metric).values()) - mean(seed_means(cold, metric).values())


def steps_ratio(warm: Iterable[Record], cold: Iterable[Record]) -> float:
    """``mean steps cold / mean steps warm`` (means over seeds); above 1 means warm was faster.

    NaN when either side has no records or the warm mean is 0.

    Example:
        >>> steps_ratio([{"seed": 0, "steps": 50}, {"seed": 1, "steps": 150}],
        ...             [{"seed": 0, "steps": 200}, {"seed": 1, "steps": 200}])   # 200 / 100
        2.0
    """
    w = mean(seed_means(warm, "steps").values())
    c = mean(seed_means(cold, "steps").values())
    if math.isnan(w) or math.isnan(c) or w == 0:
        return math.nan
    return c / w


def per_seed_steps_ratios(warm: Iterable[Record], cold: Iterable[Record]) -> dict[tuple[Any, ...], float]:
    """``steps_cold / steps_warm`` for every seed present in both conditions (warm 0 steps skipped).

    The median of these is less sensitive than the ratio of means to one seed where the cold agent
    wandered for the whole step budget.
    """
    w = seed_means(warm, "steps")
    c = seed_means(cold, "steps")
    return {s: c[s] / w[s] for s in w.keys() & c.keys() if w[s] != 0}


# --------------------------------------------------------------------------------------------------
# GEM matrix, forward and backward transfer (Lopez-Paz & Ranzato, 2017)
# --------------------------------------------------------------------------------------------------


def _only(records: Iterable[Record], key: str, wanted: Any, what: str) -> list[Record]:
    """Filter on ``key == wanted``; with ``wanted=None``, insist the records agree on one value."""
    records = list(records)
    if wanted is not None:
        return [r for r in records if r.get(key) == wanted]
    values = {r.get(key) for r in records}
    if len(values) > 1:
        raise ValueError(
            f"records mix several {what}s {sorted(values, key=order_key)}; pass {key}=... to choose one"
        )
    return records


def _select(records: Iterable[Record], agent: str | None, sequence: str | None) -> list[Record]:
    """Eval and cold records of one agent on one sequence (ambiguity is an error, not a guess)."""
    rel = [r for r in records if r.get("condition") in ("eval", "cold")]
    rel = _only(rel, "agent", agent, "agent")
    return _only(rel, "sequence", sequence, "sequence")


def _n_tasks(records: Sequence[Record], n_tasks: int | None) -> int:
    if n_tasks is not None:
        return int(n_tasks)
    indices = [int(r["task_index"]) for r in records if r.get("task_index") is not None]
    if not indices:
        raise ValueError("no eval or cold records with a task_index: cannot size the GEM matrix")
    return max(indices)


def gem_matrix(
    records: Iterable[Record],
    metric: str = "success",
    *,
    agent: str | None = None,
    sequence: str | None = None,
    n_tasks: int | None = None,
) -> np.ndarray:
    """The GEM matrix ``R``, built from the evaluation records (``condition == "eval"``).

    ``R[i, j - 1]`` is the mean over seeds of ``metric`` on task ``j`` (1-based ``task_index``)
    evaluated after experiencing tasks 1..i (``eval_after == i``), for ``i = 0..n``; row 0 is the
    agent with no experience. The shape is ``(n + 1, n)``: columns are 0-based, so task ``j`` is
    column ``j - 1``.

    Missing cells (no eval record for that ``(eval_after, task_index)``) are NaN, never 0, so they
    cannot pass for a measured failure; :func:`missing_cells` lists them.

    Args:
        records: per-episode records; only ``condition == "eval"`` ones fill R.
        metric: which record field to use as "performance".
        agent: whose records; required when the eval records hold several agents.
        sequence: which sequence; required when the eval records hold several sequences.
        n_tasks: sequence length; defaults to the largest task_index among eval and cold records.

    Raises:
        ValueError: on ambiguous agent/sequence, or an ``eval_after`` / ``task_index`` out of range.

    Example:
        >>> recs = [{"condition": "eval", "eval_after": i, "task_index": j, "success": float(i >= j)}
        ...         for i in range(3) for j in (1, 2)]
        >>> gem_matrix(recs).tolist()
        [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]]
    """
    rel = _select(records, agent, sequence)
    n = _n_tasks(rel, n_tasks)
    cells: dict[tuple[int, int], list[Record]] = defaultdict(list)
    for r in rel:
        if r.get("condition") != "eval":
            continue
        if r.get("eval_after") is None:
            raise ValueError(f"eval record without eval_after: {dict(r)}")
        i, j = int(r["eval_after"]), int(r["task_index"])
        if not (0 <= i <= n and 1 <= j <= n):
            raise ValueError(f"eval record out of range for {n} tasks (eval_after={i}, task_index={j})")
        cells[(i, j)].append(r)
    R = np.full((n + 1, n), np.nan)
    for (i, j), recs in cells.items():
        R[i, j - 1] = mean(seed_means(recs, metric).values())
    return R


def cold_baseline(
    records: Iterable[Record],
    metric: str = "success",
    *,
    agent: str | None = None,
    sequence: str | None = None,
    n_tasks: int | None = None,
) -> np.ndarray:
    """``b``: the cold performance of each task (mean over seeds), shape ``(n,)``, NaN if unmeasured.

    GEM's ``b`` is the untrained model's accuracy; the equivalent here is the agent with its memory
    reset before the task, which is exactly the cold condition.
    """
    rel = _select(records, agent, sequence)
    n = _n_tasks(rel, n_tasks)
    by_task: dict[int, list[Record]] = defaultdict(list)
    for r in rel:
        if r.get("condition") == "cold" and r.get("task_index") is not None:
            by_task[int(r["task_index"])].append(r)
    b = np.full(n, np.nan)
    for j, recs in by_task.items():
        if 1 <= j <= n:
            b[j - 1] = mean(seed_means(recs, metric).values())
    return b


def _mean_available(terms: Iterable[float]) -> float:
    vals = [t for t in terms if not math.isnan(t)]
    return mean(vals)


def forward_transfer(R: np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """FWT = mean over j = 2..n of ``R[j-1][j] - b[j]`` (GEM's 1-based indices).

    How much having experienced the earlier tasks helps on a task before it is attempted. Terms
    whose cell is missing (NaN) are left out of the mean; NaN when no term is available.

    Example:
        >>> R = np.array([[0.0, 0.1, 0.2], [0.9, 0.5, 0.3], [0.8, 0.9, 0.6], [0.7, 0.8, 0.9]])
        >>> round(forward_transfer(R, [0.1, 0.2, 0.3]), 6)   # ((0.5-0.2) + (0.6-0.3)) / 2
        0.3
    """
    R = np.asarray(R, dtype=float)
    b = np.asarray(b, dtype=float)
    n = R.shape[1]
    # 1-based j -> row j-1, column j-1 in our (n+1, n) layout.
    return _mean_available(R[j - 1, j - 1] - b[j - 1] for j in range(2, n + 1))


def backward_transfer(R: np.ndarray) -> float:
    """BWT = mean over j = 1..n-1 of ``R[n][j] - R[j][j]`` (GEM's 1-based indices).

    How much learning later tasks changed performance on earlier ones (negative: forgetting, e.g.
    memory evicted or overwritten). Missing terms are left out; NaN when none is available.

    Example:
        >>> R = np.array([[0.0, 0.1, 0.2], [0.9, 0.5, 0.3], [0.8, 0.9, 0.6], [0.7, 0.8, 0.9]])
        >>> round(backward_transfer(R), 6)   # ((0.7-0.9) + (0.8-0.9)) / 2
        -0.15
    """
    R = np.asarray(R, dtype=float)
    n = R.shape[1]
    return _mean_available(R[n, j - 1] - R[j, j - 1] for j in range(1, n))


def missing_cells(R: np.ndarray) -> list[tuple[int, int]]:
    """``(i, j)`` pairs (row ``eval_after``, 1-based task) of R that have no measurement."""
    R = np.asarray(R, dtype=float)
    return [(int(i), int(j) + 1) for i, j in zip(*np.nonzero(np.isnan(R)))]


def gem_report(
    records: Iterable[Record],
    metric: str = "success",
    *,
    agent: str | None = None,
    sequence: str | None = None,
) -> dict[str, Any]:
    """R, b, FWT, BWT and a note on missing cells, for one agent and sequence.

    Returns:
        dict with ``R`` (array ``(n+1, n)``), ``b`` (array ``(n,)``), ``fwt``, ``bwt``,
        ``missing`` (list of ``(i, j)``) and ``note`` (empty when R and b are complete).
    """
    records = list(records)
    rel = _select(records, agent, sequence)
    n = _n_tasks(rel, None)
    R = gem_matrix(rel, metric, n_tasks=n)
    b = cold_baseline(rel, metric, n_tasks=n)
    missing = missing_cells(R)
    missing_b = [j + 1 for j in range(n) if math.isnan(b[j])]
    notes = []
    if missing:
        notes.append("R has no eval records for (eval_after, task) " + ", ".join(map(str, missing)))
    if missing_b:
        notes.append(f"no cold records for tasks {missing_b}")
    if notes:
        notes.append("FWT/BWT average only the terms that are available")
    return {
        "R": R,
        "b": b,
        "fwt": forward_transfer(R, b),
        "bwt": backward_transfer(R),
        "missing": missing,
        "note": "; ".join(notes),
    }


# --------------------------------------------------------------------------------------------------
# The transfer table
# --------------------------------------------------------------------------------------------------

#: Grouping of the transfer table: one row per agent, sequence and task position.
TRANSFER_KEYS = ("agent", "sequence", "task_index", "task")


def _group(records: Iterable[Record], keys: Sequence[str]) -> dict[tuple[Hashable, ...], list[Record]]:
    groups: dict[tuple[Hashable, ...], list[Record]] = defaultdict(list)
    for r in records:
        groups[tuple(r.get(k) for k in keys)].append(r)
    return dict(sorted(groups.items(), key=lambda kv: tuple(order_key(v) for v in kv[0])))


def transfer_row(warm: Sequence[Record], cold: Sequence[Record], metrics: Sequence[str]) -> dict[str, Any]:
    """Warm/cold means, jumpstarts and steps ratios for one task (the non-key columns of a row)."""
    row: dict[str, Any] = {}
    w_seeds, c_seeds = {seed_of(r) for r in warm}, {seed_of(r) for r in cold}
    row["n_seeds"] = len(w_seeds & c_seeds)
    row["n_warm"], row["n_cold"] = len(w_seeds), len(c_seeds)
    for m in metrics:
        row[f"{m}_warm"] = mean(seed_means(warm, m).values())
        row[f"{m}_cold"] = mean(seed_means(cold, m).values())
        row[f"jumpstart_{m}"] = row[f"{m}_warm"] - row[f"{m}_cold"]
    row["steps_warm"] = mean(seed_means(warm, "steps").values())
    row["steps_cold"] = mean(seed_means(cold, "steps").values())
    row["steps_ratio"] = steps_ratio(warm, cold)
    row["steps_ratio_median"] = median(per_seed_steps_ratios(warm, cold).values())
    seen = [bool(r["target_seen_before"]) for r in warm if r.get("target_seen_before") is not None]
    row["seen_before"] = mean(seen)
    return row


def transfer_table(
    records: Iterable[Record], metrics: Sequence[str] = ("success", "spl")
) -> list[dict[str, Any]]:
    """One row per (agent, sequence, task_index, task) comparing warm with cold.

    Columns: the keys, ``n_seeds`` (seeds present in both conditions), ``n_warm`` / ``n_cold`` (seeds
    in each), ``<m>_warm``, ``<m>_cold`` and ``jumpstart_<m>`` for each metric, ``steps_warm``,
    ``steps_cold``, ``steps_ratio`` (ratio of the means), ``steps_ratio_median`` (median of the
    per-seed ratios) and ``seen_before`` (fraction of warm episodes whose target was in view during
    an earlier task; NaN if unknown). Agents that ran only one condition get NaN on the other side.
    Only ``warm`` and ``cold`` records are used; ``eval`` ones go to :func:`gem_matrix`.
    """
    rows = []
    relevant = [r for r in records if r.get("condition") in ("warm", "cold")]
    for key, recs in _group(relevant, TRANSFER_KEYS).items():
        warm = [r for r in recs if r.get("condition") == "warm"]
        cold = [r for r in recs if r.get("condition") == "cold"]
        rows.append({**dict(zip(TRANSFER_KEYS, key)), **transfer_row(warm, cold, metrics)})
    return rows
