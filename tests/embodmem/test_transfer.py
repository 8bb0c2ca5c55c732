"""Transfer metrics on hand-built cases: ft, steps ratio, chains, GEM FWT / BWT, bootstrap CIs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from embodmem.stats import difference_of_means, mean_ci, normalised_gain, paired_ci, ratio_of_means
from embodmem.transfer import (
    backward_transfer,
    chain_table,
    cold_baseline,
    forward_transfer,
    gem_matrix,
    gem_report,
    missing_cells,
    normalised_ft,
    per_seed_steps_ratios,
    steps_ratio,
    transfer_table,
    unnormalised_ft,
)


def rec(**kw: Any) -> dict[str, Any]:
    base = {"agent": "memory", "sequence": "seq", "world_seed": 0, "task": "t"}
    base.update(kw)
    return base


# --- forward transfer (Continual World) and steps ratio --------------------------------------------


def test_unnormalised_ft_averages_within_then_across_seeds() -> None:
    warm = [rec(seed=0, success=1), rec(seed=0, success=0), rec(seed=1, success=1)]
    cold = [rec(seed=0, success=0), rec(seed=1, success=1)]
    # warm: seed 0 -> (1 + 0) / 2 = 0.5, seed 1 -> 1; mean 0.75.  cold: (0 + 1) / 2 = 0.5.
    assert unnormalised_ft(warm, cold, "success") == pytest.approx(0.25)


def test_unnormalised_ft_is_negative_when_memory_hurts() -> None:
    assert unnormalised_ft([rec(seed=0, spl=0.2)], [rec(seed=0, spl=0.5)], "spl") == pytest.approx(-0.3)


def _continual_world_ft(warm_curve: list[float], reference_curve: list[float]) -> float:
    """Continual World (Wolczyk et al. 2021, eq. 2): FT = (AUC - AUC_b) / (1 - AUC_b), the AUCs
    being the mean of the task's performance curve over its steps (written out independently)."""
    auc = sum(warm_curve) / len(warm_curve)
    auc_b = sum(reference_curve) / len(reference_curve)
    return (auc - auc_b) / (1 - auc_b)


@pytest.mark.parametrize(
    ("warm", "cold"),
    [([1, 1, 0, 1], [0, 1, 0, 0]), ([0.9, 0.7], [0.3, 0.5]), ([0.2, 0.1], [0.5, 0.6]), ([0.0], [0.0])],
)
def test_normalised_ft_matches_continual_world(warm: list[float], cold: list[float]) -> None:
    w = [rec(seed=i, spl=v) for i, v in enumerate(warm)]
    c = [rec(seed=i, spl=v) for i, v in enumerate(cold)]
    assert normalised_ft(w, c, "spl") == pytest.approx(_continual_world_ft(warm, cold))
    # the un-normalised ft is the numerator
    assert unnormalised_ft(w, c, "spl") == pytest.approx(sum(warm) / len(warm) - sum(cold) / len(cold))


def test_normalised_ft_undefined_when_the_reference_is_perfect() -> None:
    assert math.isnan(normalised_ft([rec(seed=0, success=1)], [rec(seed=0, success=1)], "success"))
    assert math.isnan(normalised_ft([], [rec(seed=0, success=0)], "success"))


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
    assert forward_transfer(R_TRUE) == pytest.approx(FWT_TRUE)  # row 0 equals B_TRUE here
    assert forward_transfer(R_TRUE, B_TRUE) == pytest.approx(FWT_TRUE)
    assert backward_transfer(R_TRUE) == pytest.approx(BWT_TRUE)
    rep = gem_report(gem_records())
    assert rep.fwt == pytest.approx(FWT_TRUE)
    assert rep.bwt == pytest.approx(BWT_TRUE)
    assert rep.missing == [] and rep.note == ""


