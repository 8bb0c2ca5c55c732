"""Sleep-time consolidation: dedup within a place, merge, retrain on drift, report."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from embodmem.memory import FrameMeta, LongTermStore, sleep
from embodmem.memory.codec import reconstruction_error
from embodmem.memory.config import MemoryConfig

D = 8


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _store_with_duplicates(**kw: object) -> tuple[LongTermStore, np.ndarray]:
    rng = np.random.default_rng(0)
    base = _unit(rng.standard_normal((4, D)))
    # ids 0..11: three near-copies of each base view; node = view, except view 3 split over two nodes
    x = _unit(np.repeat(base, 3, axis=0) + 0.01 * rng.standard_normal((12, D)))
    nodes = [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 4]
    metas = [
        FrameMeta("r", "a" if i < 7 else "b", 0, i, float(i), 0.0, node=nodes[i], count=1 + i % 2) for i in range(12)
    ]
    s = LongTermStore(MemoryConfig(dim=D, index_factory="Flat", **kw))  # type: ignore[arg-type]
    s.add(x, metas, np.arange(12))
    return s, x


def test_dedup_merges_within_node_count_weighted() -> None:
    s, x = _store_with_duplicates()
    rep = sleep(s, dedup_threshold=0.99)
    assert rep["records_before"] == 12 and rep["records_after"] == 5
    assert rep["merged_away"] == 7 and rep["clusters"] == 4
    assert s.meta.ids.tolist() == [2, 5, 8, 10, 11]  # survivors: the newest of each cluster
    m = s.search_by_id(2, 1, exclude_self=False)[0].meta
    assert (m.count, m.step_min, m.step_max, m.step, m.x) == (1 + 2 + 1, 0, 2, 2, 2.0)
    w = np.array([1, 2, 1], dtype=np.float64)[:, None]
    np.testing.assert_allclose(s.reconstruct([2])[0], _unit((w * x[:3]).sum(0)), rtol=1e-5)
    assert rep["code_bytes_after"] == 5 * 4 * D and rep["code_bytes_before"] == 12 * 4 * D
    assert rep["metadata_bytes_after"] < rep["metadata_bytes_before"]
    assert np.array_equal(s.faiss_ids(), s.meta.ids)


def test_dedup_respects_task_and_distance() -> None:
    s, _ = _store_with_duplicates()
    sleep(s, dedup_threshold=0.99, same_task=True)
    assert 6 in s.meta.ids.tolist() and 8 in s.meta.ids.tolist()  # node 2 spans tasks a|b
    s, _ = _store_with_duplicates()
    sleep(s, dedup_threshold=0.99, dedup_distance=1.0)  # x = step: records 1 cell apart
    # leader clustering per node: {0,1} {2}, {3,4} {5}, {6,7} {8}, {9,10}, {11}: 2 is 2 cells from leader 0
    assert s.meta.ids.tolist() == [1, 2, 4, 5, 7, 8, 10, 11]
    s, _ = _store_with_duplicates()
    sleep(s, dedup_threshold=0.99, dedup_distance=0.5)
    assert len(s) == 12
    s, _ = _store_with_duplicates()
    assert sleep(s, dedup_threshold=1.01)["merged_away"] == 0


def test_retrain_on_drift_and_when_asked() -> None:
    rng = np.random.default_rng(1)
    s = LongTermStore(MemoryConfig(dim=D, index_factory="PQ4x4", train_min=100, train_sample=200))
    a = _unit(rng.standard_normal((100, D)) * np.r_[np.ones(4), 0.01 * np.ones(4)])  # lives in 4 dims
    b = _unit(rng.standard_normal((200, D)) * np.r_[0.01 * np.ones(4), np.ones(4)])  # the other 4
    metas = [FrameMeta("r", "t", 0, i, float(i), 0.0) for i in range(300)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s.add(a, metas[:100], np.arange(100))
        assert s.trained and s.trainings == 1
        s.add(b, metas[100:], np.arange(100, 300))
        err_before = reconstruction_error(s.index, b)
        rep = sleep(s, dedup_threshold=1.01, drift_factor=1.5)
        assert reconstruction_error(s.index, b) < err_before / 2
        assert rep["retrained"] and "drift" in rep["retrain_reason"] and rep["drift"] > 1.5
        assert s.drift() == pytest.approx(1.0)  # the baseline is re-measured on the recent vectors
        rep = sleep(s, dedup_threshold=1.01, retrain=True)
        assert rep["retrained"] and rep["retrain_reason"] == "asked"
        assert not sleep(s, dedup_threshold=1.01, retrain=False)["retrained"]
    assert np.array_equal(s.faiss_ids(), np.arange(300)) and s.trainings == 3
    hits = s.search(b[:10], 5)
    assert sum(i + 100 in [h.id for h in row] for i, row in enumerate(hits)) >= 5  # 2-byte codes


def test_report_keys_and_flat_never_retrains() -> None:
    s, _ = _store_with_duplicates()
    rep = sleep(s, retrain=True)
    assert not rep["retrained"] and rep["drift"] is None
    assert {"records_before", "records_after", "code_bytes_before", "code_bytes_after", "seconds"} <= set(rep)


@pytest.mark.parametrize("factory", ["SQ8", "IVF2,Flat"])
def test_sleep_keeps_index_and_metadata_equal(factory: str) -> None:
    s, _ = _store_with_duplicates(train_min=12, train_sample=12)
    assert s.trained
    s2 = LongTermStore(MemoryConfig(dim=D, index_factory=factory, train_min=12, train_sample=12))
    s2.add(s.reconstruct(s.meta.ids), [s.meta.meta(i) for i in range(len(s))], s.meta.ids)
    sleep(s2, dedup_threshold=0.98, retrain=True)
    assert np.array_equal(s2.faiss_ids(), s2.meta.ids) and len(s2) < 12


def test_sleep_merge_keeps_the_most_salient_label() -> None:
    """Near-duplicates of one place merged during sleep: the survivor (the newest) takes the label and
    salience of the most salient member, the newest on ties."""
    v = _unit(np.ones((5, D)))
    labels = [("wreck", 0.6), ("barrel", 0.9), ("", 0.0), ("pipeline", 0.7), ("aircraft", 0.7)]
    metas = [FrameMeta("r", "a", 0, i, 0.0, 0.0, node=0 if i < 3 else 1, label=k, salience=p)
             for i, (k, p) in enumerate(labels)]  # fmt: skip
    s = LongTermStore(MemoryConfig(dim=D, index_factory="Flat"))
    s.add(v, metas, np.arange(5))
    rep = sleep(s, dedup_threshold=0.99)
    assert rep["clusters"] == 2 and s.meta.ids.tolist() == [2, 4]
    kept = [s.meta.meta(r) for r in range(2)]
    assert [(m.label, round(m.salience, 6)) for m in kept] == [("barrel", 0.9), ("aircraft", 0.7)]
