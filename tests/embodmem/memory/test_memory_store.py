"""Long-term FAISS store: cold start, budget, eviction, filters, and index/metadata agreement."""

from __future__ import annotations

import warnings

import faiss
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from embodmem.memory import FrameMeta, LongTermStore, sleep
from embodmem.memory.codec import build_index, code_bytes_per_vector, codec_of
from embodmem.memory.config import MemoryConfig
from embodmem.memory.eviction import EVICTIONS, kinds_eviction_order
from embodmem.memory.records import MetaTable, QueryFilter

D = 16


def _vecs(n: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, D)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _metas(ids: np.ndarray, task: str = "t0") -> list[FrameMeta]:
    """Every fourth record labelled with one of three kinds (salience varying with the id)."""
    return [
        FrameMeta(
            "r0", task, int(i) // 50, int(i), float(i % 9), float(i % 5), node=int(i) % 7,
            label="" if i % 4 else f"k{i % 3}", salience=0.0 if i % 4 else (int(i) * 37 % 100) / 100,
        )
        for i in ids
    ]  # fmt: skip


@pytest.mark.parametrize(
    "factory, code",
    [("Flat", 4 * D), ("SQfp16", 2 * D), ("SQ8", D), ("PQ4", 4), ("IVF4,PQ4", 4), ("OPQ4,PQ4", 4)],
)
def test_factories_code_size(factory: str, code: int) -> None:
    assert code_bytes_per_vector(build_index(D, factory)) == code


@pytest.mark.parametrize("bad", ["Nonsense42", "HNSW32", "IDMap,Flat", "IVF4,PQ4x4fs", ""])
def test_bad_factories_named(bad: str) -> None:
    with pytest.raises(ValueError, match="index_factory"):
        build_index(D, bad)


def test_pq_cold_start_flat_then_trained() -> None:
    s = LongTermStore(MemoryConfig(dim=D, index_factory="PQ4x4", train_min=100, train_sample=200))
    assert not s.trained and s.stats()["code_bytes_per_frame"] == 4 * D
    x = _vecs(150, 0)
    ids = np.arange(150)
    s.add(x[:90], _metas(ids[:90]), ids[:90])
    assert not s.trained and s.stats()["index"] == "Flat (cold start)"
    assert [h.id for h in s.search(x[5], 1)[0]] == [5]  # exact while flat
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s.add(x[90:], _metas(ids[90:]), ids[90:])
    assert s.trained and s.stats()["code_bytes_per_frame"] == 2 and s.trainings == 1
    assert np.array_equal(s.faiss_ids(), ids)
    hits = s.search(x[:20], 10)
    assert sum(int(i in [h.id for h in row]) for i, row in enumerate(hits)) >= 15  # PQ recall@10 on own vectors
    assert s.train_error is not None and s.train_error > 0