def test_missing_cells_are_nan_and_left_out_of_the_means() -> None:
    recs = gem_records(skip={(2, 3)})  # no evaluation of task 3 after tasks 1, 2
    R = gem_matrix(recs)
    assert math.isnan(R[2, 2])
    assert missing_cells(R) == [(2, 3)]
    # FWT now has only its j = 2 term: 0.4 - 0.2 = 0.2; BWT is unaffected.
    assert forward_transfer(R) == pytest.approx(0.2)
    assert forward_transfer(R, B_TRUE) == pytest.approx(0.2)
    assert backward_transfer(R) == pytest.approx(BWT_TRUE)
    note = gem_report(recs).note
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
    assert [(r["agent"], r["task_index"], r["seen"]) for r in rows] == [
        ("explorer", 2, "not seen"),
        ("memory", 1, "not seen"),
        ("memory", 2, "all"),  # seed 0 had seen the barrel before, seed 1 had not
        ("memory", 2, "seen"),
        ("memory", 2, "not seen"),
    ]
    mem2 = rows[2]
    assert mem2["n_seeds"] == 2 and mem2["n_warm"] == 2 and mem2["n_cold"] == 2
    assert mem2["success_warm"] == pytest.approx(1.0)
    assert mem2["success_cold"] == pytest.approx(0.5)
    assert mem2["ft_success"] == pytest.approx(0.5)  # 1.0 - 0.5
    assert mem2["ft_spl"] == pytest.approx(0.6)  # (0.8 + 0.6)/2 - (0 + 0.2)/2 = 0.7 - 0.1
    assert mem2["ft_norm_success"] == pytest.approx(1.0)  # 0.5 / (1 - 0.5)
    assert mem2["steps_ratio"] == pytest.approx(3.0)  # mean cold 150 / mean warm 50
    # per seed: 200/40 = 5 and 100/60 = 5/3; the median of two is their mean, (5 + 5/3) / 2 = 10/3
    assert mem2["steps_ratio_median"] == pytest.approx(10.0 / 3.0)
    assert mem2["seen_before"] == pytest.approx(0.5)  # one of two warm episodes
    seen, not_seen = rows[3], rows[4]  # the cold seed pairs with its warm seed's group
    assert seen["n_seeds"] == 1 and seen["ft_success"] == 1.0 and seen["steps_ratio"] == pytest.approx(5.0)
    assert not_seen["n_seeds"] == 1 and not_seen["ft_success"] == 0.0 and math.isnan(seen["ft_success_lo"])
    mem1 = rows[1]
    assert mem1["ft_success"] == 0.0 and mem1["steps_ratio"] == pytest.approx(1.0)
    assert math.isnan(mem1["seen_before"])
    explorer = rows[0]
    assert explorer["n_seeds"] == 0 and math.isnan(explorer["success_warm"]) and math.isnan(explorer["ft_spl"])
    assert explorer["success_cold"] == 0.0


# --- GEM against its references -------------------------------------------------------------------

# The hand matrix of docs/metrics.md: row 0 is the evaluation before any experience (GEM's baseline b).
R_ISSUE = np.array([[0.0, 0.1, 0.2], [0.9, 0.5, 0.3], [0.8, 0.9, 0.6], [0.7, 0.8, 0.9]])
COLD_ISSUE = np.array([0.1, 0.2, 0.3])


def matrix_records(R: np.ndarray, cold: np.ndarray) -> list[dict[str, Any]]:
    out = [
        rec(condition="eval", eval_after=i, task_index=j + 1, seed=0, success=float(R[i, j]))
        for i in range(R.shape[0])
        for j in range(R.shape[1])
    ]
    out += [rec(condition="cold", task_index=j + 1, seed=0, success=float(cold[j])) for j in range(len(cold))]
    return out


def test_gem_report_on_the_issue_matrix() -> None:
    rep = gem_report(matrix_records(R_ISSUE, COLD_ISSUE))
    np.testing.assert_allclose(rep.b, [0.0, 0.1, 0.2])
    np.testing.assert_allclose(rep.b_cold, COLD_ISSUE)
    assert rep.fwt == pytest.approx(0.40)  # paper: ((.5 - .1) + (.6 - .2)) / 2
    assert rep.bwt == pytest.approx(-0.15)  # paper: ((.7 - .9) + (.8 - .9)) / 2
    assert rep.fwt_vs_cold == pytest.approx(0.30)  # ((.5 - .2) + (.6 - .3)) / 2
    assert rep.fwt_code == pytest.approx(0.8 / 3)  # GEM's metrics.py: 0.267
    assert rep.bwt_code == pytest.approx(-0.10)


