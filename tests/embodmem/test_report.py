"""``embodmem-report`` end to end on a synthetic multirun tree, and its error messages."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

from embodmem.metrics_record import EpisodeRecord
from embodmem.report import (
    MetricsFormatError,
    ReportOutput,
    find_metrics_files,
    fmt_ci,
    fmt_number,
    format_report,
    format_table,
    gem_rows,
    load_records,
    main,
    print_table,
    summary_table,
    write_summary,
)
from embodmem.report.tables import READING_GUIDE
from embodmem.transfer import transfer_table

SEQ = "wreck_then_barrel"
TASKS = {1: "wreck", 2: "barrel"}


def record(agent: str, condition: str, seed: int, task_index: int, **kw: Any) -> dict[str, Any]:
    r: dict[str, Any] = {
        "run_id": f"{agent}-{seed}",
        "agent": agent,
        "condition": condition,
        "world_seed": 100 + seed,
        "seed": seed,
        "sequence": SEQ,
        "task_index": task_index,
        "task": TASKS.get(task_index),
        "success": 0,
        "spl": 0.0,
        "soft_spl": 0.0,
        "distance_score": 0.0,
        "steps": 200,
        "path_length": 50.0,
        "shortest_path": 10.0,
        "collisions": 0,
        "memory_frames": 0,
        "memory_bytes": 0,
        "wall_time_s": 0.1,
        "target_seen_before": None,
        "eval_after": None,
        "an_unknown_key": {"kept": True},
    }
    r.update(kw)
    EpisodeRecord.model_validate(r)  # test records follow the one schema the runner writes
    return r


def job_records(agent: str, seed: int) -> list[dict[str, Any]]:
    """One sweep job: the memory agent warm + cold, or the explorer (cold only)."""
    if agent == "explorer":
        return [record("explorer", "cold", seed, t, success=seed % 2, spl=0.1 * seed, steps=180) for t in (1, 2)]
    return [
        record("memory", "warm", seed, 1, success=1, spl=0.5, steps=100),
        # task 2 warm: spl 0.8 / 0.6 / 0.7 over seeds 0, 1, 2 -> mean 0.7, sample std 0.1
        record("memory", "warm", seed, 2, success=1, spl=(0.8, 0.6, 0.7)[seed], steps=50, target_seen_before=True),
        record("memory", "cold", seed, 1, success=1, spl=0.5, steps=100),
        # task 2 cold: success 0 / 1 / 0 -> mean 1/3; steps 200 / 100 / 150 -> mean 150
        record(
            "memory",
            "cold",
            seed,
            2,
            success=(0, 1, 0)[seed],
            spl=(0.0, 0.3, 0.0)[seed],
            steps=(200, 100, 150)[seed],
        ),
    ]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture()
def multirun(tmp_path: Path) -> Path:
    """A Hydra-like multirun tree: jobs 0..5 (memory seeds 0-2, explorer seeds 0-2), with .hydra dirs."""
    root = tmp_path / "multirun" / "2025-01-01" / "12-00-00"
    jobs = [("memory", s) for s in range(3)] + [("explorer", s) for s in range(3)]
    for k, (agent, seed) in enumerate(jobs):
        (root / str(k) / ".hydra").mkdir(parents=True)
        (root / str(k) / ".hydra" / "config.yaml").write_text(f"agent: {agent}\nseed: {seed}\n")
        write_jsonl(root / str(k) / "metrics.jsonl", job_records(agent, seed))
    (root / "multirun.yaml").write_text("hydra: {}\n")
    return root


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def assert_png(path: Path) -> None:
    from matplotlib.image import imread

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 5_000  # a real plot, not an empty canvas
    img = imread(path)
    assert img.shape[0] > 200 and img.shape[1] > 300
    assert img.std() > 0.01  # not a blank image


def test_report_end_to_end_on_multirun(multirun: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(multirun)]) == 0
    out = capsys.readouterr().out
    assert "18 episodes from 6 metrics file(s)" in out  # memory 3 seeds x 4 + explorer 3 seeds x 2
    assert "== sequence wreck_then_barrel | agent memory ==" in out and "Warm minus cold" in out
    assert "2 barrel  seen      3  +0.67 [+0.00,+1.00]  +0.60 [+0.30,+0.80]  3.00 [2.00,4.00]" in out
    assert out.rstrip().splitlines()[-1] == READING_GUIDE
    assert max(len(line) for line in out.splitlines() if not line.startswith(("  /", "18 episodes"))) <= 100

    summary = read_csv(multirun / "summary.csv")
    # memory: warm+cold x 2 tasks = 4 rows; explorer: cold x 2 tasks = 2 rows
    assert len(summary) == 6
    row = next(r for r in summary if r["agent"] == "memory" and r["condition"] == "warm" and r["task_index"] == "2")
    assert row["task"] == "barrel" and row["sequence"] == SEQ and row["eval_after"] == ""
    assert row["n_seeds"] == "3" and row["n_episodes"] == "3"
    assert float(row["spl_mean"]) == pytest.approx(0.7)
    assert float(row["spl_std"]) == pytest.approx(0.1)  # sample std of 0.8, 0.6, 0.7
    assert float(row["steps_mean"]) == pytest.approx(50.0)
    cold2 = next(r for r in summary if r["agent"] == "memory" and r["condition"] == "cold" and r["task_index"] == "2")
    assert float(cold2["success_mean"]) == pytest.approx(1 / 3)
    assert float(cold2["success_std"]) == pytest.approx(math.sqrt(1 / 3))  # ((1/9 + 4/9 + 1/9) / 2) = 1/3
    # bootstrap CI of the mean of (0, 1, 0): resample means are k/3, so the bounds are 0 and 1 or 2/3
    assert float(cold2["success_lo"]) == 0.0 and float(cold2["success_hi"]) in (pytest.approx(2 / 3), 1.0)
    assert float(cold2["csr"]) == pytest.approx(1 / 3) and cold2["n_csr"] == "3"  # task 1 always succeeded

    transfer = read_csv(multirun / "transfer.csv")
    mem2 = next(r for r in transfer if r["agent"] == "memory" and r["task_index"] == "2")
    assert mem2["seen"] == "seen"  # every warm seed had seen the barrel in task 1
    assert float(mem2["ft_success"]) == pytest.approx(2 / 3)  # 1 - 1/3
    assert float(mem2["ft_spl"]) == pytest.approx(0.6)  # 0.7 - 0.1
    assert float(mem2["ft_spl_lo"]) <= 0.6 <= float(mem2["ft_spl_hi"])
    assert float(mem2["ft_norm_success"]) == pytest.approx(1.0)  # (1 - 1/3) / (1 - 1/3)
    assert float(mem2["steps_ratio"]) == pytest.approx(3.0)  # 150 / 50
    assert float(mem2["steps_ratio_median"]) == pytest.approx(3.0)  # 4, 2, 3 -> 3
    assert float(mem2["seen_before"]) == pytest.approx(1.0)
    assert mem2["n_seeds"] == "3"
    explorer = [r for r in transfer if r["agent"] == "explorer"]
    assert (
        len(explorer) == 2 and explorer[0]["steps_ratio"] == "nan" and explorer[0]["ft_success_lo"] == ""
    )  # n = 0: withheld

    assert not (multirun / "gem.csv").exists()  # no eval records
    assert_png(multirun / f"success_spl_{SEQ}.png")
    assert_png(multirun / f"steps_ratio_{SEQ}.png")
    assert_png(multirun / f"transfer_{SEQ}.png")


def test_report_on_a_single_run_directory(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "metrics.jsonl", job_records("memory", 0))
    assert main([str(tmp_path), "--no-plots", "--quiet"]) == 0
    assert len(read_csv(tmp_path / "summary.csv")) == 4
    assert not list(tmp_path.glob("*.png"))


def test_gem_csv_written_for_eval_records(tmp_path: Path) -> None:
    recs = job_records("memory", 0)
    for i in range(3):
        for j in (1, 2):
            recs.append(record("memory", "eval", 0, j, eval_after=i, success=int(i >= j), steps=10))
    write_jsonl(tmp_path / "metrics.jsonl", recs)
    result = write_summary(load_records([tmp_path / "metrics.jsonl"]), tmp_path, plots=False)
    rows = read_csv(tmp_path / "gem.csv")
    fwt = next(r for r in rows if r["metric"] == "success" and r["kind"] == "FWT")
    # FWT = R[1][2] - b[2] with GEM's b = row 0: 0 - 0 = 0
    assert float(fwt["value"]) == pytest.approx(0.0)
    kinds = {r["kind"] for r in rows}
    assert kinds == {"R", "b", "b_cold", "FWT", "BWT", "FWT vs cold", "FWT (GEM code)", "BWT (GEM code)"}
    text = format_report(result)
    assert "GEM matrix of success" in text and "FWT vs cold +0.00" in text
    bwt = next(r for r in rows if r["metric"] == "success" and r["kind"] == "BWT")
    assert float(bwt["value"]) == pytest.approx(0.0)  # R[2][1] - R[1][1] = 1 - 1
    r21 = next(
        r
        for r in rows
        if r["metric"] == "success" and r["kind"] == "R" and r["eval_after"] == "2" and r["task_index"] == "1"
    )
    assert float(r21["value"]) == 1.0 and r21["task"] == "wreck"
    # eval rows are kept apart per eval_after in the summary
    assert sum(1 for r in result.summary if r["condition"] == "eval") == 6


def test_find_metrics_files_orders_jobs_naturally(tmp_path: Path) -> None:
    for k in (10, 2, 0):
        write_jsonl(tmp_path / str(k) / "metrics.jsonl", [])
    assert [p.parent.name for p in find_metrics_files(tmp_path)] == ["0", "2", "10"]


def test_no_metrics_anywhere_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "0").mkdir()
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no metrics.jsonl" in err and str(tmp_path) in err
    assert main([str(tmp_path / "nope")]) == 2
    assert "nope" in capsys.readouterr().err


def test_malformed_json_line_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "0" / "metrics.jsonl"
    good = json.dumps(record("memory", "warm", 0, 1))
    path.parent.mkdir()
    path.write_text(f"{good}\n\n{good[:-5]}\n")  # line 3 is truncated
    assert main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:3" in err and "not valid JSON" in err
    assert not (tmp_path / "summary.csv").exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"spl": "high"}, "spl"),
        ({"task_index": 0}, "task_index"),
        ({"condition": "lukewarm"}, "condition"),
        ({"agent": None}, "agent"),
        ({"condition": "eval", "eval_after": None}, "eval_after"),
    ],
)
def test_invalid_record_names_file_line_and_field(tmp_path: Path, change: dict[str, Any], field: str) -> None:
    path = tmp_path / "metrics.jsonl"
    write_jsonl(path, [record("memory", "warm", 0, 1), {**record("memory", "warm", 0, 2), **change}])
    with pytest.raises(MetricsFormatError, match=rf"{path}:2: .*{field}"):
        load_records([path])


def test_non_object_line_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text("[1, 2]\n")
    with pytest.raises(MetricsFormatError, match=r":1: expected a JSON object"):
        load_records([path])


def test_write_summary_checks_in_memory_records(tmp_path: Path) -> None:
    with pytest.raises(MetricsFormatError, match="record 2"):
        write_summary([record("memory", "warm", 0, 1), {"agent": "memory"}], tmp_path, plots=False)


def test_summary_leaves_unreported_metrics_empty() -> None:
    rows = summary_table([{"agent": "a", "condition": "single", "task_index": 1, "seed": 0, "success": 1}])
    assert rows[0]["success_mean"] == 1.0 and math.isnan(rows[0]["success_std"])  # one seed: no spread
    assert rows[0]["spl_mean"] is None


def test_print_table_aligns_columns() -> None:
    buf = io.StringIO()
    print_table([{"agent": "memory", "spl": 0.5}, {"agent": "explorer-long", "spl": 12.25}], title="T", file=buf)
    lines = buf.getvalue().splitlines()
    assert lines[0] == "T"
    assert lines[1].split() == ["agent", "spl"]
    # numbers right-aligned with one precision per column: the values end in the same column
    assert lines[3].endswith(" 0.50") and lines[4].endswith("12.25")
    assert len(lines[3]) == len(lines[4])
    assert "(no rows)" in format_table([], ["a"])


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "metrics.jsonl" in capsys.readouterr().out


def test_printed_tables_fit_100_columns_with_long_names() -> None:
    # Twelve tasks (two-digit positions, the longest task name), a long ablation name, ratios above
    # 10, negative intervals, and a GEM matrix of all twelve tasks.
    names = ["wreck", "barrel", "mining_robot", "electrical_box", "landing_platform", "deep_wind_station"]
    tasks = dict(enumerate(names * 2, start=1))
    recs = []
    agent = "memory_no_consolidation"
    for seed in range(4):
        for k, task in tasks.items():
            common = {"task": task, "target_seen_before": seed % 2 == 0, "distance_score_final": 33.3}
            recs.append(record(agent, "warm", seed, k, steps=10 + seed, spl=0.1, **common))
            recs.append(record(agent, "cold", seed, k, steps=900 + seed, success=1, spl=0.9, **common))
            for after in range(len(tasks) + 1):
                recs.append(record(agent, "eval", seed, k, eval_after=after, task=task, success=int(after >= k)))
    for r in recs:
        r["sequence"] = "a_very_long_sequence_name_for_the_shallow_tour"
    result = ReportOutput(summary_table(recs), transfer_table(recs), gem_rows(recs, ("success", "spl")))
    text = format_report(result)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    assert "12 deep_wind_station" in text and "-0.80 [-0.80,-0.80]" in text and "78.39 [" in text
    # one precision per column: the steps column always has one decimal
    header = next(i for i, line in enumerate(lines) if line.startswith("cond"))
    for line in lines[header + 2 : header + 6]:
        steps = line.split()[-2]
        assert len(steps.split(".")[1]) == 1, line


def test_number_formats() -> None:
    assert fmt_number(45.0, 1) == "45.0" and fmt_number(156.0, 1) == "156.0"
    assert fmt_number(math.nan) == "-" and fmt_number(None) == "-"
    assert fmt_ci(-0.05, -0.2, 0.1) == "-0.05 [-0.20,+0.10]"
    assert fmt_ci(1.5, math.nan, 2.0, signed=False) == "1.50"


# --------------------------------------------------------------------------- small samples, n, words


def test_two_pairs_give_no_interval_in_csv_print_or_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """n = 2 (world, seed) pairs: a bootstrap 'CI' would look like evidence; the report says n too small."""
    records = [r for seed in (0, 1) for r in job_records("memory", seed)]
    write_jsonl(tmp_path / "metrics.jsonl", records)
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 barrel  seen      2  +0.50 (n too small)  +0.55 (n too small)  3.00 (n too small)" in out
    transfer = read_csv(tmp_path / "transfer.csv")
    assert {r["seen"] for r in transfer} <= {"seen", "not seen", "all"}  # the printed words, too
    barrel = next(r for r in transfer if r["task_index"] == "2")
    assert barrel["n_seeds"] == "2" and barrel["ft_success"] != "" and barrel["ft_success_lo"] == ""
    warm = next(r for r in read_csv(tmp_path / "summary.csv") if r["condition"] == "warm" and r["task_index"] == "2")
    assert warm["spl_mean"] != "" and warm["spl_lo"] == warm["spl_hi"] == ""


def test_plot_bars_carry_n_and_draw_no_interval_below_three_pairs() -> None:
    from matplotlib.figure import Figure

    from embodmem.report.plots import _bars, _say_if_empty

    ax = Figure().subplots()
    rows = [
        {"v": 0.5, "v_lo": 0.2, "v_hi": 0.8, "n_seeds": 2},  # an interval the report must not draw
        {"v": 0.4, "v_lo": 0.3, "v_hi": 0.6, "n_seeds": 5},
    ]
    _bars(ax, [0.0, 1.0], rows, "v", "v", width=0.4)
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["n=2\nn too small", "n=5"]
    (bars,) = [c for c in ax.containers if c.__class__.__name__ == "ErrorbarContainer"]
    segments = bars.lines[2][0].get_segments()
    assert len(segments) == 1 and segments[0][0][0] == 1.0  # only the n = 5 bar has an error bar
    empty = Figure().subplots()
    _say_if_empty(empty, [0.0, 0.0], "ft success")
    assert [t.get_text() for t in empty.texts] == ["every bar is 0 (ft success = 0 for all 2)"]
    _say_if_empty(ax, [0.5, 0.4], "v")
    assert len(ax.texts) == 2  # a panel with bars gets no such note
