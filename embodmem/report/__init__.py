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

Modules, one job each: ``load`` (finding and checking ``metrics.jsonl`` files against
:class:`embodmem.metrics_record.EpisodeRecord`), ``tables`` (the summary, transfer and GEM tables,
their CSV and printed forms), ``plots`` (the PNG figures), ``summary`` (writing all of it into a
directory), ``cli`` (``embodmem-report``).

Example:
    $ embodmem-report outputs/2025-01-01/12-00-00
    $ embodmem-report multirun/2025-01-01/12-00-00 --no-plots
"""

from __future__ import annotations

from embodmem.report.cli import main
from embodmem.report.load import METRICS_FILE, MetricsFormatError, find_metrics_files, load_records, validate_record
from embodmem.report.summary import write_summary
from embodmem.report.tables import (
    ReportOutput,
    fmt_ci,
    fmt_number,
    format_report,
    format_table,
    gem_rows,
    print_report,
    print_table,
    summary_table,
    write_csv,
)

__all__ = [
    "METRICS_FILE",
    "MetricsFormatError",
    "ReportOutput",
    "find_metrics_files",
    "fmt_ci",
    "fmt_number",
    "format_report",
    "format_table",
    "gem_rows",
    "load_records",
    "main",
    "print_report",
    "print_table",
    "summary_table",
    "validate_record",
    "write_csv",
    "write_summary",
]
