"""Each metric's definition stated as invariants (hypothesis) and as its source's edge cases.

The other test files check worked examples; these check what must hold for every input: SPL in
[0, 1] and 0 on failure (Anderson et al. 2018), the reference distance score between 0 and 100 and
blind to the instances' order (OceanGym), a bootstrap interval that holds its point estimate and
narrows as seeds are added, a normalised gain undefined where the cold run is already perfect
(Continual World), a merge that joins only adjacent frames, the most similar pair first (MovieChat),
and records whose indices cannot exist refused rather than placed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from embodmem.memory import merge_adjacent
from embodmem.metrics import (
    FULL_SCORE_M,
    ZERO_SCORE_M,
    EpisodeMeasures,
    distance_score,
    instance_score,
    position_score,
    soft_spl,
    soft_success,
    spl,
)
from embodmem.stats import difference_of_means, mean_ci, normalised_gain, paired_ci, ratio_of_means
from embodmem.transfer import (
    backward_transfer,
    chain_table,
    cold_baseline,
    forward_transfer,
    gem_matrix,
    normalised_ft,
    steps_ratio,
    transfer_table,
    unnormalised_ft,
)

FAST = settings(max_examples=60, deadline=None)

metres = st.floats(0.0, 500.0, allow_nan=False)
unreachable = st.sampled_from([math.inf, math.nan])
unit_values = st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=2, max_size=12)


# --- SPL, SoftSPL (Anderson et al. 2018; Habitat's SoftSPL) ----------------------------------------


@FAST
@given(success=st.booleans(), shortest=metres, taken=metres)
def test_spl_is_in_unit_interval_and_zero_on_failure(success: bool, shortest: float, taken: float) -> None:
    value = spl(success, shortest, taken)
    assert 0.0 <= value <= 1.0
    if not success:
        assert value == 0.0
    elif shortest > 0:
        assert value == pytest.approx(shortest / max(shortest, taken))
    # a longer path never earns more
    assert spl(success, shortest, taken + 1.0) <= value


@FAST
@given(shortest=unreachable, taken=metres, d_final=metres)
def test_unreachable_goal_earns_nothing(shortest: float, taken: float, d_final: float) -> None:
    # l is infinite: no shortest path to compare with, so no credit even where the env said success.
    assert spl(True, shortest, taken) == 0.0
    assert soft_success(shortest, d_final) == 0.0
    assert soft_spl(shortest, d_final, shortest, taken) == 0.0
    assert soft_success(10.0, shortest) == 0.0


def test_zero_step_episode() -> None:
    # Started on the goal and stopped at once: optimal; started on it and left it: no progress.
    assert spl(True, 0.0, 0.0) == 1.0
    assert spl(True, 0.0, 5.0) == 0.0
    assert soft_success(0.0, 0.0) == 1.0 and soft_success(0.0, 5.0) == 0.0
    m = EpisodeMeasures()
    first = _reading(geodesic_m=0.0, distance_m=0.0, instance_distances_m=(0.0,), success=False)
    m.reset(first)
    r = m.get()  # no step taken: nothing stopped, nothing travelled
    assert (r.success, r.spl, r.steps, r.path_length, r.collisions, r.reports) == (0, 0.0, 0, 0.0, 0, 0)
    assert r.soft_spl == 1.0 and r.distance_score == 100.0 == r.distance_score_final


@FAST
@given(d0=metres, d1=metres, shortest=metres, taken=metres)
def test_soft_spl_is_bounded_by_its_success_term(d0: float, d1: float, shortest: float, taken: float) -> None:
    s = soft_success(d0, d1)
    assert 0.0 <= s <= 1.0
    value = soft_spl(d0, d1, shortest, taken)
    assert 0.0 <= value <= s
    if d0 > 0:
        assert s == pytest.approx(max(0.0, 1.0 - d1 / d0))
    # reaching the goal exactly gives SoftSPL = SPL of a success
    assert soft_spl(d0, 0.0, shortest, taken) == pytest.approx(spl(True, shortest, taken))


@pytest.mark.parametrize("bad", [(-1.0, 0.0), (0.0, -1.0)])
def test_negative_distances_are_refused(bad: tuple[float, float]) -> None:
    with pytest.raises(ValueError, match="non-negative"):
        spl(True, *bad)
    with pytest.raises(ValueError, match="non-negative"):
        soft_success(*bad)


# --- The reference distance score (OceanGym decision/utils/evaluate.py) -----------------------------


@FAST
@given(d=metres, e=metres)
def test_instance_score_is_a_clamped_line(d: float, e: float) -> None:
    s = instance_score(d)
    assert 0.0 <= s <= 100.0
    if d <= FULL_SCORE_M:
        assert s == 100.0
    elif d >= ZERO_SCORE_M:
        assert s == 0.0
    else:
        assert s == pytest.approx(100.0 * (ZERO_SCORE_M - d) / (ZERO_SCORE_M - FULL_SCORE_M))
    if d <= e:
        assert instance_score(e) <= s  # farther never scores more


distances = st.lists(metres, min_size=0, max_size=6)


@FAST
@given(ds=distances, data=st.data())
def test_position_score_is_a_weighted_mean_blind_to_order(ds: list[float], data: st.DataObject) -> None:
    score = position_score(ds)
    assert 0.0 <= score <= 100.0 + 1e-9
    shuffled = data.draw(st.permutations(ds))
    assert position_score(shuffled) == pytest.approx(score)
    nearest = sorted(ds)[:3]
    weights = {1: [1.0], 2: [0.6, 0.4], 3: [0.6, 0.2, 0.2]}.get(len(nearest), [])
    assert score == pytest.approx(sum(w * instance_score(d) for w, d in zip(weights, nearest)))
    if ds:
        # all instances within the full-score distance: 100; all beyond the zero-score distance: 0
        assert position_score([FULL_SCORE_M] * len(ds)) == pytest.approx(100.0)
        assert position_score([ZERO_SCORE_M] * len(ds)) == 0.0


@FAST
@given(final=distances, reports=st.lists(st.lists(metres, min_size=2, max_size=2), max_size=4))
def test_distance_score_keeps_the_better_of_final_and_best_report(
    final: list[float], reports: list[list[float]]
) -> None:
    score = distance_score(final, reports)
    assert score >= position_score(final)
    if reports:
        best = min(reports, key=lambda r: r[0])  # nearest the first instance; earliest on ties
        assert score == pytest.approx(max(position_score(final), position_score(best)))
    else:
        assert score == position_score(final)


def test_distance_score_picks_the_report_nearest_the_first_instance_not_the_best_scoring() -> None:
    # Report A is nearer instance 1 (40 m) but far from instance 2; report B scores higher overall.
    # The reference keeps A, the position nearest the first target point.
    a, b = [40.0, 200.0], [45.0, 0.0]
    assert distance_score([500.0, 500.0], [b, a]) == pytest.approx(position_score(a))
    assert position_score(b) > position_score(a)


@pytest.mark.parametrize("bad", [-1.0, math.nan])
def test_impossible_instance_distance_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="non-negative"):
        position_score([10.0, bad])


def test_threshold_order_is_checked() -> None:
    with pytest.raises(ValueError, match="full_score_m < zero_score_m"):
        instance_score(10.0, full_score_m=50.0, zero_score_m=50.0)


# --- Bootstrap intervals (embodmem.stats) ----------------------------------------------------------


@FAST
@given(values=unit_values)
def test_mean_interval_holds_the_mean_and_narrows_with_more_seeds(values: list[float]) -> None:
    point = float(np.mean(values))
    lo, hi = mean_ci(values)
    assert lo - 1e-12 <= point <= hi + 1e-12
    assert min(values) <= lo <= hi <= max(values)
    lo9, hi9 = mean_ci(values * 9)  # the same spread from nine times the seeds
    assert lo - 1e-12 <= lo9 and hi9 <= hi + 1e-12
    if max(values) > min(values):
        assert hi9 - lo9 < 0.7 * (hi - lo)


@FAST
@given(warm=unit_values, shift=st.sampled_from([-0.25, 0.0, 0.5]), data=st.data())
def test_paired_interval_holds_the_difference(warm: list[float], shift: float, data: st.DataObject) -> None:
    noise = data.draw(st.lists(st.sampled_from([0.0, 0.25]), min_size=len(warm), max_size=len(warm)))
    cold = [w - shift + e for w, e in zip(warm, noise)]
    point = float(difference_of_means(warm, cold))
    lo, hi = paired_ci(warm, cold, difference_of_means)
    assert lo - 1e-12 <= point <= hi + 1e-12
    lo9, hi9 = paired_ci(warm * 9, cold * 9, difference_of_means)
    assert lo9 - 1e-12 <= point <= hi9 + 1e-12
    if len(set(noise)) > 1:
        assert hi9 - lo9 < 0.7 * (hi - lo)
    else:  # the same difference on every seed: nothing to vary
        assert lo == pytest.approx(point) and hi == pytest.approx(point)


def test_exactly_two_seeds_give_an_interval_and_one_gives_none() -> None:
    # Two seeds: 2^2 equally likely resamples, so the interval spans both seeds' values.
    assert mean_ci([0.0, 1.0]) == (0.0, 1.0)
    assert paired_ci([1.0, 0.0], [0.0, 0.0], difference_of_means) == (0.0, 1.0)
    assert all(math.isnan(v) for v in mean_ci([0.5]))
    assert all(math.isnan(v) for v in paired_ci([0.5], [0.0], difference_of_means))
    assert all(math.isnan(v) for v in mean_ci([]))


@FAST
@given(warm=unit_values, data=st.data())
def test_normalised_gain_is_undefined_where_cold_is_perfect(warm: list[float], data: st.DataObject) -> None:
    perfect = [1.0] * len(warm)
    assert math.isnan(float(normalised_gain(warm, perfect)))
    assert all(math.isnan(v) for v in paired_ci(warm, perfect, normalised_gain))
    recs_w = [{"seed": i, "success": v} for i, v in enumerate(warm)]
    recs_c = [{"seed": i, "success": 1.0} for i in range(len(warm))]
    assert math.isnan(normalised_ft(recs_w, recs_c, "success"))
    cold = data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=len(warm), max_size=len(warm)))
    assume(float(np.mean(cold)) < 1.0)
    b = float(np.mean(cold))
    gain = float(normalised_gain(warm, cold))
    assert gain == pytest.approx((float(np.mean(warm)) - b) / (1.0 - b))
    assert gain <= 1.0 + 1e-12  # warm cannot close more than the whole gap
    recs_c = [{"seed": i, "success": v} for i, v in enumerate(cold)]
    assert normalised_ft(recs_w, recs_c, "success") == pytest.approx(gain)
    lo, hi = paired_ci(warm, cold, normalised_gain)
    assert lo <= hi <= 1.0 + 1e-12


def test_ratio_of_means_is_cold_over_warm() -> None:
    assert float(ratio_of_means([50.0, 150.0], [300.0, 100.0])) == 2.0
    lo, hi = paired_ci([50.0, 150.0, 100.0], [100.0, 300.0, 200.0], ratio_of_means)
    assert lo == pytest.approx(2.0) and hi == pytest.approx(2.0)


# --- Transfer: seeds, the first task of a sequence, impossible indices -------------------------------


def rec(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"agent": "memory", "sequence": "seq", "world_seed": 0, "task": "t"}
    base.update(kw)
    return base


@FAST
@given(warm=unit_values, data=st.data())
def test_ft_is_antisymmetric_and_blind_to_episode_counts(warm: list[float], data: st.DataObject) -> None:
    cold = data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=len(warm), max_size=len(warm)))
    w = [rec(seed=i, spl=v) for i, v in enumerate(warm)]
    c = [rec(seed=i, spl=v) for i, v in enumerate(cold)]
    ft = unnormalised_ft(w, c, "spl")
    assert ft == pytest.approx(float(np.mean(warm) - np.mean(cold)))
    assert unnormalised_ft(c, w, "spl") == pytest.approx(-ft)
    # a seed that logged its episode three times weighs as much as before
    assert unnormalised_ft(w + [w[0], w[0]], c, "spl") == pytest.approx(ft)


def test_transfer_with_exactly_two_seeds() -> None:
    recs = [
        rec(condition=cond, seed=s, task_index=1, success=ok, spl=ok / 2, steps=steps)
        for cond, s, ok, steps in [("warm", 0, 1, 20), ("warm", 1, 1, 40), ("cold", 0, 0, 60), ("cold", 1, 1, 60)]
    ]
    row = transfer_table(recs)[0]
    assert (row["n_seeds"], row["n_warm"], row["n_cold"]) == (2, 2, 2)
    assert row["ft_success"] == 0.5 and (row["ft_success_lo"], row["ft_success_hi"]) == (0.0, 1.0)
    assert row["ft_norm_success"] == pytest.approx(1.0)
    assert row["steps_ratio"] == pytest.approx(2.0) and row["steps_ratio_median"] == pytest.approx(2.25)
    assert steps_ratio(recs[:2], recs[2:]) == pytest.approx(2.0)


def test_first_task_of_a_sequence() -> None:
    # CSR of task 1 is its ISR (nothing came before); FWT has no term for task 1, BWT none for task T.
    recs = [
        rec(condition="warm", seed=s, task_index=k, task=f"t{k}", success=ok)
        for s, k, ok in [(0, 1, 0), (0, 2, 1), (1, 1, 1), (1, 2, 1), (2, 1, 1), (2, 2, 0)]
    ]
    rows = chain_table(recs)
    assert [(r["task_index"], r["isr"], r["csr"], r["n_csr"]) for r in rows] == [
        (1, pytest.approx(2 / 3), pytest.approx(2 / 3), 3),
        (2, pytest.approx(2 / 3), 0.5, 2),
    ]
    R = np.array([[0.0, 0.0], [1.0, 0.5], [0.25, 1.0]])
    assert forward_transfer(R) == 0.5  # only task 2: R[1][2] - R[0][2]
    assert backward_transfer(R) == -0.75  # only task 1: R[2][1] - R[1][1]
    assert forward_transfer(np.array([[0.3], [0.9]])) != forward_transfer(np.array([[0.3], [0.9]]))  # T=1: NaN


@pytest.mark.parametrize(
    ("record", "field"),
    [
        (dict(condition="eval", eval_after=0, task_index=0), "task_index=0"),
        (dict(condition="eval", eval_after=-1, task_index=1), "eval_after=-1"),
        (dict(condition="eval", eval_after=3, task_index=1), "eval_after=3"),
        (dict(condition="cold", task_index=0), "task_index=0"),
        (dict(condition="cold", task_index=-2), "task_index=-2"),
    ],
)
def test_records_with_impossible_indices_are_refused(record: dict[str, Any], field: str) -> None:
    good = [rec(condition="eval", eval_after=i, task_index=j, seed=0, success=0.5) for i in range(3) for j in (1, 2)]
    bad = rec(seed=0, success=1.0, **record)
    with pytest.raises(ValueError, match=field):
        gem_matrix(good + [bad], n_tasks=2)
    with pytest.raises(ValueError, match=field):
        cold_baseline(good + [bad], n_tasks=2)


def test_cold_record_beyond_the_sequence_is_refused() -> None:
    recs = [rec(condition="cold", task_index=j, seed=0, success=0.5) for j in (1, 2, 3)]
    assert cold_baseline(recs).tolist() == [0.5, 0.5, 0.5]
    with pytest.raises(ValueError, match="task_index=3"):
        cold_baseline(recs, n_tasks=2)


@pytest.mark.parametrize("index", [0, -1])
def test_chain_record_with_an_impossible_task_index_is_refused(index: int) -> None:
    recs = [rec(condition="warm", seed=0, task_index=1, success=1), rec(condition="warm", seed=0, task_index=index)]
    with pytest.raises(ValueError, match=rf"^warm record with task_index={index}; allowed: 1, 2, "):
        chain_table(recs)


# --- MovieChat merging (embodmem.memory.fifo) ------------------------------------------------------


def _greedy_reference(
    v: np.ndarray, counts: list[int], target: int, barriers: list[bool]
) -> tuple[list[list[int]], list[int], np.ndarray]:
    """MovieChat's merge written out plainly: while more than ``target`` groups remain, merge the
    adjacent pair (no barrier between) of highest cosine, the earliest on ties, into its
    count-weighted mean renormalised to unit length."""
    groups = [[i] for i in range(len(v))]
    vecs = [v[i].astype(np.float64) for i in range(len(v))]
    cnt = list(counts)
    while len(groups) > target:
        best, best_sim = -1, -math.inf
        for k in range(len(groups) - 1):
            if barriers[groups[k][-1]]:
                continue
            sim = float(vecs[k] @ vecs[k + 1])
            if sim > best_sim:
                best, best_sim = k, sim
        if best < 0:
            break
        merged = cnt[best] * vecs[best] + cnt[best + 1] * vecs[best + 1]
        norm = float(np.linalg.norm(merged))
        vecs[best] = merged / norm if norm > 1e-12 else vecs[best + 1]
        cnt[best] += cnt.pop(best + 1)
        vecs.pop(best + 1)
        groups[best] += groups.pop(best + 1)
    return groups, cnt, np.array(vecs)


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(1, 14),
    target=st.integers(1, 14),
    seed=st.integers(0, 2**16),
    levels=st.integers(2, 5),
    data=st.data(),
)
def test_merge_joins_only_adjacent_frames_most_similar_first(
    n: int, target: int, seed: int, levels: int, data: st.DataObject
) -> None:
    rng = np.random.default_rng(seed)
    # Few distinct directions so that ties and exact repeats occur.
    v = rng.integers(-levels, levels + 1, (n, 3)).astype(np.float32)
    v[np.all(v == 0, axis=1)] = 1.0
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    counts = rng.integers(1, 4, n).tolist()
    barriers = data.draw(st.lists(st.booleans(), min_size=max(n - 1, 0), max_size=max(n - 1, 0)))
    out, c, groups = merge_adjacent(v, counts, target, barriers)
    ref_groups, ref_counts, ref_vecs = _greedy_reference(v, counts, target, barriers + [True])
    assert groups == ref_groups
    assert c.tolist() == ref_counts
    np.testing.assert_allclose(out, ref_vecs, atol=1e-5)
    # joined only across no barrier, and no more groups than the barriers force
    assert all(not barriers[i] for g in groups for i in g[:-1])
    assert len(groups) == min(n, max(target, 1 + sum(barriers)))


def test_merge_of_opposite_frames_keeps_a_unit_vector() -> None:
    # Equal counts of opposite directions sum to zero: the merged record keeps the later direction.
    v = np.array([[1.0, 0.0], [-1.0, 0.0]], dtype=np.float32)
    out, c, groups = merge_adjacent(v, [1, 1], 1)
    assert groups == [[0, 1]] and c.tolist() == [2]
    np.testing.assert_array_equal(out, [[-1.0, 0.0]])


def test_merge_of_one_frame_and_of_none() -> None:
    out, c, groups = merge_adjacent(np.ones((1, 2), np.float32) / math.sqrt(2), [3], 1)
    assert groups == [[0]] and c.tolist() == [3]
    out, c, groups = merge_adjacent(np.zeros((0, 2), np.float32), [], 1)
    assert out.shape == (0, 2) and c.tolist() == [] and groups == []
    with pytest.raises(ValueError, match="2-D"):
        merge_adjacent(np.ones(3, np.float32), [1, 1, 1], 1)


# --- helpers ---------------------------------------------------------------------------------------


def _reading(**kw: Any) -> Any:
    from types import SimpleNamespace

    base: dict[str, Any] = dict(
        step=0,
        agent_pos=(0, 0),
        distance_m=12.0,
        geodesic_m=10.0,
        instance_distances_m=(12.0,),
        path_length_m=0.0,
        collisions=0,
        target_in_view=False,
        success=False,
        wrong_instance=False,
    )
    base.update(kw)
    return SimpleNamespace(**base)