def _gem_metrics_py(result_t: list[int], result_a: np.ndarray) -> tuple[float, float]:
    """GEM's metrics/metrics.py ``confusion_matrix`` transcribed to numpy: (BWT, FWT) as it prints."""
    nt = int(max(result_t) + 1)
    changes, current = [], result_t[0]
    for i, t in enumerate(result_t):
        if t != current:
            changes.append(i)
            current = t
    baseline = result_a[0]
    idx = np.array(changes + [len(result_a)]) - 1
    result = result_a[idx]
    acc = np.diag(result)
    bwt = result[nt - 1] - acc
    fwt = np.zeros(nt)
    for t in range(1, nt):
        fwt[t] = result[t - 1, t] - baseline[t]
    return float(bwt.mean()), float(fwt.mean())


def _gem_main_py_log(R: np.ndarray) -> tuple[list[int], np.ndarray]:
    """The (result_t, result_a) log GEM's main.py writes: an evaluation before the first batch
    (task 0), one at each task change (labelled with the task just finished) and one at the end."""
    n = R.shape[1]
    result_t = [0] + list(range(n))
    return result_t, R.copy()


def test_gem_code_form_matches_gem_metrics_py() -> None:
    rng = np.random.default_rng(7)
    for n in (2, 3, 5):
        for _ in range(20):
            R = rng.random((n + 1, n))
            bwt_ref, fwt_ref = _gem_metrics_py(*_gem_main_py_log(R))
            assert forward_transfer(R, averaging="code") == pytest.approx(fwt_ref)
            assert backward_transfer(R, averaging="code") == pytest.approx(bwt_ref)


def test_gem_paper_form_on_random_matrices() -> None:
    # GEM paper eq. 3-4 with 1-based R_{i,j} (row i = after task i, 0 = before any) and b = row 0.
    rng = np.random.default_rng(8)
    for n in (2, 3, 6):
        R = rng.random((n + 1, n))
        cell = lambda i, j, R=R: R[i, j - 1]
        fwt = sum(cell(j - 1, j) - cell(0, j) for j in range(2, n + 1)) / (n - 1)
        bwt = sum(cell(n, j) - cell(j, j) for j in range(1, n)) / (n - 1)
        assert forward_transfer(R) == pytest.approx(fwt)
        assert backward_transfer(R) == pytest.approx(bwt)
    with pytest.raises(ValueError, match="averaging"):
        forward_transfer(R_ISSUE, averaging="mean")


# --- chains: ISR and CSR --------------------------------------------------------------------------


def test_chain_table_isr_and_csr() -> None:
    outcomes = {  # seed -> success on tasks 1, 2, 3
        0: (1, 1, 1),
        1: (1, 0, 1),
        2: (0, 1, 1),
        3: (1, 1, 0),
    }
    recs = [
        rec(condition="warm", seed=s, task_index=k + 1, task=f"t{k + 1}", success=ok)
        for s, oks in outcomes.items()
        for k, ok in enumerate(oks)
    ]
    recs += [rec(condition="cold", seed=0, task_index=1, task="t1", success=0)]
    rows = {(r["condition"], r["task_index"]): r for r in chain_table(recs)}
    for k in (1, 2, 3):
        isr = sum(oks[k - 1] for oks in outcomes.values()) / 4
        unbroken = [oks for oks in outcomes.values() if all(oks[: k - 1])]
        csr = sum(oks[k - 1] for oks in unbroken) / len(unbroken)
        row = rows[("warm", k)]
        assert row["isr"] == pytest.approx(isr) and row["csr"] == pytest.approx(csr)
        assert row["n_seeds"] == 4 and row["n_csr"] == len(unbroken)
    # task 3: ISR 3/4; CSR over seeds 0 and 3 (tasks 1 and 2 both succeeded) = 1/2
    assert rows[("warm", 3)]["isr"] == 0.75 and rows[("warm", 3)]["csr"] == 0.5
    assert rows[("cold", 1)]["isr"] == 0.0


def test_chain_of_one_broken_everywhere_has_no_csr() -> None:
    recs = [rec(condition="warm", seed=s, task_index=k, task=f"t{k}", success=0) for s in (0, 1) for k in (1, 2)]
    row = [r for r in chain_table(recs) if r["task_index"] == 2][0]
    assert row["n_csr"] == 0 and math.isnan(row["csr"]) and row["isr"] == 0.0


# --- bootstrap confidence intervals ----------------------------------------------------------------


def _loop_bootstrap(warm, cold, stat, n_resamples=2000, seed=0) -> tuple[float, float]:
    """The paired percentile bootstrap written as a plain loop over the same index draws."""
    n = len(warm)
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    values = []
    for row in idx:
        v = stat([warm[i] for i in row], [cold[i] for i in row])
        if not math.isnan(v):
            values.append(v)
    return float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975))


