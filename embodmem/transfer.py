"""Transfer across a task sequence: forward transfer, steps ratio, chain success, GEM's FWT and BWT.

A sequence T1..Tn is run in one persistent world *warm* (memory carried from task to task) and
*cold* (memory reset before each task); the difference is what memory bought. Everything here works
on the per-episode records of ``metrics.jsonl`` (plain dicts), so it runs the same on a live run and
on files read back later. docs/metrics.md gives every formula with its source.

Seeds: a record's seed is its ``(world_seed, seed)`` pair, and warm and cold runs of one seed face
the same world and starts, so they are paired. Metrics are averaged within a seed first and then
across seeds, so a seed that happened to log more episodes does not weigh more. Confidence intervals
come from :mod:`embodmem.stats` (paired bootstrap over seeds).

Example:
    >>> recs = [
    ...     {"agent": "memory", "condition": "warm", "seed": 0, "task_index": 2, "task": "barrel",
    ...      "success": 1, "spl": 0.8, "steps": 50},
    ...     {"agent": "memory", "condition": "cold", "seed": 0, "task_index": 2, "task": "barrel",
    ...      "success": 0, "spl": 0.0, "steps": 200},
    ... ]
    >>> row = transfer_table(recs)[0]
    >>> row["ft_success"], row["ft_spl"], row["steps_ratio"], row["seen"]
    (1.0, 0.8, 4.0, 'not seen')
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from embodmem.condition import Condition
from embodmem.stats import difference_of_means, normalised_gain, paired_ci, ratio_of_means

Record = Mapping[str, Any]
Cell = str | int | float | bool | None
"""One value of a table row (a CSV cell): a grouping value, a count, a mean or an interval end."""
TableRow = dict[str, Cell]
"""One row of a table: column name -> cell (the columns depend on the metrics asked for)."""

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
# Forward transfer (Continual World) and steps ratio
# --------------------------------------------------------------------------------------------------


def unnormalised_ft(warm: Iterable[Record], cold: Iterable[Record], metric: str) -> float:
    """``mean warm - mean cold`` of ``metric`` on one task, each side averaged over seeds.

    This is Continual World's un-normalised forward transfer ``AUC - AUC_b`` (Wolczyk et al., 2021)
    with the task's episodes as the curve: the gain averaged over *all* episodes of the task, not a
    first-episode jumpstart. The cold run (memory reset before the task) is the single-task
    reference of the same agent.

    Example:
        >>> unnormalised_ft([{"seed": 0, "success": 1}, {"seed": 1, "success": 1}],
        ...                 [{"seed": 0, "success": 0}, {"seed": 1, "success": 1}], "success")
        0.5
    """
    return mean(seed_means(warm, metric).values()) - mean(seed_means(cold, metric).values())


def normalised_ft(warm: Iterable[Record], cold: Iterable[Record], metric: str) -> float:
    """Continual World's forward transfer ``(AUC - AUC_b) / (1 - AUC_b)`` of ``metric`` on one task.

    ``AUC`` is the warm mean and ``AUC_b`` the mean of the single-task reference run of the same
    agent (its cold run), each averaged over seeds. 1 means memory closed the whole gap to perfect,
    0 no gain, negative a loss. NaN when the reference is already perfect (``AUC_b == 1``) or a side
    is missing. For metrics bounded by 1 (success, SPL).

    Example:
        >>> normalised_ft([{"seed": 0, "success": 1}, {"seed": 1, "success": 0}],
        ...               [{"seed": 0, "success": 0}, {"seed": 1, "success": 0}], "success")
        0.5
    """
    w = mean(seed_means(warm, metric).values())
    b = mean(seed_means(cold, metric).values())
    if math.isnan(w) or math.isnan(b) or b >= 1.0:
        return math.nan
    return (w - b) / (1.0 - b)


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
        raise ValueError(f"records mix several {what}s {sorted(values, key=order_key)}; pass {key}=... to choose one")
    return records


def _select(records: Iterable[Record], agent: str | None, sequence: str | None) -> list[Record]:
    """Eval and cold records of one agent on one sequence (ambiguity is an error, not a guess)."""
    rel = [r for r in records if r.get("condition") in (Condition.eval, Condition.cold)]
    rel = _only(rel, "agent", agent, "agent")
    return _only(rel, "sequence", sequence, "sequence")


def _n_tasks(records: Sequence[Record], n_tasks: int | None) -> int:
    """The sequence length, after refusing any record whose indices cannot exist in it."""
    if n_tasks is None:
        indices = [int(r["task_index"]) for r in records if r.get("task_index") is not None]
        if not indices:
            raise ValueError("no eval or cold records with a task_index: cannot size the GEM matrix")
        n_tasks = max(indices)
    n = int(n_tasks)
    for r in records:
        _check_indices(r, n)
    return n


def _check_indices(record: Record, n: int) -> None:
    """Refuse an eval or cold record that no cell of a sequence of ``n`` tasks can hold."""
    condition = record.get("condition")
    j = record.get("task_index")
    if condition == Condition.eval:
        i = record.get("eval_after")
        if i is None or j is None:
            raise ValueError(f"eval record without eval_after or task_index: {dict(record)}")
        if not (0 <= int(i) <= n and 1 <= int(j) <= n):
            raise ValueError(
                f"eval record out of range for {n} tasks (eval_after={i}, task_index={j}); "
                f"allowed: eval_after 0..{n}, task_index 1..{n}"
            )
    elif j is not None and not 1 <= int(j) <= n:
        raise ValueError(f"{condition} record out of range for {n} tasks (task_index={j}); allowed: 1..{n}")


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
        ValueError: on ambiguous agent/sequence, or an eval or cold record whose ``eval_after`` /
            ``task_index`` is missing or out of range (such a record is refused, never dropped).

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
        if r.get("condition") == Condition.eval:
            cells[(int(r["eval_after"]), int(r["task_index"]))].append(r)
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
    """The cold performance of each task (mean over seeds), shape ``(n,)``, NaN if unmeasured.

    Used only for "FWT vs cold", a variant of GEM's FWT (GEM's own baseline is row 0 of R).

    Raises:
        ValueError: as :func:`gem_matrix`, for a record whose indices are out of range.
    """
    rel = _select(records, agent, sequence)
    n = _n_tasks(rel, n_tasks)
    by_task: dict[int, list[Record]] = defaultdict(list)
    for r in rel:
        if r.get("condition") == Condition.cold and r.get("task_index") is not None:
            by_task[int(r["task_index"])].append(r)
    b = np.full(n, np.nan)
    for j, recs in by_task.items():
        b[j - 1] = mean(seed_means(recs, metric).values())
    return b


def _mean_available(terms: Iterable[float], count: int | None = None) -> float:
    """Mean of the terms that are not NaN; with ``count``, their sum divided by ``count``."""
    vals = [t for t in terms if not math.isnan(t)]
    if count is None or not vals:
        return mean(vals)
    return float(sum(vals)) / count


#: ``"paper"``: GEM paper's means over the T-1 terms that exist; ``"code"``: GEM's ``metrics.py``,
#: which averages T terms (FWT's first and BWT's last term are 0 by construction).
AVERAGING = ("paper", "code")


def _check_averaging(averaging: str) -> None:
    if averaging not in AVERAGING:
        raise ValueError(f"averaging must be one of {list(AVERAGING)}, got {averaging!r}")


def forward_transfer(R: np.ndarray, b: Sequence[float] | np.ndarray | None = None, averaging: str = "paper") -> float:
    """GEM's FWT = 1/(T-1) * sum over j = 2..T of ``R[j-1][j] - b[j]`` (Lopez-Paz & Ranzato, 2017).

    How much having experienced the earlier tasks helps on a task before it is attempted. ``b``
    defaults to row 0 of R, GEM's own baseline: every task evaluated before any experience
    (``eval_after == 0``). Passing the cold means instead gives "FWT vs cold".

    ``averaging="code"`` divides by T as GEM's ``metrics.py`` does (its first term is 0). Terms whose
    cell is missing (NaN) are left out; NaN when no term is available.

    Example:
        >>> R = np.array([[0.0, 0.1, 0.2], [0.9, 0.5, 0.3], [0.8, 0.9, 0.6], [0.7, 0.8, 0.9]])
        >>> round(forward_transfer(R), 6)                     # ((0.5-0.1) + (0.6-0.2)) / 2
        0.4
        >>> round(forward_transfer(R, averaging="code"), 6)   # 0.8 / 3
        0.266667
        >>> round(forward_transfer(R, [0.1, 0.2, 0.3]), 6)    # vs cold: ((0.5-0.2) + (0.6-0.3)) / 2
        0.3
    """
    _check_averaging(averaging)
    R = np.asarray(R, dtype=float)
    n = R.shape[1]
    base = R[0] if b is None else np.asarray(b, dtype=float)
    # 1-based j -> row j-1, column j-1 in our (n+1, n) layout.
    terms = [R[j - 1, j - 1] - base[j - 1] for j in range(2, n + 1)]
    return _mean_available(terms, n if averaging == "code" else None)


def backward_transfer(R: np.ndarray, averaging: str = "paper") -> float:
    """GEM's BWT = 1/(T-1) * sum over j = 1..T-1 of ``R[T][j] - R[j][j]`` (1-based indices).

    How much learning later tasks changed performance on earlier ones (negative: forgetting, e.g.
    memory evicted or overwritten). ``averaging="code"`` divides by T as GEM's ``metrics.py`` does.
    Missing terms are left out; NaN when none is available.

    Example:
        >>> R = np.array([[0.0, 0.1, 0.2], [0.9, 0.5, 0.3], [0.8, 0.9, 0.6], [0.7, 0.8, 0.9]])
        >>> round(backward_transfer(R), 6)                     # ((0.7-0.9) + (0.8-0.9)) / 2
        -0.15
        >>> round(backward_transfer(R, averaging="code"), 6)   # -0.3 / 3
        -0.1
    """
    _check_averaging(averaging)
    R = np.asarray(R, dtype=float)
    n = R.shape[1]
    terms = [R[n, j - 1] - R[j, j - 1] for j in range(1, n)]
    return _mean_available(terms, n if averaging == "code" else None)


def missing_cells(R: np.ndarray) -> list[tuple[int, int]]:
    """``(i, j)`` pairs (row ``eval_after``, 1-based task) of R that have no measurement."""
    R = np.asarray(R, dtype=float)
    return [(int(i), int(j) + 1) for i, j in zip(*np.nonzero(np.isnan(R)))]


@dataclass(frozen=True)
class GemReport:
    """The GEM figures of one agent, sequence and metric (:func:`gem_report`)."""

    R: np.ndarray
    """(n+1, n): row i = the state after i tasks, evaluated on every task."""
    b: np.ndarray
    """Row 0 of R, GEM's baseline."""
    b_cold: np.ndarray
    """(n,): the cold runs' means per task."""
    fwt: float
    """GEM paper: baseline row 0, mean over T-1 terms."""
    bwt: float
    fwt_code: float
    """GEM's ``metrics.py``: mean over T terms."""
    bwt_code: float
    fwt_vs_cold: float
    """The paper's form with the cold means as baseline."""
    missing: list[tuple[int, int]]
    """(eval_after, task) cells R has no record for."""
    note: str
    """Empty when R and the cold means are complete."""


