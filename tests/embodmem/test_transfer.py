"""Transfer metrics on hand-built cases: jumpstart, steps ratio, GEM matrix with FWT / BWT."""

from __future__ import annotations

import doctest
import math
from typing import Any

import numpy as np
import pytest

import embodmem.transfer as transfer_module
from embodmem.transfer import (
    backward_transfer,
    cold_baseline,
    forward_transfer,
    gem_matrix,
    gem_report,
    jumpstart,
    missing_cells,
    per_seed_steps_ratios,
    steps_ratio,
    transfer_table,
)


def rec(**kw: Any) -> dict[str, Any]:
    base = {"agent": "memory", "sequence": "seq", "world_seed": 0, "task": "t"}
    base.update(kw)
    return base


def test_doctests() -> None:
    assert doctest.testmod(transfer_module).failed == 0


# --- jumpstart and steps ratio --------------------------------------------------------------------


def test_jumpstart_averages_within_then_across_seeds() -> None:
    warm = [rec(seed=0, success=1), rec(seed=0, success=0), rec(seed=1, success=1)]
    cold = [rec(seed=0, success=0), rec(seed=1, success=1)]
    # warm: seed 0 -> (1 + 0) / 2 = 0.5, seed 1 -> 1; mean 0.75.  cold: (0 + 1) / 2 = 0.5.
    assert jumpstart(warm, cold, "success") == pytest.approx(0.25)


def test_jumpstart_is_negative_when_memory_hurts() -> None:
    assert jumpstart([rec(seed=0, spl=0.2)], [rec(seed=0, spl=0.5)], "spl") == pytest.approx(-0.3)


def test_steps_ratio_and_per_seed_median() -> None:
    warm = [rec(seed=0, steps=50), rec(seed=1, steps=150), rec(seed=2, steps=100)]
    cold = [rec(seed=0, steps=200), rec(seed=1, steps=300), rec(seed=2, steps=100)]
    # means: warm (50 + 150 + 100) / 3 = 100, cold (200 + 300 + 100) / 3 = 200 -> 2.0
    assert steps_ratio(warm, cold) == pytest.approx(2.0)
    # per seed: 200/50 = 4, 300/150 = 2, 100/100 = 1 -> median 2
    ratios = per_seed_steps_ratios(warm, cold)
    assert sorted(ratios.values()) == pytest.approx([1.0, 2.0, 4.0])


def test_steps_ratio_undefined_cases_are_nan() -> None:
    assert math.isnan(steps_ratio([], [rec(seed=0, steps=10)]))
    assert math.isnan(steps_ratio([rec(seed=0, steps=0)], [rec(seed=0, steps=10)]))
    # seeds that ran only one condition are not paired
    assert per_seed_steps_ratios([rec(seed=0, steps=5)], [rec(seed=1, steps=10)]) == {}


# --- GEM ------------------------------------------------------------------------------------------

# Hand-built 3-task example. Rows: tasks experienced (0..3); columns: task evaluated (1..3).
R_TRUE = np.array(
    [
        [0.1, 0.2, 0.3],  # no experience
        [0.9, 0.4, 0.3],  # after task 1
        [0.8, 0.9, 0.5],  # after tasks 1, 2
        [0.7, 0.8, 0.9],  # after tasks 1, 2, 3
    ]
)
B_TRUE = np.array([0.1, 0.2, 0.3])  # cold performance of tasks 1, 2, 3
# FWT = mean_{j=2,3} (R[j-1][j] - b[j]) = ((0.4 - 0.2) + (0.5 - 0.3)) / 2 = 0.2
FWT_TRUE = 0.2
# BWT = mean_{j=1,2} (R[3][j] - R[j][j]) = ((0.7 - 0.9) + (0.8 - 0.9)) / 2 = -0.15
BWT_TRUE = -0.15


def gem_records(skip: set[tuple[int, int]] = frozenset(), agent: str = "memory") -> list[dict[str, Any]]:
    """Two seeds per cell, at value +- 0.05, so each cell's mean over seeds is R_TRUE."""
    out = []
    for i in range(4):
        for j in range(1, 4):
            if (i, j) in skip:
                continue
            for seed, delta in ((0, 0.05), (1, -0.05)):
                out.append(
                    rec(
                        agent=agent,
                        condition="eval",
                        eval_after=i,
                        task_index=j,
                        seed=seed,
                        success=R_TRUE[i, j - 1] + delta,
                    )
                )
    for j in range(1, 4):
        for seed in (0, 1):
            out.append(rec(agent=agent, condition="cold", task_index=j, seed=seed, success=B_TRUE[j - 1]))
    # warm records must not leak into R
    out.append(rec(agent=agent, condition="warm", task_index=1, seed=0, success=0.0))
    return out


def test_gem_matrix_from_records() -> None:
    R = gem_matrix(gem_records())
    assert R.shape == (4, 3)
    np.testing.assert_allclose(R, R_TRUE)
    np.testing.assert_allclose(cold_baseline(gem_records()), B_TRUE)