def _diff(w, c):
    return sum(w) / len(w) - sum(c) / len(c)


def _ratio(w, c):
    return (sum(c) / len(c)) / (sum(w) / len(w))


def _norm(w, c):
    b = sum(c) / len(c)
    return math.nan if b >= 1 else (sum(w) / len(w) - b) / (1 - b)


@pytest.mark.parametrize(
    ("statistic", "reference"), [(difference_of_means, _diff), (ratio_of_means, _ratio), (normalised_gain, _norm)]
)
def test_paired_ci_equals_a_plain_loop(statistic, reference) -> None:
    rng = np.random.default_rng(3)
    warm = list(rng.integers(0, 2, 25).astype(float) * 0.5 + 0.25)
    cold = list(rng.integers(0, 2, 25).astype(float) * 0.5 + 0.1)
    if statistic is ratio_of_means:
        warm, cold = [40 + 100 * w for w in warm], [40 + 100 * c for c in cold]
    lo, hi = paired_ci(warm, cold, statistic)
    ref_lo, ref_hi = _loop_bootstrap(warm, cold, reference)
    assert lo == pytest.approx(ref_lo) and hi == pytest.approx(ref_hi)
    assert paired_ci(warm, cold, statistic) == (lo, hi)  # deterministic
    assert lo <= reference(warm, cold) <= hi


def test_paired_ci_is_narrower_than_unpaired_when_worlds_differ() -> None:
    # Worlds differ a lot (shared by both conditions); memory adds a steady 5 steps' worth.
    rng = np.random.default_rng(4)
    world = rng.uniform(50, 400, 40)
    warm, cold = world, world + rng.normal(5.0, 1.0, 40)
    lo, hi = paired_ci(warm, cold, difference_of_means)
    idx_w = np.random.default_rng(0).integers(0, 40, (2000, 40))
    idx_c = np.random.default_rng(1).integers(0, 40, (2000, 40))
    unpaired = warm[idx_w].mean(1) - cold[idx_c].mean(1)
    assert hi - lo < 0.2 * (np.quantile(unpaired, 0.975) - np.quantile(unpaired, 0.025))
    assert -6.0 < lo < hi < -4.0


def test_ci_edge_cases() -> None:
    assert all(math.isnan(v) for v in paired_ci([1.0], [0.0], difference_of_means))
    assert all(math.isnan(v) for v in paired_ci([1.0, 1.0], [1.0, 1.0], normalised_gain))
    assert all(math.isnan(v) for v in mean_ci([0.3]))
    with pytest.raises(ValueError, match="equal length"):
        paired_ci([1.0, 2.0], [1.0], difference_of_means)
    values = [0.0, 1.0, 1.0, 0.0, 1.0]
    lo, hi = mean_ci(values)
    assert 0.0 <= lo <= 0.6 <= hi <= 1.0


def test_transfer_ci_resamples_seeds_as_pairs() -> None:
    # 30 seeds: warm = cold + 0.1 on every seed, with large differences between seeds: the paired
    # interval of ft is the single value 0.1 while each side alone varies widely.
    recs = []
    for s in range(30):
        base = (s % 5) / 10
        recs.append(rec(condition="warm", seed=s, task_index=1, spl=base + 0.1, success=1, steps=10))
        recs.append(rec(condition="cold", seed=s, task_index=1, spl=base, success=1, steps=20))
    row = transfer_table(recs)[0]
    assert row["ft_spl"] == pytest.approx(0.1)
    assert row["ft_spl_lo"] == pytest.approx(0.1) and row["ft_spl_hi"] == pytest.approx(0.1)
    assert row["steps_ratio_lo"] == pytest.approx(2.0) and row["steps_ratio_hi"] == pytest.approx(2.0)


# --- selection, ordering and seen groups: each rule stated on a case that tells it apart -----------


