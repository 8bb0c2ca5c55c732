"""Short-term FIFO and MovieChat consolidation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embodmem.memory import FrameMeta, ShortTermFIFO, merge_adjacent
from embodmem.memory.records import QueryFilter, merge_metas


def test_merge_hand_worked_example() -> None:
    # a=(1,0) b=(.8,.6) c=(0,1) d=(-.6,.8); cos(a,b)=.8, cos(b,c)=.6, cos(c,d)=.8.
    v = np.array([[1, 0], [0.8, 0.6], [0, 1], [-0.6, 0.8]], dtype=np.float32)
    out, counts, groups = merge_adjacent(v, [2, 1, 1, 1], target=2)
    # Tie at .8: the earliest pair (a, b) goes first: 2a + b = (2.8, .6), |.| = sqrt(8.2), count 3.
    # Then cos(ab, c) = .6/sqrt(8.2) = .21 < cos(c, d) = .8: c + d = (-.6, 1.8), |.| = sqrt(3.6), count 2.
    assert groups == [[0, 1], [2, 3]]
    assert counts.tolist() == [3, 2]
    np.testing.assert_allclose(out[0], [2.8 / math.sqrt(8.2), 0.6 / math.sqrt(8.2)], rtol=1e-6)
    np.testing.assert_allclose(out[1], [-0.6 / math.sqrt(3.6), 1.8 / math.sqrt(3.6)], rtol=1e-6)
    # One more merge, count-weighted: 3 * ab + 2 * cd, renormalised.
    out1, counts1, groups1 = merge_adjacent(v, [2, 1, 1, 1], target=1)
    s = 3 * np.array([2.8, 0.6]) / math.sqrt(8.2) + 2 * np.array([-0.6, 1.8]) / math.sqrt(3.6)
    np.testing.assert_allclose(out1[0], s / np.linalg.norm(s), rtol=1e-6)
    assert counts1.tolist() == [5] and groups1 == [[0, 1, 2, 3]]


def test_merge_respects_barriers_and_noop() -> None:
    v = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], dtype=np.float32)
    out, counts, groups = merge_adjacent(v, [1, 1, 1, 1], 1, barriers=[False, True, False])
    assert groups == [[0, 1], [2, 3]] and counts.tolist() == [2, 2]
    out, counts, groups = merge_adjacent(v, [1, 1, 1, 1], 4)
    assert groups == [[0], [1], [2], [3]]
    np.testing.assert_array_equal(out, v)


@pytest.mark.parametrize("bad", [dict(target=0), dict(counts=[1, 0, 1, 1]), dict(barriers=[True])])
def test_merge_rejects_bad_input(bad: dict) -> None:
    kw = dict(vectors=np.eye(4, dtype=np.float32), counts=[1, 1, 1, 1], target=2) | bad
    with pytest.raises(ValueError):
        merge_adjacent(**kw)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 40),
    target=st.integers(1, 40),
    seed=st.integers(0, 2**16),
)
def test_merge_properties(n: int, target: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, 8)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    counts = rng.integers(1, 4, n)
    out, c, groups = merge_adjacent(v, counts, target)
    assert len(out) == min(n, target) == len(c) == len(groups)
    assert sum(groups, []) == list(range(n))  # contiguous, in order, every frame once
    assert [int(counts[g].sum()) for g in groups] == c.tolist()
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)


def _merge_reference(v: np.ndarray, counts: list[int], target: int) -> tuple[np.ndarray, list[int], list[list[int]]]:
    """merge_adjacent as written plainly (whole rows weighted by their counts, no shortcut), for a
    bit-for-bit comparison."""
    v = v.astype(np.float64)
    rows, count, groups = list(v), list(counts), [[i] for i in range(len(v))]
    sims = list(np.einsum("ij,ij->i", v[:-1], v[1:])) if len(v) > 1 else []
    while len(rows) > target:
        i = max(range(len(sims)), key=lambda k: (sims[k], -k))
        merged = rows[i] * count[i] + rows[i + 1] * count[i + 1]
        rows[i] = merged / math.sqrt(merged @ merged)
        count[i] += count.pop(i + 1)
        groups[i] += groups.pop(i + 1)
        del rows[i + 1], sims[i]
        if i < len(rows) - 1:
            sims[i] = float(rows[i] @ rows[i + 1])
        if i > 0:
            sims[i - 1] = float(rows[i - 1] @ rows[i])
    return np.array(rows).astype(np.float32), count, groups


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 40), target=st.integers(1, 40), seed=st.integers(0, 2**16))
def test_merge_is_the_plain_count_weighted_mean_bit_for_bit(n: int, target: int, seed: int) -> None:
    """Raw frames (count 1) are added without their multiplication: still the same bits."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, 16)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    counts = [int(c) for c in rng.choice([1, 1, 2, 3], n)]
    out, c, groups = merge_adjacent(v, counts, target)
    ref_out, ref_c, ref_groups = _merge_reference(v, counts, target)
    assert groups == ref_groups and c.tolist() == ref_c
    assert out.tobytes() == ref_out.tobytes()