def gem_report(
    records: Iterable[Record],
    metric: str = "success",
    *,
    agent: str | None = None,
    sequence: str | None = None,
) -> GemReport:
    """R, the baselines, FWT, BWT and a note on missing cells, for one agent and sequence
    (:class:`GemReport`)."""
    records = list(records)
    rel = _select(records, agent, sequence)
    n = _n_tasks(rel, None)
    R = gem_matrix(rel, metric, n_tasks=n)
    b_cold = cold_baseline(rel, metric, n_tasks=n)
    missing = missing_cells(R)
    missing_b = [j + 1 for j in range(n) if math.isnan(b_cold[j])]
    notes = []
    if missing:
        notes.append("R has no eval records for (eval_after, task) " + ", ".join(map(str, missing)))
    if missing_b:
        notes.append(f"no cold records for tasks {missing_b} (FWT vs cold)")
    if notes:
        notes.append("FWT/BWT average only the terms that are available")
    return GemReport(
        R=R,
        b=R[0].copy(),
        b_cold=b_cold,
        fwt=forward_transfer(R),
        bwt=backward_transfer(R),
        fwt_code=forward_transfer(R, averaging="code"),
        bwt_code=backward_transfer(R, averaging="code"),
        fwt_vs_cold=forward_transfer(R, b_cold),
        missing=missing,
        note="; ".join(notes),
    )