def test_selection_by_agent_and_sequence_and_its_messages() -> None:
    mine = gem_records(agent="memory")
    other = [{**r, "agent": "other", "success": 1.0 - r["success"]} for r in gem_records(agent="other")]
    np.testing.assert_allclose(gem_matrix(mine + other, agent="memory"), R_TRUE)
    np.testing.assert_allclose(gem_matrix(mine + other, agent="other"), 1.0 - R_TRUE)
    np.testing.assert_allclose(cold_baseline(mine + other, agent="other"), 1.0 - B_TRUE)
    assert gem_report(mine + other, agent="other").fwt == pytest.approx(-forward_transfer(R_TRUE))
    unnamed = [{**r, "agent": None} for r in gem_records()]
    with pytest.raises(ValueError, match=r"^records mix several agents \['memory', 'other', None\]; pass agent="):
        gem_matrix(mine + other + unnamed)
    seq2 = [{**r, "sequence": "s2", "success": 0.5} for r in gem_records()]
    with pytest.raises(ValueError, match=r"^records mix several sequences \['s2', 'seq'\]; pass sequence=\.\.\. to"):
        gem_matrix(mine + seq2)
    with pytest.raises(ValueError, match="several sequences"):
        cold_baseline(mine + seq2)
    with pytest.raises(ValueError, match="several sequences"):
        gem_report(mine + seq2)
    np.testing.assert_allclose(gem_matrix(mine + seq2, sequence="s2"), np.full((4, 3), 0.5))
    np.testing.assert_allclose(cold_baseline(mine + seq2, sequence="s2"), [0.5, 0.5, 0.5])
    np.testing.assert_allclose(gem_report(mine + seq2, sequence="s2").R, np.full((4, 3), 0.5))
    with pytest.raises(ValueError, match="^no eval or cold records with a task_index: cannot size the GEM matrix$"):
        gem_matrix([rec(condition="warm", task_index=1, seed=0, success=1)])


def test_sizes_follow_n_tasks_when_given() -> None:
    recs = gem_records()
    assert gem_matrix(recs, n_tasks=4).shape == (5, 4)
    b = cold_baseline(recs, n_tasks=4)
    assert b.shape == (4,) and math.isnan(b[3])
    with pytest.raises(ValueError, match="eval record without eval_after or task_index"):
        gem_matrix(recs + [rec(condition="eval", task_index=1, seed=0, success=1.0)])
    with pytest.raises(ValueError, match="eval record without eval_after or task_index"):
        gem_matrix(recs + [rec(condition="eval", eval_after=1, seed=0, success=1.0)])


def test_gem_report_fields_metric_and_note() -> None:
    recs = [
        {**r, "spl": r["success"] / 2}
        for r in gem_records(skip={(2, 3)})
        if r.get("task_index") != 2 or r["condition"] != "cold"
    ]
    rep = gem_report(recs, "spl")
    expected = R_TRUE / 2
    expected[2, 2] = np.nan
    np.testing.assert_allclose(rep.R, expected)
    np.testing.assert_allclose(rep.b, expected[0])
    np.testing.assert_allclose(rep.b_cold, [B_TRUE[0] / 2, np.nan, B_TRUE[2] / 2])
    assert rep.missing == [(2, 3)]
    assert rep.note == (
        "R has no eval records for (eval_after, task) (2, 3); no cold records for tasks [2] (FWT vs cold); "
        "FWT/BWT average only the terms that are available"
    )
    assert gem_report(gem_records()).note == ""
    two_missing = gem_report(gem_records(skip={(0, 1), (1, 2)}))
    assert two_missing.note.startswith("R has no eval records for (eval_after, task) (0, 1), (1, 2); FWT/BWT")


def test_matrices_of_booleans_and_nulls_read_as_numbers() -> None:
    # Success read back from JSON: booleans, and null for a cell never measured.
    R = [[False, False], [True, True], [True, True]]
    assert forward_transfer(R) == 1.0 and backward_transfer(R) == 0.0
    with_nulls = [[0.0, 0.5], [1.0, 1.0], [None, 1.0]]
    assert missing_cells(with_nulls) == [(2, 1)]
    assert forward_transfer(with_nulls) == 0.5 and math.isnan(backward_transfer(with_nulls))
    assert forward_transfer([[0.0, 0.0], [1.0, 0.5]], [0.2, None]) != forward_transfer([[0.0, 0.0], [1.0, 0.5]])
    assert math.isnan(forward_transfer([[0.0, 0.0], [1.0, 0.5]], [0.2, None]))