@settings(max_examples=30, deadline=None)
@given(
    capacity=st.integers(2, 12),
    ratio=st.floats(0.1, 1.0),
    n=st.integers(0, 60),
    episode_len=st.integers(1, 30),
)
def test_fifo_order_and_capacity(capacity: int, ratio: float, n: int, episode_len: int) -> None:
    target = max(1, int(capacity * ratio))
    fifo = ShortTermFIFO(4, capacity, target)
    rng = np.random.default_rng(n)
    out_ids: list[int] = []
    out_counts = 0
    for i in range(n):
        v = rng.standard_normal(4).astype(np.float32)
        meta = FrameMeta("r", "t", i // episode_len, i, 0.0, 0.0)
        res = fifo.push(v / np.linalg.norm(v), meta, i)
        assert len(fifo) < capacity
        assert fifo.ids == sorted(fifo.ids)
        if res is not None:
            assert len(res.ids) <= capacity and len(res.ids) >= target
            out_ids.extend(res.ids.tolist())
            out_counts += sum(m.count for m in res.metas)
            for m, rid in zip(res.metas, res.ids):
                assert m.step == rid and m.step_min <= m.step_max == m.step  # latest frame kept
                assert m.step_max - m.step_min + 1 == m.count  # contiguous span
                assert m.episode == m.step_min // episode_len  # never across an episode boundary
    assert out_ids == sorted(out_ids) and len(set(out_ids)) == len(out_ids)
    assert out_counts + len(fifo) == n


def test_fifo_flush_ratio_and_search() -> None:
    fifo = ShortTermFIFO(2, 8, 4)
    e = np.array([[1, 0], [0, 1]], dtype=np.float32)
    for i in range(5):
        fifo.push(e[i % 2], FrameMeta("r", "t" if i < 3 else "u", 0, i, 0.0, 0.0), i)
    hits = fifo.search(e[1:2], 3, QueryFilter(task="t"))[0]
    assert [h.id for h in hits] == [1, 0, 2] and hits[0].source == "short_term"
    out = fifo.consolidate()  # 5 frames at ratio 4/8 -> 3 records
    assert len(out.ids) == 3 and len(fifo) == 0


def test_fifo_filters_follow_the_long_term_rules() -> None:
    """The short-term frames are filtered by task, run, episode and step span as the store filters
    (one rule, MetaTable.filter_mask); a reversed step range is refused the same way."""
    fifo = ShortTermFIFO(4, 64, 8)
    rng = np.random.default_rng(0)
    metas = [FrameMeta(f"run{i % 2}", f"task{i % 3}", i // 20, i, 0.0, 0.0) for i in range(40)]
    vecs = rng.standard_normal((40, 4)).astype(np.float32)
    for i, m in enumerate(metas):
        fifo.push(vecs[i], m, i)
    for kw, pred in [
        (dict(task="task1"), lambda m: m.task == "task1"),
        (dict(run_id="run0", task=["task0", "task2"]), lambda m: m.run_id == "run0" and m.task != "task1"),
        (dict(step_range=(10, 19)), lambda m: 10 <= m.step <= 19),
        (dict(episode=[1], task="task0"), lambda m: m.episode == 1 and m.task == "task0"),
        (dict(task="nope"), lambda m: False),
    ]:
        hits = fifo.search(vecs[:1], 40, QueryFilter(**kw))[0]
        assert sorted(h.id for h in hits) == [i for i, m in enumerate(metas) if pred(m)], kw
    with pytest.raises(ValueError, match="step_range"):
        fifo.search(vecs[:1], 5, QueryFilter(step_range=(5, 1)))


def test_consolidation_keeps_the_most_salient_label() -> None:
    """A drum frame merged with the open water that followed it still says "barrel"; on ties the
    latest member's label wins, as its pose does."""
    fifo = ShortTermFIFO(2, capacity=4, consolidate_to=1)
    v = np.array([1.0, 0.0], np.float32)
    labels = [("", 0.0), ("barrel", 0.8), ("", 0.0)]
    for i, (label, salience) in enumerate(labels):
        assert fifo.push(v, FrameMeta("r", "t", 0, i, float(i), 0.0, label=label, salience=salience), i) is None
    out = fifo.push(v, FrameMeta("r", "t", 0, 3, 3.0, 0.0), 3)
    assert out is not None and len(out.metas) == 1
    m = out.metas[0]
    assert (m.label, m.salience, m.step, m.x, m.count) == ("barrel", 0.8, 3, 3.0, 4)
    tie = merge_metas([FrameMeta("r", "t", 0, i, 0.0, 0.0, label=k, salience=0.7) for i, k in enumerate("ab")])
    assert tie.label == "b"
    plain = merge_metas([FrameMeta("r", "t", 0, i, 0.0, 0.0) for i in range(3)])
    assert (plain.label, plain.salience) == ("", 0.0)


def test_merge_messages_dtypes_and_inputs_left_alone() -> None:
    v = np.eye(3, dtype=np.float64)
    before = v.copy()
    out, counts, _ = merge_adjacent(v, [1, 1, 1], 1)
    np.testing.assert_array_equal(v, before)  # the caller's array is not merged into
    assert out.dtype == np.float32 and counts.dtype == np.int64
    # the arithmetic runs in float64 whatever the input's precision
    v16 = (np.array([[3, 4], [4, 3], [1, 0], [0.6, 0.8]]) / np.array([[5], [5], [1], [1]])).astype(np.float16)
    np.testing.assert_array_equal(
        merge_adjacent(v16, [1, 2, 3, 1], 2)[0], merge_adjacent(v16.astype(np.float32), [1, 2, 3, 1], 2)[0]
    )
    for kw, message in [
        (dict(vectors=np.ones(4, np.float32)), r"^vectors must be 2-D \(n, d\), got shape \(4,\)$"),
        (dict(counts=[1, 0, 1, 1]), r"^counts must be 4 positive integers, got \[1, 0, 1, 1\]$"),
        (dict(target=0), r"^target must be >= 1, got 0$"),
        (dict(barriers=[True]), r"^barriers must have 3 entries, got \(1,\)$"),
    ]:
        with pytest.raises(ValueError, match=message):
            merge_adjacent(**(dict(vectors=np.eye(4, dtype=np.float32), counts=[1, 1, 1, 1], target=2) | kw))
    # one frame: no neighbour, no barrier
    out, counts, groups = merge_adjacent(np.ones((1, 2), np.float32), [2], 1, barriers=[])
    assert groups == [[0]] and counts.tolist() == [2]


def test_merge_rescores_the_left_neighbour_of_a_merged_pair() -> None:
    # Angles 0, 1.0, 1.1, 2.07 rad: (1, 2) merge first, into a mean at 1.05 rad. Frame 0's score
    # against that mean, cos(1.05) = 0.498, is below cos(1.0) = 0.540, its score against frame 1
    # alone, and below the mean's score with frame 3, cos(1.02) = 0.523: so (1, 2, 3) merge next.
    v = np.array([[np.cos(t), np.sin(t)] for t in (0.0, 1.0, 1.1, 2.07)], dtype=np.float32)
    _, _, groups = merge_adjacent(v, [1, 1, 1, 1], 2)
    assert groups == [[0], [1, 2, 3]]


def test_fifo_buffer_and_empty_consolidation() -> None:
    with pytest.raises(ValueError, match=r"^need 1 <= consolidate_to \(5\) <= capacity \(4\)$"):
        ShortTermFIFO(3, 4, 5)
    fifo = ShortTermFIFO(3, 4, 4)  # consolidating a full buffer to itself is allowed
    assert fifo.vectors.dtype == np.float32 and fifo.vectors.shape == (0, 3)
    empty = fifo.consolidate()
    assert empty.vectors.shape == (0, 3) and empty.vectors.dtype == np.float32
    assert empty.metas == [] and empty.ids.shape == (0,) and empty.ids.dtype == np.int64
    fifo.push(np.array([1.0, 0.0, 0.0], np.float32), FrameMeta("r", "t", 0, 0, 0.0, 0.0), 7)
    one = fifo.consolidate()
    assert one.ids.tolist() == [7] and one.metas[0].step == 0 and len(fifo) == 0
    np.testing.assert_array_equal(one.vectors, [[1.0, 0.0, 0.0]])


def test_default_consolidation_target_rounds_up_and_keeps_at_least_one() -> None:
    e = np.eye(2, dtype=np.float32)
    fifo = ShortTermFIFO(2, capacity=10, consolidate_to=2)
    for i in range(3):  # 3 * 2 / 10 = 0.6 -> 1 record
        fifo.push(e[i % 2], FrameMeta("r", "t", 0, i, 0.0, 0.0), i)
    out = fifo.consolidate()
    assert out.ids.tolist() == [2] and out.metas[0].count == 3
    for i in range(6):  # 6 * 2 / 10 = 1.2 -> 2 records
        fifo.push(e[i % 2], FrameMeta("r", "t", 0, i, 0.0, 0.0), i)
    assert len(fifo.consolidate().ids) == 2


def test_fifo_search_without_a_filter_scores_every_frame_ties_in_order() -> None:
    fifo = ShortTermFIFO(2, capacity=64, consolidate_to=8)
    v = np.array([1.0, 0.0], np.float32)
    for i in range(40):  # equal scores everywhere: the earliest frames first
        fifo.push(v if i % 3 else np.array([0.0, 1.0], np.float32), FrameMeta("r", "t", 0, i, 0.0, 0.0), 100 + i)
    hits = fifo.search(np.array([[0.6, 0.8]], np.float32), 30)[0]
    assert [h.id for h in hits] == [100 + i for i in range(40) if i % 3 == 0] + [100 + i for i in range(40) if i % 3][
        : 30 - 14
    ]
    assert hits[0].score == pytest.approx(0.8) and hits[-1].score == pytest.approx(0.6)
    assert hits[0].meta == FrameMeta("r", "t", 0, 0, 0.0, 0.0) and hits[0].meta is not fifo.metas[0]
    assert ShortTermFIFO(2, 4, 2).search(np.zeros((2, 2), np.float32), 3) == [[], []]


def test_restore_replaces_the_held_frames_and_checks_their_number() -> None:
    fifo = ShortTermFIFO(2, capacity=4, consolidate_to=2)
    fifo.push(np.array([1.0, 0.0], np.float32), FrameMeta("r", "t", 0, 0, 0.0, 0.0), 1)
    metas = [FrameMeta("r", "t", 0, i, 0.0, 0.0) for i in (5, 6, 7)]
    vecs = np.array([[0.0, 1.0], [0.6, 0.8], [1.0, 0.0]], np.float32)
    fifo.restore(vecs, metas, [np.int64(15), 16, 17])
    assert len(fifo) == 3 and fifo.ids == [15, 16, 17] and type(fifo.ids[0]) is int and fifo.metas == metas
    np.testing.assert_array_equal(fifo.vectors, vecs)
    out = fifo.push(np.array([0.0, 1.0], np.float32), FrameMeta("r", "t", 0, 8, 0.0, 0.0), 18)
    assert out is not None and out.ids.tolist()[-1] == 18
    message = r"^restore needs as many vectors, metas and ids, fewer than 4$"
    for bad in [
        (vecs, metas, [1, 2]),
        (vecs[:2], metas, [1, 2, 3]),
        (np.zeros((4, 2)), metas + metas[:1], [1, 2, 3, 4]),
    ]:
        with pytest.raises(ValueError, match=message):
            fifo.restore(*bad)
    fifo.clear()
    assert len(fifo) == 0 and fifo.ids == [] and fifo.metas == []


def test_merge_of_far_apart_frames_is_their_renormalised_mean() -> None:
    # 150 degrees apart: the sum's length is 2 cos(75 deg) = 0.52 < 1, still renormalised to unit length.
    v = np.array([[1.0, 0.0], [np.cos(2.618), np.sin(2.618)]], dtype=np.float32)
    out, counts, _ = merge_adjacent(v, np.array([1, 1], dtype=np.int32), 1)
    np.testing.assert_allclose(out[0], [np.cos(1.309), np.sin(1.309)], atol=1e-6)
    assert counts.dtype == np.int64
    with pytest.raises(ValueError, match=r"^barriers must have 0 entries, got \(1,\)$"):
        merge_adjacent(v[:1], [1], 1, barriers=[True])


def test_place_filter_compares_in_float64_whatever_the_field_types() -> None:
    """A frame written with float32 coordinates is filtered by place in float64, as the long-term
    table's columns are (float32 arithmetic would round 0.1 - 0.1 to zero)."""
    meta = FrameMeta("r", "t", 0, 1, np.float32(0.1), 2.0)
    assert not QueryFilter(near=(0.1, 2.0, 0.0)).matches(meta)
    assert QueryFilter(near=(float(np.float32(0.1)), 2.0, 0.0)).matches(meta)
    fifo = ShortTermFIFO(dim=2, capacity=4, consolidate_to=2)
    fifo.push(np.array([1, 0], np.float32), meta, 0)
    assert fifo.search(np.eye(2, dtype=np.float32)[:1], 1, QueryFilter(near=(0.1, 2.0, 0.0))) == [[]]