# --------------------------------------------------------------------------------------------------
# The transfer table
# --------------------------------------------------------------------------------------------------

#: Grouping of the transfer table: one row per agent, sequence, task position and seen group.
TRANSFER_KEYS = ("agent", "sequence", "task_index", "task", "seen")

#: Seen groups: whether the task's target was in view during an earlier task of the seed's warm
#: run; "all" pools both and is listed only when a task has seeds in both groups.
SEEN, NOT_SEEN, ALL = "seen", "not seen", "all"


CONDITION_ORDER = {Condition.warm: 0, Condition.cold: 1, Condition.single: 2, Condition.eval: 3}
"""Table order of the conditions: the memory agents' two, then the baselines', then evaluations."""


def sort_value(key: str, value: Any) -> tuple[int, float, str]:
    """Table order of one grouping value: conditions as :data:`CONDITION_ORDER`, everything else by
    :func:`order_key`."""
    if key == "condition" and value in CONDITION_ORDER:
        return (0, float(CONDITION_ORDER[value]), "")
    return order_key(value)


def group_records(records: Iterable[Record], keys: Sequence[str]) -> dict[tuple[Any, ...], list[Record]]:
    """Records grouped by their values of ``keys`` (missing: None), groups in table order.

    >>> recs = [{"agent": "b", "condition": "cold"}, {"agent": "a", "condition": "warm"}, {"agent": "a"}]
    >>> list(group_records(recs, ("agent", "condition")))
    [('a', 'warm'), ('a', None), ('b', 'cold')]
    """
    groups: dict[tuple[Any, ...], list[Record]] = defaultdict(list)
    for r in records:
        groups[tuple(r.get(k) for k in keys)].append(r)
    return dict(sorted(groups.items(), key=lambda kv: tuple(sort_value(k, v) for k, v in zip(keys, kv[0]))))


