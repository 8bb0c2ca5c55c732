"""Writing a report into a directory: ``summary.csv``, ``transfer.csv``, ``gem.csv`` and the plots."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from embodmem.metrics_record import EpisodeRecord
from embodmem.report.load import validate_record
from embodmem.report.plots import plot_steps_ratio, plot_success_spl, plot_transfer, safe_name
from embodmem.report.tables import (
    DESIGN_COLUMNS,
    GEM_COLUMNS,
    SUMMARY_KEYS,
    SUMMARY_METRICS,
    TRANSFER_METRICS,
    Record,
    ReportOutput,
    design_table,
    gem_csv_rows,
    gem_rows,
    summary_table,
    withhold_small_n_intervals,
    write_csv,
)
from embodmem.transfer import TRANSFER_KEYS, order_key, transfer_row, transfer_table


def write_summary(
    records: Iterable[EpisodeRecord | Mapping[str, object]], out_dir: str | Path, *, plots: bool = True
) -> ReportOutput:
    """Write ``summary.csv``, ``transfer.csv``, ``gem.csv`` (if eval records) and the plots into ``out_dir``.

    Every 95% CI over fewer than :data:`~embodmem.report.tables.MIN_CI_N` (world, seed) pairs is
    withheld (empty ``_lo`` / ``_hi`` cells, ``n too small`` in print, no error bar).

    Records are checked first (:func:`validate_record`), so the runner's in-memory records meet the
    same schema as files read back.

    Raises:
        MetricsFormatError: for an invalid record, naming its position (``record N``, 1-based).
    """
    typed = [validate_record(r, f"record {i}") for i, r in enumerate(records, start=1)]
    rows: list[Record] = [r.plain() for r in typed]  # the tables group and average fields by name
    out = Path(out_dir)
    # Intervals over fewer than MIN_CI_N (world, seed) pairs are withheld everywhere: CSV, print, plots.
    summary = withhold_small_n_intervals(summary_table(rows))
    transfer = withhold_small_n_intervals(transfer_table(rows, TRANSFER_METRICS))
    gems = gem_rows(rows, TRANSFER_METRICS)
    result = ReportOutput(summary=summary, transfer=transfer, gem=gems, designs=design_table(rows))

    summary_cols = list(SUMMARY_KEYS) + ["n_seeds", "n_episodes"]
    summary_cols += [f"{m}_{s}" for m in SUMMARY_METRICS for s in ("mean", "std", "lo", "hi")]
    summary_cols += ["csr", "n_csr"]
    result.files.append(write_csv(out / "summary.csv", summary, summary_cols))
    transfer_cols = list(TRANSFER_KEYS) + list(transfer_row([], [], TRANSFER_METRICS))
    result.files.append(write_csv(out / "transfer.csv", transfer, transfer_cols))
    result.files.append(write_csv(out / "designs.csv", result.designs, DESIGN_COLUMNS))
    if gems:
        result.files.append(write_csv(out / "gem.csv", gem_csv_rows(gems), GEM_COLUMNS))
        result.notes += [f"GEM {g.agent}/{g.sequence}/{g.metric}: {g.report.note}" for g in gems if g.report.note]

    if plots:
        for sequence in sorted({r.get("sequence") for r in rows}, key=order_key):
            seq_records = [r for r in rows if r.get("sequence") == sequence]
            seq_summary = [r for r in summary if r.get("sequence") == sequence]
            seq_transfer = [r for r in transfer if r.get("sequence") == sequence]
            name = safe_name(sequence)
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