def test_order_key_numbers_then_strings_then_none() -> None:
    from embodmem.transfer import group_records, order_key, sort_value

    values = [None, "b", 2, True, "a", 1.5, "B"]
    assert sorted(values, key=order_key) == [1.5, 2, "B", True, "a", "b", None]
    assert [k[0] for k in group_records([{"k": v} for v in values], ("k",))] == [1.5, 2, "B", True, "a", "b", None]
    conditions = ["eval", None, "zzz", "cold", "single", "warm"]
    assert sorted(conditions, key=lambda v: sort_value("condition", v)) == [
        "warm",
        "cold",
        "single",
        "eval",
        "zzz",
        None,
    ]
    # other keys sort their values as plain strings, even the names of conditions
    assert sorted(["warm", "cold"], key=lambda v: sort_value("task", v)) == ["cold", "warm"]
    grouped = group_records([{"condition": c, "task": c} for c in conditions], ("condition", "task"))
    assert [k[0] for k in grouped] == ["warm", "cold", "single", "eval", "zzz", None]


def test_paired_seeds_follow_one_order_numbers_before_missing() -> None:
    from embodmem.transfer import paired_seed_means

    # Seeds listed out of order, one without a world seed: the pairs line up in sorted order.
    warm = [rec(seed=s, world_seed=ws, spl=v) for s, ws, v in [(3, 1, 0.3), (1, None, 0.9), (2, 0, 0.2), (0, 1, 0.1)]]
    cold = [
        rec(seed=s, world_seed=ws, spl=v / 2) for s, ws, v in [(2, 0, 0.2), (0, 1, 0.1), (1, None, 0.9), (3, 1, 0.3)]
    ]
    w, c = paired_seed_means(warm, cold, "spl")
    assert w.tolist() == [0.2, 0.1, 0.3, 0.9] and c.tolist() == [0.1, 0.05, 0.15, 0.45]
    row = transfer_table(
        [{**r, "condition": "warm", "task_index": 1} for r in warm]
        + [{**r, "condition": "cold", "task_index": 1} for r in cold],
        metrics=("spl",),
    )[0]
    assert (row["ft_spl_lo"], row["ft_spl_hi"]) == paired_ci(w, c, difference_of_means)


def test_per_seed_ratio_of_a_one_step_warm_run_is_kept() -> None:
    ratios = per_seed_steps_ratios(
        [rec(seed=0, steps=1), rec(seed=1, steps=0)], [rec(seed=0, steps=7), rec(seed=1, steps=3)]
    )
    assert ratios == {(0, 0): 7.0}


def test_transfer_row_step_means() -> None:
    recs = [
        rec(condition=c, seed=s, task_index=1, success=1, spl=0.5, steps=steps)
        for c, s, steps in [("warm", 0, 10), ("warm", 0, 30), ("warm", 1, 40), ("cold", 0, 50), ("cold", 1, 90)]
    ]
    row = transfer_table(recs)[0]
    assert row["steps_warm"] == 30.0 and row["steps_cold"] == 70.0  # (20 + 40) / 2 and (50 + 90) / 2
    assert row["steps_ratio"] == pytest.approx(70 / 30) and row["steps_ratio_median"] == pytest.approx((2.5 + 2.25) / 2)


def _seen(records: list[dict[str, Any]]) -> dict[int, str]:
    from embodmem.transfer import seen_groups

    return {s[1]: g for s, g in seen_groups(records).items()}


def test_seen_groups_prefer_the_warm_run_and_pool_its_episodes() -> None:
    def r(cond: str, seed: int, flag: bool | None) -> dict[str, Any]:
        return rec(condition=cond, seed=seed, task_index=2, target_seen_before=flag)

    groups = _seen(
        [
            r("cold", 0, True),  # a cold record listed first, then the warm one that decides
            r("warm", 0, False),
            r("warm", 1, True),  # any warm episode that saw it makes the seed "seen"
            r("warm", 1, False),
            r("warm", 2, False),
            r("warm", 2, True),
            r("cold", 3, True),  # no warm record: the cold one decides
            r("cold", 4, None),  # nothing known: not seen
            r("warm", 5, None),
            r("cold", 5, True),  # the warm record knows nothing: the cold one decides
        ]
    )
    assert groups == {0: "not seen", 1: "seen", 2: "seen", 3: "seen", 4: "not seen", 5: "seen"}


def test_small_sample_helpers() -> None:
    from embodmem.transfer import mean, median, std

    assert mean([1, 2]) == 1.5 and median([3, 1, 2]) == 2 and std([1.0, 3.0]) == pytest.approx(math.sqrt(2))
    assert all(math.isnan(f([])) for f in (mean, median, std)) and math.isnan(std([1.0]))