def test_forward_and_backward_transfer() -> None:
    assert forward_transfer(R_TRUE, B_TRUE) == pytest.approx(FWT_TRUE)
    assert backward_transfer(R_TRUE) == pytest.approx(BWT_TRUE)
    rep = gem_report(gem_records())
    assert rep["fwt"] == pytest.approx(FWT_TRUE)
    assert rep["bwt"] == pytest.approx(BWT_TRUE)
    assert rep["missing"] == [] and rep["note"] == ""


def test_missing_cells_are_nan_and_left_out_of_the_means() -> None:
    recs = gem_records(skip={(2, 3)})  # no evaluation of task 3 after tasks 1, 2
    R = gem_matrix(recs)
    assert math.isnan(R[2, 2])
    assert missing_cells(R) == [(2, 3)]
    # FWT now has only its j = 2 term: 0.4 - 0.2 = 0.2; BWT is unaffected.
    assert forward_transfer(R, B_TRUE) == pytest.approx(0.2)
    assert backward_transfer(R) == pytest.approx(BWT_TRUE)
    note = gem_report(recs)["note"]
    assert "(2, 3)" in note and "available" in note


def test_transfer_with_nothing_measured_is_nan() -> None:
    R = np.full((3, 2), np.nan)
    assert math.isnan(forward_transfer(R, [np.nan, np.nan]))
    assert math.isnan(backward_transfer(R))


def test_gem_matrix_needs_an_agent_when_several_are_present() -> None:
    recs = gem_records(agent="memory") + gem_records(agent="other")
    with pytest.raises(ValueError, match="agent"):
        gem_matrix(recs)
    np.testing.assert_allclose(gem_matrix(recs, agent="other"), R_TRUE)


def test_gem_matrix_rejects_out_of_range_records() -> None:
    recs = gem_records() + [rec(condition="eval", eval_after=5, task_index=1, seed=0, success=1.0)]
    with pytest.raises(ValueError, match="out of range"):
        gem_matrix(recs, n_tasks=3)


# --- transfer table -------------------------------------------------------------------------------


def test_transfer_table_rows() -> None:
    recs = [
        # memory agent, task 2: warm finds it quickly on both seeds, cold on one of two
        rec(
            condition="warm",
            seed=0,
            task_index=2,
            task="barrel",
            success=1,
            spl=0.8,
            steps=40,
            target_seen_before=True,
        ),
        rec(
            condition="warm",
            seed=1,
            task_index=2,
            task="barrel",
            success=1,
            spl=0.6,
            steps=60,
            target_seen_before=False,
        ),
        rec(condition="cold", seed=0, task_index=2, task="barrel", success=0, spl=0.0, steps=200),
        rec(condition="cold", seed=1, task_index=2, task="barrel", success=1, spl=0.2, steps=100),
        rec(
            condition="warm",
            seed=0,
            task_index=1,
            task="wreck",
            success=1,
            spl=0.5,
            steps=100,
            extra_key="kept",
        ),
        rec(condition="cold", seed=0, task_index=1, task="wreck", success=1, spl=0.5, steps=100),
        # baseline with only one condition
        rec(
            agent="explorer",
            condition="cold",
            seed=0,
            task_index=2,
            task="barrel",
            success=0,
            spl=0.0,
            steps=200,
        ),
        # eval records are not part of the table
        rec(condition="eval", eval_after=0, seed=0, task_index=2, task="barrel", success=0, steps=1),
    ]
    rows = transfer_table(recs)
    assert [(r["agent"], r["task_index"]) for r in rows] == [("explorer", 2), ("memory", 1), ("memory", 2)]
    mem2 = rows[2]
    assert mem2["n_seeds"] == 2 and mem2["n_warm"] == 2 and mem2["n_cold"] == 2
    assert mem2["success_warm"] == pytest.approx(1.0)
    assert mem2["success_cold"] == pytest.approx(0.5)
    assert mem2["jumpstart_success"] == pytest.approx(0.5)  # 1.0 - 0.5
    assert mem2["jumpstart_spl"] == pytest.approx(0.6)  # (0.8 + 0.6)/2 - (0 + 0.2)/2 = 0.7 - 0.1
    assert mem2["steps_ratio"] == pytest.approx(3.0)  # mean cold 150 / mean warm 50
    # per seed: 200/40 = 5 and 100/60 = 5/3; the median of two is their mean, (5 + 5/3) / 2 = 10/3
    assert mem2["steps_ratio_median"] == pytest.approx(10.0 / 3.0)
    assert mem2["seen_before"] == pytest.approx(0.5)  # one of two warm episodes
    mem1 = rows[1]
    assert mem1["jumpstart_success"] == 0.0 and mem1["steps_ratio"] == pytest.approx(1.0)
    assert math.isnan(mem1["seen_before"])
    explorer = rows[0]
    assert (
        explorer["n_seeds"] == 0
        and math.isnan(explorer["success_warm"])
        and math.isnan(explorer["jumpstart_spl"])
    )
    assert explorer["success_cold"] == 0.0
