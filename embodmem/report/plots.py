"""The report's PNG plots: matplotlib's Agg canvas directly (no pyplot state, no display needed),
each written atomically."""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from embodmem.atomic import atomic_write_bytes
from embodmem.condition import Condition
from embodmem.report.tables import MIN_CI_N, N_TOO_SMALL, has_ci, is_missing, withhold_small_n_intervals
from embodmem.transfer import ALL, CONDITION_ORDER, order_key, per_seed_steps_ratios, seen_groups, transfer_table

Record = Mapping[str, Any]

CI_NOTE = "n at each bar: (world, seed) pairs; error bars: {kind} 95% CI, none where n < {min_n} ({too_small})"
"""The line under every plot's title that says what n and the error bars are (``kind``: bootstrap or
paired bootstrap)."""


def _suptitle(fig: Any, title: str, kind: str) -> None:
    note = CI_NOTE.format(kind=kind, min_n=MIN_CI_N, too_small=N_TOO_SMALL)
    fig.suptitle("\n".join(t for t in (title, note) if t), fontsize=9)


def safe_name(value: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(value)) if value is not None else "all"


def _save_png(fig: Any, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return atomic_write_bytes(path, buf.getvalue())


def _task_positions(rows: Sequence[Mapping[str, Any]]) -> list[tuple[int, Any]]:
    return sorted({(int(r["task_index"]), r.get("task")) for r in rows}, key=lambda t: (t[0], order_key(t[1])))


def _interval(row: Mapping[str, Any], value: str, lo: str, hi: str) -> tuple[float, float] | None:
    """Distances below and above the value of ``row``'s CI, or None: no CI, or n too small."""
    v, a, b = row.get(value), row.get(lo), row.get(hi)
    if v is None or a is None or b is None or not has_ci(row.get("n_seeds")) or any(map(is_missing, (v, a, b))):
        return None
    return max(0.0, float(v) - float(a)), max(0.0, float(b) - float(v))


def _bars(ax: Any, xs: Sequence[float], shown: Sequence[Mapping[str, Any]], value: str, stem: str, **bar: Any) -> None:
    """Bars of ``shown[value]`` at ``xs``, error bars only where there is a CI over at least
    MIN_CI_N pairs (no zero-length cap that reads as a tight interval), and n at each bar's foot."""
    ys = [float(r[value]) for r in shown]
    ax.bar(xs, ys, **bar)
    with_ci = [(x, y, i) for x, y, r in zip(xs, ys, shown) if (i := _interval(r, value, f"{stem}_lo", f"{stem}_hi"))]
    if with_ci:
        ax.errorbar(
            [x for x, _, _ in with_ci],
            [y for _, y, _ in with_ci],
            yerr=[[i[0] for _, _, i in with_ci], [i[1] for _, _, i in with_ci]],
            fmt="none",
            ecolor="black",
            capsize=3,
            linewidth=1,
        )
    for x, r in zip(xs, shown):
        n = r.get("n_seeds")
        note = f"n={n}" if has_ci(n) else f"n={n}\n{N_TOO_SMALL}"
        # at the bar's foot, where no error bar or dot of the steps-ratio plot can cover it
        ax.annotate(note, (x, 0), xytext=(0, 2), textcoords="offset points", ha="center", va="bottom", fontsize=7)


def _say_if_empty(ax: Any, values: Sequence[float], what: str) -> None:
    """A panel whose bars are all missing or all 0 looks empty: say which it is."""
    finite = [v for v in values if not is_missing(v)]
    if not finite:
        text = f"no {what} to show"
    elif all(v == 0 for v in finite):
        text = f"every bar is 0 ({what} = 0 for all {len(finite)})"
    else:
        return
    ax.text(
        0.5,
        0.75,
        text,
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize=9,
        color="dimgrey",
        bbox={"facecolor": "white", "edgecolor": "lightgrey"},
    )


def plot_success_spl(summary_rows: Sequence[Mapping[str, Any]], path: str | Path, title: str = "") -> Path | None:
    """Success and SPL per task, one bar per agent/condition, n over each bar, error bars = bootstrap
    95% CI of the mean over (world, seed) pairs (none for n < MIN_CI_N: "n too small").

    Returns None (and writes nothing) when there are no warm / cold / single rows.
    """
    from matplotlib.figure import Figure

    rows = [r for r in summary_rows if r.get("condition") != Condition.eval]
    if not rows:
        return None
    tasks = _task_positions(rows)
    with_warm = {r["agent"] for r in rows if r["condition"] == Condition.warm}
    # Memory agents (warm, then cold) first, then the baselines that ran one condition.
    labels = sorted(
        {(r["agent"], r["condition"]) for r in rows},
        key=lambda ac: (ac[0] not in with_warm, order_key(ac[0]), CONDITION_ORDER.get(ac[1], 9), ac[1]),
    )
    by_key = {(int(r["task_index"]), r.get("task"), r["agent"], r["condition"]): r for r in rows}
    width = 0.8 / max(1, len(labels))
    fig = Figure(figsize=(max(7.0, 3.2 * len(tasks)), 4.0), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, metric, name in zip(axes, ("success", "spl"), ("success rate", "SPL")):
        values: list[float] = []
        for k, (agent, cond) in enumerate(labels):
            xs, shown = [], []
            for t, (idx, task) in enumerate(tasks):
                r = by_key.get((idx, task, agent, cond))
                if r is None or r[f"{metric}_mean"] is None:
                    continue
                xs.append(t - 0.4 + width * (k + 0.5))
                shown.append(r)
            _bars(ax, xs, shown, f"{metric}_mean", metric, width=width, label=f"{agent} / {cond}")
            values += [r[f"{metric}_mean"] for r in shown]
        _say_if_empty(ax, values, name)
        ax.set_xticks(range(len(tasks)), [f"T{idx}\n{task}" for idx, task in tasks])
        ax.set_ylim(0, 1.15)
        ax.set_ylabel(name)
        ax.set_title(f"{name}, mean over n pairs", fontsize=8)
    handles, names = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, names, loc="outside lower center", ncols=min(len(names), 4), fontsize=8)
    _suptitle(fig, title, "bootstrap")
    return _save_png(fig, Path(path))


def _transfer_positions(rows: Sequence[Mapping[str, Any]]) -> list[tuple[int, Any, str]]:
    """x positions of the transfer plots: (task_index, task, seen group) in table order."""
    return list(dict.fromkeys((int(r["task_index"]), r.get("task"), str(r.get("seen"))) for r in rows))


def _bars_by_agent(ax: Any, rows: Sequence[Mapping[str, Any]], stem: str) -> list[tuple[float, Mapping[str, Any]]]:
    """One bar per agent at each (task, seen) position, n over each, the ``stem`` CI as error bars."""
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
            if r is None or is_missing(r.get(stem)):
                continue
            xs.append(t - 0.4 + width * (k + 0.5))
            shown.append(r)
        _bars(ax, xs, shown, stem, stem, width=width, label=agent)
        placed += list(zip(xs, shown))
    _say_if_empty(ax, [float(r[stem]) for _, r in placed], stem.replace("_", " "))
    labels = [f"T{idx} {task}\n{seen}" for idx, task, seen in positions]
    ax.set_xticks(range(len(positions)), labels, fontsize=8)
    return placed


def plot_transfer(transfer_rows: Sequence[Mapping[str, Any]], path: str | Path, title: str = "") -> Path | None:
    """Warm-minus-cold success and SPL (ft) per task and seen group, n over each bar, error bars =
    paired 95% CI (none for n < MIN_CI_N); a panel of all-0 bars says so.

    Returns None (and writes nothing) when no agent ran both warm and cold.
    """
    from matplotlib.figure import Figure

    rows = [r for r in transfer_rows if not is_missing(r.get("ft_success")) or not is_missing(r.get("ft_spl"))]
    if not rows:
        return None
    n = len(_transfer_positions(rows))
    fig = Figure(figsize=(max(7.0, 2.4 * n), 4.0), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, stem, name in zip(axes, ("ft_success", "ft_spl"), ("success", "SPL")):
        _bars_by_agent(ax, rows, stem)
        ax.axhline(0.0, color="grey", linewidth=1)
        ax.set_ylabel(f"warm - cold {name}")
        ax.set_title(f"ft {name}: warm - cold, mean over n pairs", fontsize=8)
    axes[0].legend(fontsize=8)
    _suptitle(fig, title, "paired bootstrap")
    return _save_png(fig, Path(path))


def plot_steps_ratio(
    records: Sequence[Record],
    path: str | Path,
    title: str = "",
    transfer_rows: Sequence[Mapping[str, Any]] | None = None,
) -> Path | None:
    """Steps ratio cold/warm per task, seen group and agent: bar = ratio of the means with its
    paired 95% CI (none for n < MIN_CI_N), n over each bar, dots = per-(world, seed) ratios.

    Returns None (and writes nothing) when no agent ran both conditions.
    """
    from matplotlib.figure import Figure

    table = withhold_small_n_intervals(transfer_table(records)) if transfer_rows is None else transfer_rows
    rows = [r for r in table if not is_missing(r.get("steps_ratio"))]
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
        warm = [q for q in mine if q.get("condition") == Condition.warm]
        cold = [q for q in mine if q.get("condition") == Condition.cold]
        ratios = per_seed_steps_ratios(warm, cold)
        if r.get("seen") != ALL:
            groups = seen_groups(mine)
            ratios = {s: v for s, v in ratios.items() if groups.get(s) == r.get("seen")}
        ax.scatter([x] * len(ratios), list(ratios.values()), color="black", s=8, zorder=3)
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1, label="no change")
    ax.set_ylabel("steps cold / steps warm")
    ax.set_title("steps ratio (bar: ratio of the means over n pairs; dots: one pair each)", fontsize=8)
    ax.legend(fontsize=8)
    _suptitle(fig, title, "paired bootstrap")
    return _save_png(fig, Path(path))