def test_filters_return_k_matches() -> None:
    s = LongTermStore(MemoryConfig(dim=D, index_factory="Flat"))
    x = _vecs(300, 1)
    ids = np.arange(300)
    metas = [FrameMeta(f"run{i % 2}", f"task{i % 3}", i // 100, i, 0.0, 0.0) for i in range(300)]
    s.add(x, metas, ids)
    for kw, pred in [
        (dict(task="task1"), lambda m: m.task == "task1"),
        (dict(run_id="run0", task=["task0", "task2"]), lambda m: m.run_id == "run0" and m.task != "task1"),
        (dict(step_range=(10, 19)), lambda m: 10 <= m.step <= 19),
        (dict(episode=2, task="task0"), lambda m: m.episode == 2 and m.task == "task0"),
    ]:
        want = [i for i in range(300) if pred(metas[i])]
        for k in (1, 7, len(want), len(want) + 5):
            hits = s.search(x[3], k, QueryFilter(**kw))[0]
            assert len(hits) == min(k, len(want))
            assert all(pred(h.meta) for h in hits)
            # exact: the best matching record by brute force comes first
            best = max(want, key=lambda i: float(x[i] @ x[3]))
            assert hits[0].id == best
    assert s.search(x[0], 5, QueryFilter(task="nope"))[0] == []
    with pytest.raises(ValueError, match="step_range"):
        s.search(x[0], 5, QueryFilter(step_range=(5, 1)))


def test_filtered_overfetch_on_large_ivf() -> None:
    """Over a few thousand matching records the store over-fetches from FAISS (not exact scoring)."""
    s = LongTermStore(MemoryConfig(dim=D, index_factory="IVF8,SQ8", train_min=500, train_sample=1000, nprobe=2))
    n = 12_000
    x = _vecs(n, 2)
    metas = [FrameMeta("r", "big" if i % 2 else "small", 0, i, 0.0, 0.0) for i in range(n)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s.add(x, metas, np.arange(n))
    for q in range(5):
        hits = s.search(x[q], 10, QueryFilter(task="big"))[0]
        assert len(hits) == 10 and all(h.meta.task == "big" for h in hits)


def test_budget_fifo_evicts_oldest() -> None:
    s = LongTermStore(MemoryConfig(dim=D, index_factory="SQ8", byte_budget=50 * D, train_min=10, train_sample=64))
    assert s.capacity == 12  # flat cold start: 4 bytes a dimension, so a quarter of SQ8's capacity
    for b in range(10):
        ids = np.arange(b * 20, b * 20 + 20)
        s.add(_vecs(20, b), _metas(ids), ids)
        assert s.stats()["code_bytes"] <= 50 * D
    assert s.capacity == 50 and s.trained
    assert s.meta.ids.tolist() == list(range(150, 200))
    assert s.evicted == 150


def test_budget_least_used_keeps_hit_records() -> None:
    s = LongTermStore(MemoryConfig(dim=D, index_factory="Flat", byte_budget=20 * 4 * D, eviction="least_used"))
    x = _vecs(40, 3)
    s.add(x[:20], _metas(np.arange(20)), np.arange(20))
    s.search(x[[2, 3]], 1, count_hits=True)
    s.add(x[20:30], _metas(np.arange(20, 30)), np.arange(20, 30))
    kept = set(s.meta.ids.tolist())
    assert {2, 3} <= kept and len(kept) == 20 and set(range(20, 30)) <= kept
    # a batch larger than the budget keeps its newest part
    s.add(_vecs(25, 4), _metas(np.arange(100, 125)), np.arange(100, 125))
    assert s.meta.ids.tolist() == list(range(105, 125))


def test_budget_places_keeps_a_view_of_every_place() -> None:
    """Map-informed eviction: 20 records, one each of places 0-6 then 13 of place 7; 10 more of place
    7 over budget. FIFO forgets places 0-6; "places" keeps a view of each (and the used record)."""
    x = _vecs(30, 6)
    metas = [FrameMeta("r0", "t0", 0, i, 0.0, 0.0, node=min(i, 7)) for i in range(30)]
    kept = {}
    for eviction in ("fifo", "places"):
        s = LongTermStore(MemoryConfig(dim=D, index_factory="Flat", byte_budget=20 * 4 * D, eviction=eviction))
        s.add(x[:20], metas[:20], np.arange(20))
        s.search(x[[12]], 1, count_hits=True)  # record 12 is the used view of place 7
        s.add(x[20:30], metas[20:30], np.arange(20, 30))
        kept[eviction] = set(s.meta.ids.tolist())
        assert len(kept[eviction]) == 20 and set(range(20, 30)) <= kept[eviction]
    assert kept["fifo"] == set(range(10, 30))
    assert set(range(7)) | {12} <= kept["places"]


def test_kinds_eviction_order_pinned() -> None:
    """Unlabelled records first (fewest hits, then oldest); then labelled records that are not their
    (label, node) pair's keeper (lowest salience, then oldest); then keepers, the label with the most
    keepers losing its worst first; the last of all is each label's best view, least salient first."""
    rows = [  # (hits, node, label, salience); label 0 is ""
        (2, 0, 0, 0.0),  # 0 unlabelled, used twice
        (0, 0, 0, 0.0),  # 1 unlabelled
        (0, 1, 1, 0.6),  # 2 barrel at node 1, not its keeper (3 is more salient)
        (0, 1, 1, 0.9),  # 3 barrel keeper of node 1: the barrel's best view
        (0, 2, 1, 0.7),  # 4 barrel keeper of node 2
        (0, 3, 1, 0.8),  # 5 barrel keeper of node 3
        (5, 1, 2, 0.55),  # 6 wreck at node 1: a tie with 8, which is newer; hits do not count
        (0, 4, 0, 0.0),  # 7 unlabelled
        (0, 1, 2, 0.55),  # 8 wreck keeper of node 1: the wreck's only view
    ]
    hits, node, label, sal = (np.array(c) for c in zip(*rows))
    order = kinds_eviction_order(np.arange(len(rows)) * 10, hits, node, label, sal.astype(np.float32), 0)
    assert order.tolist() == [1, 7, 0, 6, 2, 4, 5, 8, 3]
    assert kinds_eviction_order(*(np.zeros(0, t) for t in (np.int64, np.int32, np.int64, np.int32)),
                                np.zeros(0, np.float32), 0).tolist() == []  # fmt: skip
    everything_labelled = kinds_eviction_order(np.arange(3), np.zeros(3), np.zeros(3), np.ones(3), np.ones(3), -2)
    assert everything_labelled.tolist() == [0, 1, 2]  # one pair: the keeper (newest on ties) last


def test_budget_kinds_keeps_a_kind_seen_once_through_a_flood() -> None:
    """One frame of a wind station, then 40 unlabelled frames of open water, 8 records of room: FIFO
    forgets the station, ``kinds`` keeps it."""
    x = _vecs(41, 8)
    metas = [FrameMeta("r0", "t0", 0, 0, 0.0, 0.0, node=0, label="wind_station", salience=0.6)]
    metas += [FrameMeta("r0", "t0", 0, i, float(i), 0.0, node=i // 3) for i in range(1, 41)]
    kept = {}
    for eviction in ("fifo", "kinds"):
        s = LongTermStore(MemoryConfig(dim=D, index_factory="Flat", byte_budget=8 * 4 * D, eviction=eviction))
        for b in range(0, 41, 4):
            s.add(x[b : b + 4], metas[b : b + 4], np.arange(b, min(b + 4, 41)))
        kept[eviction] = set(s.meta.ids.tolist())
        assert len(kept[eviction]) == 8 and {37, 38, 39, 40} <= kept[eviction]
    assert kept["fifo"] == set(range(33, 41))
    assert kept["kinds"] == {0} | set(range(34, 41)) and s.meta.meta(0).label == "wind_station"


def test_budget_kinds_keeps_one_view_per_kind_when_kinds_outnumber_the_room() -> None:
    """Eight kinds seen once each (salience 0.6), then many confident views of kind "a" at new places,
    one record at a time, 6 records of room: the old records kept are one per kind, the most
    salient "a" among them, then the newest views of the other kinds."""
    kinds = "abcdefgh"
    labels = [(k, 0.6) for k in kinds] + [("a", 0.95)] * 12
    x = _vecs(len(labels), 9)
    s = LongTermStore(MemoryConfig(dim=D, index_factory="Flat", byte_budget=6 * 4 * D, eviction="kinds"))
    for i, (k, p) in enumerate(labels):
        s.add(x[i : i + 1], [FrameMeta("r0", "t0", 0, i, 0.0, 0.0, node=i, label=k, salience=p)], [i])
        old = [s.meta.meta(r) for r in range(len(s) - 1)]  # all but the record just inserted
        assert len({m.label for m in old}) == len(old)
    assert sorted(m.label for m in old) == ["a", "e", "f", "g", "h"]
    assert max(m.salience for m in old if m.label == "a") == pytest.approx(0.95)


@settings(max_examples=60, deadline=None)
@given(
    room=st.integers(1, 10),
    batches=st.lists(
        st.lists(st.tuples(st.sampled_from(["", "", "a", "b", "c", "d"]), st.integers(0, 4), st.floats(0.5, 1.0)),
                 min_size=1, max_size=6),
        min_size=1, max_size=15,
    ),
)  # fmt: skip
def test_budget_kinds_properties(room: int, batches: list[list[tuple[str, int, float]]]) -> None:
    """Any sequence of inserts under ``kinds``: no labelled record goes while an unlabelled old one
    stays, and every label held keeps a view while the old records kept can hold one each."""
    s = LongTermStore(MemoryConfig(dim=D, index_factory="Flat", byte_budget=room * 4 * D, eviction="kinds"))
    next_id = 0
    for batch in batches:
        before = {int(i): s.meta.meta(r).label for r, i in enumerate(s.meta.ids)}
        ids = np.arange(next_id, next_id + len(batch))
        next_id += len(batch)
        metas = [FrameMeta("r", "t", 0, int(i), 0.0, 0.0, node=node, label=k, salience=p if k else 0.0)
                 for i, (k, node, p) in zip(ids, batch)]  # fmt: skip
        s.add(_vecs(len(batch), next_id), metas, ids)
        after = set(s.meta.ids.tolist())
        removed = [i for i in before if i not in after]
        old = [s.meta.meta(r) for r, i in enumerate(s.meta.ids) if int(i) in before]
        old_labels = {m.label for m in old}
        if any(before[i] for i in removed):
            assert "" not in old_labels
        held = set(before.values()) - {""}
        if len(old) >= len(held):
            assert held <= old_labels


def test_budget_too_small_for_cold_start_is_named() -> None:
    with pytest.raises(ValueError, match="byte_budget=1000.*train_min=100"):
        LongTermStore(MemoryConfig(dim=D, index_factory="PQ4", byte_budget=1000, train_min=100, train_sample=200))


def test_ids_must_increase_and_search_by_id() -> None:
    s = LongTermStore(MemoryConfig(dim=D, index_factory="Flat"))
    x = _vecs(10, 5)
    s.add(x, _metas(np.arange(10)), np.arange(10))
    with pytest.raises(ValueError, match="strictly increasing"):
        s.add(x[:1], _metas(np.array([3])), [3])
    assert len(s) == 10
    hits = s.search_by_id(4, 3)
    assert len(hits) == 3 and 4 not in [h.id for h in hits]
    assert s.search_by_id(4, 1, exclude_self=False)[0].id == 4
    with pytest.raises(KeyError, match="99"):
        s.search_by_id(99, 3)


FACTORIES = ["Flat", "SQ8", "PQ4x4", "IVF4,Flat"]


class StoreMachine(RuleBasedStateMachine):
    """Any sequence of inserts, merges, removals, searches and sleeps keeps FAISS and metadata equal,
    the budget respected, and FIFO eviction removing exactly the oldest records. With the raw vectors
    on disk (compacting often), the file holds exactly each record's vector, row for row, and every
    record's code is the encoding of its raw vector."""

    @initialize(
        factory=st.sampled_from(FACTORIES),
        budget=st.sampled_from([None, 40, 90]),
        eviction=st.sampled_from(list(EVICTIONS)),
        raw=st.sampled_from([("recent", 0), ("disk", 0), ("disk", 6), ("disk", 40)]),
        raw_dtype=st.sampled_from(["float16", "float32"]),
    )
    def setup(self, factory: str, budget: int | None, eviction: str, raw: tuple[str, int], raw_dtype: str) -> None:
        code = code_bytes_per_vector(build_index(D, factory))
        self.budget = None if budget is None else budget * 4 * D  # room for 40/90 flat vectors
        self.store = LongTermStore(
            MemoryConfig(
                dim=D,
                index_factory=factory,
                byte_budget=self.budget,
                eviction=eviction,
                train_min=30,
                train_sample=60,
                nprobe=4,
                raw_vectors=raw[0],
                raw_dtype=raw_dtype,
                rerank=raw[1],
            )
        )
        if self.store.raw_file is not None:
            self.store.raw_file.compact_min = 4
        self.code = code
        self.next_id = 0
        self.seed = 0
        self.model: dict[int, np.ndarray] = {}  # id -> the vector it was given (disk mode checks it)

    @rule(n=st.integers(1, 25), task=st.sampled_from(["a", "b"]))
    def add(self, n: int, task: str) -> None:
        before = self.store.meta.ids.copy()
        ids = np.arange(self.next_id, self.next_id + n)
        self.next_id += n + 1
        self.seed += 1
        x = _vecs(n, self.seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kept = self.store.add(x, _metas(ids, task), ids)
        self.model.update(zip(ids.tolist(), x))
        after = set(self.store.meta.ids.tolist())
        assert set(kept.tolist()) <= after
        removed = [i for i in before.tolist() if i not in after]
        if self.store.config.eviction == "fifo":
            assert removed == before[: len(removed)].tolist()  # the oldest, in order

    @precondition(lambda self: len(self.store) >= 4)
    @rule(data=st.data())
    def merge(self, data: st.DataObject) -> None:
        ids = self.store.meta.ids
        pick = data.draw(st.lists(st.sampled_from(ids.tolist()), min_size=2, max_size=6, unique=True))
        v = self.store.vectors(pick).sum(axis=0)
        total = int(self.store.meta.col("count")[self.store.meta.rows_of(np.asarray(pick))].sum())
        (survivor,) = self.store.merge([np.asarray(pick)], (v / np.linalg.norm(v))[None])
        assert survivor == max(pick)
        self.model[survivor] = v / np.linalg.norm(v)
        # Read the survivor's row directly: with a lossy code a search by its vector may rank a
        # neighbour first.
        assert self.store.meta.meta(int(self.store.meta.rows_of(np.array([survivor]))[0])).count == total

    @precondition(lambda self: len(self.store) >= 1)
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        pick = data.draw(st.lists(st.sampled_from(self.store.meta.ids.tolist()), min_size=1, max_size=5))
        self.store.remove(pick)
        assert not set(pick) & set(self.store.meta.ids.tolist())

    @rule(k=st.integers(1, 12), task=st.sampled_from([None, "a", "b"]))
    def search(self, k: int, task: str | None) -> None:
        hits = self.store.search(_vecs(1, 999), k, QueryFilter(task=task))[0]
        n_match = (
            len(self.store)
            if task is None
            else int((self.store.meta.col("task") == self.store.meta.code(task, create=False)).sum())
        )
        assert len(hits) == min(k, n_match)
        assert all(task is None or h.meta.task == task for h in hits)
        assert [h.score for h in hits] == sorted([h.score for h in hits], reverse=True)

    @rule(retrain=st.sampled_from([None, True]))
    def do_sleep(self, retrain: bool | None) -> None:
        counts = dict(zip(self.store.meta.ids.tolist(), self.store.meta.col("count").tolist()))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rep = sleep(self.store, dedup_threshold=0.5, retrain=retrain)
        assert rep["records_after"] == rep["records_before"] - rep["merged_away"]
        for rid, c in zip(self.store.meta.ids.tolist(), self.store.meta.col("count").tolist()):
            if c != counts[rid]:  # a survivor of sleep's merging: its vector is sleep's mean
                self.model.pop(rid, None)

    @invariant()
    def agree(self) -> None:
        s = self.store
        assert s.index.ntotal == len(s.meta)
        assert np.array_equal(s.faiss_ids(), s.meta.ids)
        assert np.all(np.diff(s.meta.ids) > 0)
        if self.budget is not None:
            assert s.stats()["code_bytes"] <= self.budget
        if s.raw_file is not None:
            raw = s.raw_file
            assert len(raw) == len(s.meta) and s.stats()["raw_disk_bytes"] == len(s.meta) * raw.row_bytes
            x = raw.get(np.arange(len(raw)))
            for rid, v in zip(s.meta.ids.tolist(), x):
                if rid in self.model:
                    np.testing.assert_array_equal(v, self.model[rid].astype(raw.dtype).astype(np.float32))
            if len(s):
                codec = codec_of(s.index)
                np.testing.assert_allclose(codec.sa_decode(codec.sa_encode(x)), s.reconstruct(s.meta.ids), atol=1e-6)


StoreMachine.TestCase.settings = settings(
    max_examples=80,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_store_state_machine = StoreMachine.TestCase


@pytest.mark.parametrize("factory", ["Flat", "SQ8", "PQ4", "IVF8,Flat", "OPQ4,IVF8,Flat"])
def test_filter_matching_far_from_the_query(factory: str) -> None:
    """Matches live in other clusters than the query: selectors, nprobe widening (IVF, nprobe=1)
    and over-fetching (PQ, no selector support) must still return k matching records."""
    rng = np.random.default_rng(7)
    centres = _vecs(8, 8) * 4
    label = np.repeat(np.arange(8), 500)
    x = centres[label] + rng.standard_normal((4000, D)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    metas = [FrameMeta("r", f"c{c}", 0, i, 0.0, 0.0) for i, c in enumerate(label)]
    s = LongTermStore(MemoryConfig(dim=D, index_factory=factory, train_min=300, train_sample=600, nprobe=1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s.add(x, metas, np.arange(4000))
    m = s.meta
    m.set_values("task", np.arange(4000), np.where(label < 4, m.code("near"), m.code("far")))  # 2000 each
    q = x[label == 0][:3]
    for row in s.search(q, 10, QueryFilter(task="far")):
        assert len(row) == 10 and all(h.meta.task == "far" for h in row)
    best_far = max(np.flatnonzero(label >= 4), key=lambda i: float(x[i] @ q[0]))
    if factory == "Flat":  # exhaustive with a selector: exact (IVF is approximate by design)
        assert s.search(q[0], 1, QueryFilter(task="far"))[0][0].id == best_far


def _places_in_visiting_order(seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[FrameMeta], np.ndarray]:
    """60 places x 40 noisy views, place after place (as an explorer sees them), and 200 queries
    (fresh views of random places) with their exact top 10."""
    rng = np.random.default_rng(seed)
    centres = _unit(rng.standard_normal((60, D)))
    place = np.repeat(np.arange(60), 40)
    x = _unit(centres[place] + 0.5 / np.sqrt(D) * rng.standard_normal((len(place), D)))
    q = _unit(centres[rng.integers(0, 60, 200)] + 0.5 / np.sqrt(D) * rng.standard_normal((200, D)))
    gt = np.argsort(-(q @ x.T), axis=1, kind="stable")[:, :10]
    metas = [FrameMeta("r", "t", 0, i, float(p), 0.0, node=int(p)) for i, p in enumerate(place)]
    return x, q, metas, gt


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def test_visiting_order_retraining_from_disk_recovers_recall() -> None:
    """A quantiser trained on the first 10 of 60 places: retraining from the RAM ring buffer (recent
    places) plus lossy codes leaves 1-recall@10 where it was; retraining from every raw vector on disk
    restores it, and re-ranking from the raw vectors lifts it further."""
    x, q, metas, gt = _places_in_visiting_order()
    recall = {}
    for raw, rerank in (("recent", 0), ("disk", 0), ("disk", 32)):
        s = LongTermStore(
            MemoryConfig(
                dim=D,
                index_factory="IVF16,SQ4",
                train_min=400,
                train_sample=800,
                nprobe=2,
                raw_vectors=raw,
                rerank=rerank,
            )
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for b in range(0, len(x), 16):
                s.add(x[b : b + 16], metas[b : b + 16], np.arange(b, min(len(x), b + 16)))
            stale = s.search(q, 10)
            rep = sleep(s, dedup_threshold=1.01)  # merges nothing; retrains on drift
        assert rep["retrained"] and rep["drift"] > 10 and rep["retrain_seconds"] >= 0
        after = s.search(q, 10)
        recall[raw, rerank] = [
            float(np.mean([gt[i, 0] in [h.id for h in rows[i]] for i in range(len(q))])) for rows in (stale, after)
        ]
    assert recall["recent", 0][1] <= recall["recent", 0][0] + 0.02  # lossy retraining: no gain
    assert recall["disk", 0][1] >= recall["recent", 0][1] + 0.1
    assert recall["disk", 32][1] >= 0.95 and recall["disk", 32][1] >= recall["disk", 0][1]


def test_rerank_over_everything_is_exact() -> None:
    """With every list probed and every record a candidate, re-ranking returns the exact top k of
    the raw (float16) vectors, with their exact scores; filters still hold."""
    x, q, metas, _ = _places_in_visiting_order(1)
    n = 2400
    s = LongTermStore(
        MemoryConfig(
            dim=D, index_factory="IVF8,SQ4", train_min=300, train_sample=600, nprobe=8, raw_vectors="disk", rerank=n
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s.add(x[:n], metas[:n], np.arange(n))
    raw = x[:n].astype(np.float16).astype(np.float32)
    for qi, row in enumerate(s.search(q[:20], 10)):
        sims = raw @ q[qi]
        assert [h.id for h in row] == np.argsort(-sims, kind="stable")[:10].tolist()
        np.testing.assert_allclose([h.score for h in row], np.sort(sims)[::-1][:10], rtol=1e-6)
    tasks = np.where(np.arange(n) % 3 == 0, s.meta.code("third"), s.meta.code("rest"))
    s.meta.set_values("task", np.arange(n), tasks)
    for task, want in (("third", np.arange(0, n, 3)), ("rest", np.flatnonzero(np.arange(n) % 3))):
        # 800 matches: scored exactly on the raw vectors; 1,600: a FAISS selector, then re-ranked
        row = s.search(q[0], 10, QueryFilter(task=task))[0]
        assert [h.id for h in row] == want[np.argsort(-(raw[want] @ q[0]), kind="stable")[:10]].tolist()


def test_disk_mode_same_seed_same_store_other_seed_differs() -> None:
    """Raw vectors on disk, trained, retrained and merged: the same seed rebuilds the same index
    bytes and answers; another seed samples other training vectors, so other codes."""
    x, q, metas, _ = _places_in_visiting_order(2)

    def build(seed: int) -> LongTermStore:
        s = LongTermStore(
            MemoryConfig(
                dim=D,
                index_factory="IVF16,PQ4",
                train_min=400,
                train_sample=500,
                nprobe=2,
                raw_vectors="disk",
                rerank=16,
                seed=seed,
            )
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for b in range(0, len(x), 16):
                s.add(x[b : b + 16], metas[b : b + 16], np.arange(b, min(len(x), b + 16)))
            sleep(s, dedup_threshold=0.97, retrain=True)
        return s

    a, b, c = build(0), build(0), build(1)
    assert faiss.serialize_index(a.index).tobytes() == faiss.serialize_index(b.index).tobytes()
    assert [[(h.id, h.score) for h in row] for row in a.search(q, 10)] == [
        [(h.id, h.score) for h in row] for row in b.search(q, 10)
    ]
    assert a.raw_file is not None and b.raw_file is not None
    assert np.array_equal(a.raw_file.get(np.arange(len(a))), b.raw_file.get(np.arange(len(b))))
    assert faiss.serialize_index(a.index).tobytes() != faiss.serialize_index(c.index).tobytes()


def test_columns_of_checked_records_equal_the_checked_columns_and_read_back_equal() -> None:
    """``checked=True`` (memory's own records) skips the per-record checks and builds the same
    columns; a record read back from the table equals the one written."""
    metas = [
        FrameMeta(
            "r", "t", 2, 7, 1.5, 2.0, heading=3, node=4, count=2, step_min=5, hits=1, label="wreck", salience=0.5
        ),
        FrameMeta("r", "u", 2, 9, 1.0, 0.0),
    ]
    table = MetaTable(None)
    plain = table.columns_from_metas(np.arange(2), metas)
    trusted = table.columns_from_metas(np.arange(2), metas, checked=True)
    assert plain.keys() == trusted.keys()
    assert all(plain[k].dtype == trusted[k].dtype and plain[k].tolist() == trusted[k].tolist() for k in plain)
    table.append(trusted)
    assert table.metas([0, 1]) == metas and [type(v) for v in vars(table.meta(0)).values()] == [
        type(v) for v in vars(metas[0]).values()
    ]
    assert table.columns_from_metas(np.zeros(0), [])["step"].shape == (0,)
    metas[1].heading = 9
    with pytest.raises(ValueError, match=r"FrameMeta.heading must be an int in \[0, 4\), got 9"):
        table.columns_from_metas(np.arange(2), metas)