def paired_seed_means(warm: Iterable[Record], cold: Iterable[Record], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-seed means of ``metric`` for the seeds present in both conditions, in one seed order."""
    w, c = seed_means(warm, metric), seed_means(cold, metric)
    seeds = sorted(w.keys() & c.keys(), key=lambda s: tuple(order_key(v) for v in s))
    return np.array([w[s] for s in seeds], dtype=float), np.array([c[s] for s in seeds], dtype=float)


def transfer_row(warm: Sequence[Record], cold: Sequence[Record], metrics: Sequence[str]) -> TableRow:
    """Warm/cold means, forward transfer and steps ratio with 95% CIs for one task (non-key columns).

    Point estimates use every seed of each side; the intervals resample the seeds present in both
    (paired bootstrap, :func:`embodmem.stats.paired_ci`), so with complete records both use the
    same seeds.
    """
    row: TableRow = {}
    w_seeds, c_seeds = {seed_of(r) for r in warm}, {seed_of(r) for r in cold}
    row["n_seeds"] = len(w_seeds & c_seeds)
    row["n_warm"], row["n_cold"] = len(w_seeds), len(c_seeds)
    for m in metrics:
        row[f"{m}_warm"] = mean(seed_means(warm, m).values())
        row[f"{m}_cold"] = mean(seed_means(cold, m).values())
        pw, pc = paired_seed_means(warm, cold, m)
        row[f"ft_{m}"] = unnormalised_ft(warm, cold, m)
        row[f"ft_{m}_lo"], row[f"ft_{m}_hi"] = paired_ci(pw, pc, difference_of_means)
        row[f"ft_norm_{m}"] = normalised_ft(warm, cold, m)
        row[f"ft_norm_{m}_lo"], row[f"ft_norm_{m}_hi"] = paired_ci(pw, pc, normalised_gain)
    row["steps_warm"] = mean(seed_means(warm, "steps").values())
    row["steps_cold"] = mean(seed_means(cold, "steps").values())
    row["steps_ratio"] = steps_ratio(warm, cold)
    pw, pc = paired_seed_means(warm, cold, "steps")
    row["steps_ratio_lo"], row["steps_ratio_hi"] = paired_ci(pw, pc, ratio_of_means)
    row["steps_ratio_median"] = median(per_seed_steps_ratios(warm, cold).values())
    seen = [bool(r["target_seen_before"]) for r in warm if r.get("target_seen_before") is not None]
    row["seen_before"] = mean(seen)
    return row


def seen_groups(records: Sequence[Record]) -> dict[tuple[Any, ...], str]:
    """Seen group of each seed of one task: from its warm records, else from whatever it has.

    A seed is "seen" when the target was in view during an earlier task of the seed's warm run
    (the memory the warm agent carries is what can have seen it). Seeds with no record that knows
    (``target_seen_before`` missing) are "not seen".
    """
    flags: dict[tuple[Any, ...], bool] = {}
    for preferred in (True, False):
        for r in records:
            if (r.get("condition") == Condition.warm) != preferred or r.get("target_seen_before") is None:
                continue
            s = seed_of(r)
            if preferred or s not in flags:
                flags[s] = flags.get(s, False) or bool(r["target_seen_before"])
    return {seed_of(r): SEEN if flags.get(seed_of(r), False) else NOT_SEEN for r in records}


def transfer_table(records: Iterable[Record], metrics: Sequence[str] = ("success", "spl")) -> list[TableRow]:
    """Rows per (agent, sequence, task_index, task, seen) comparing warm with cold.

    ``seen`` splits a task's seeds by whether its target was seen in an earlier task of the warm run
    (:func:`seen_groups`); an ``all`` row pools them when both groups are present. Columns: the
    keys, ``n_seeds`` (seeds present in both conditions), ``n_warm`` / ``n_cold`` (seeds in each),
    for each metric ``<m>_warm``, ``<m>_cold``, ``ft_<m>`` (warm - cold: Continual World's
    un-normalised ft) and ``ft_norm_<m>`` (normalised ft) each with ``_lo`` / ``_hi`` (paired
    bootstrap 95% CI), ``steps_warm``, ``steps_cold``, ``steps_ratio`` (ratio of the means, with
    ``_lo`` / ``_hi``), ``steps_ratio_median`` (median of the per-seed ratios) and ``seen_before``
    (fraction of warm episodes whose target was seen before). Agents that ran only one condition
    get NaN on the other side. Only ``warm`` and ``cold`` records are used; ``eval`` ones go to
    :func:`gem_matrix`.
    """
    rows = []
    relevant = [r for r in records if r.get("condition") in (Condition.warm, Condition.cold)]
    for key, recs in group_records(relevant, TRANSFER_KEYS[:-1]).items():
        groups = seen_groups(recs)
        present = [g for g in (SEEN, NOT_SEEN) if g in groups.values()]
        for group in ([ALL] if len(present) > 1 else []) + present:
            mine = [r for r in recs if group == ALL or groups[seed_of(r)] == group]
            warm = [r for r in mine if r.get("condition") == Condition.warm]
            cold = [r for r in mine if r.get("condition") == Condition.cold]
            rows.append({**dict(zip(TRANSFER_KEYS, (*key, group))), **transfer_row(warm, cold, metrics)})
    return rows


# --------------------------------------------------------------------------------------------------
# Chains: independent and conditional success rates
# --------------------------------------------------------------------------------------------------

#: Grouping of the chain table: one row per agent, condition, sequence and task position.
CHAIN_KEYS = ("agent", "condition", "sequence", "task_index", "task")


def chain_table(records: Iterable[Record]) -> list[TableRow]:
    """ISR and CSR per (agent, condition, sequence, task_index, task) over (world, seed) chains.

    ISR (independent success rate) of task k is its success rate over seeds. CSR (conditional
    success rate) is its success rate over the seeds whose every earlier task of the same chain
    (same agent, condition, sequence, world and seed) succeeded: how often the chain is still
    unbroken after task k, given it was before. A seed's success on a task is the mean over its
    episodes of that task (1 or 0 with one episode). For task 1, CSR equals ISR. ``n_seeds`` is
    the number of seeds, ``n_csr`` the number whose earlier tasks all succeeded (CSR is NaN when 0).
    Only ``warm``, ``cold`` and ``single`` records are used.

    Example:
        >>> recs = [{"agent": "a", "condition": "warm", "seed": s, "task_index": k, "task": t,
        ...          "success": ok} for s, k, t, ok in
        ...         [(0, 1, "x", 1), (0, 2, "y", 1), (1, 1, "x", 0), (1, 2, "y", 1)]]
        >>> [(r["task"], r["isr"], r["csr"], r["n_csr"]) for r in chain_table(recs)]
        [('x', 0.5, 0.5, 2), ('y', 1.0, 1.0, 1)]
    """
    relevant = [r for r in records if r.get("condition") in (Condition.warm, Condition.cold, Condition.single)]
    for r in relevant:
        k = r.get("task_index")
        if k is None or int(k) < 1:
            raise ValueError(f"{r.get('condition')} record with task_index={k}; allowed: 1, 2, ... (the task's place)")
    chains: dict[tuple[Any, ...], dict[int, float]] = defaultdict(dict)
    for (agent, condition, sequence, task_index), recs in group_records(relevant, CHAIN_KEYS[:-1]).items():
        for s, value in seed_means(recs, "success").items():
            chains[(agent, condition, sequence, s)][int(task_index)] = value
    rows = []
    for key, recs in group_records(relevant, CHAIN_KEYS).items():
        agent, condition, sequence, task_index, _ = key
        per_seed = seed_means(recs, "success")
        unbroken = [
            v
            for s, v in per_seed.items()
            if all(chains[(agent, condition, sequence, s)].get(k) == 1.0 for k in range(1, int(task_index)))
        ]
        rows.append(
            {
                **dict(zip(CHAIN_KEYS, key)),
                "n_seeds": len(per_seed),
                "isr": mean(per_seed.values()),
                "csr": mean(unbroken),
                "n_csr": len(unbroken),
            }
        )
    return rows
