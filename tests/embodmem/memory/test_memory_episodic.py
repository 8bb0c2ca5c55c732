"""AgentMemory facade and MemoryConfig validation."""

from __future__ import annotations

import tempfile
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from omegaconf import OmegaConf

from embodmem.memory import AgentMemory, FrameMeta, MemoryConfig
from embodmem.memory.records import QueryFilter

D = 32


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize(
    "field, value",
    [
        ("dim", 0),
        ("short_term_capacity", 0),
        ("consolidate_to", 64),
        ("eviction", "random"),
        ("nprobe", 0),
        ("byte_budget", -5),
        ("train_sample", 5),
        ("node_rule", "smell"),
        ("node_distance", 0.0),
        ("node_similarity", 1.5),
        ("dedup_threshold", "high"),
        ("thumbnail_size", 1),
        ("keep_thumbnails", 1),
        ("faiss_threads", 0),
        ("drift_factor", 0.5),
        ("dim", True),
    ],
)
def test_config_errors_name_field_and_value(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"MemoryConfig\.{field} must be .*got {value!r}"):
        MemoryConfig(**{field: value})  # type: ignore[arg-type]


def test_config_factory_and_budget_errors() -> None:
    with pytest.raises(ValueError, match=r"MemoryConfig\.index_factory='Bogus9'"):
        MemoryConfig(index_factory="Bogus9")
    with pytest.raises(ValueError, match=r"MemoryConfig\.byte_budget=1000 .*train_min=10000"):
        MemoryConfig(index_factory="PQ16", byte_budget=1000)
    with pytest.raises(ValueError, match="no field.*'colour'"):
        MemoryConfig.from_dict({"colour": "red"})
    cfg = MemoryConfig.from_dict(OmegaConf.to_container(OmegaConf.structured(MemoryConfig(dim=64))))  # type: ignore[arg-type]
    assert cfg.dim == 64 and MemoryConfig(index_factory="PQ32").bytes_hint == 32


def test_observe_query_short_and_long_term() -> None:
    mem = AgentMemory(MemoryConfig(dim=D, short_term_capacity=8, consolidate_to=4, node_distance=2.0))
    rng = np.random.default_rng(0)
    views = _unit(rng.standard_normal((50, D)))
    for i in range(50):
        meta = FrameMeta("r0", "task1" if i < 30 else "task2", i // 25, i, float(i), 0.0)
        node = mem.observe(views[i] * 3.0, meta)  # not unit: normalised on the way in
        assert node == mem.map.localise(float(i), 0.0)
        assert meta.node is None  # the caller's object is not modified
    s = mem.stats()
    assert s["frames_written"] == 50 and s["short_term_frames"] == 50 % 8
    assert s["frames_represented"] == 50 and s["long_term_records"] == (50 // 8) * 4
    latest = mem.query(views[49], k=1)[0]
    assert latest.id == 49 and latest.source == "short_term" and latest.score == pytest.approx(1.0)
    assert latest.meta.node is not None and latest.meta.x == 49.0
    hits = mem.query(views[:3], k=5, where=QueryFilter(task="task1"))
    assert len(hits) == 3 and all(len(r) == 5 and all(h.meta.task == "task1" for h in r) for r in hits)
    assert all(r == sorted(r, key=lambda h: -h.score) for r in hits)
    assert mem.query(views[49], k=3, include_short_term=False)[0].source == "long_term"
    assert [h.id for h in mem.query(views[49], k=5, where=QueryFilter(step_range=(48, 49)))] == [49, 48]
    assert mem.flush() == 1 and mem.stats()["short_term_frames"] == 0  # 2 frames at ratio 1/2
    assert mem.query(views[49], k=1)[0].source == "long_term"
    # nodes every 3 cells (0, 3, ..., 48); the segment change at step 30 (task2) starts a new node
    # without an edge from the previous one (breaks at 25 and 30; at 25 the node does not change)
    assert mem.stats()["nodes"] == 17 and mem.stats()["edges"] == 15
    with pytest.raises(ValueError, match="dim 32"):
        mem.query(np.ones(5), k=1)
    with pytest.raises(ValueError, match="32"):
        mem.observe(np.ones(5), FrameMeta("r", "t", 0, 0, 0.0, 0.0))


def test_thumbnails_kept_only_when_asked() -> None:
    img = np.random.default_rng(0).integers(0, 255, (64, 48, 3), dtype=np.uint8)
    v = _unit(np.ones(D))
    for keep in (False, True):
        mem = AgentMemory(
            MemoryConfig(dim=D, short_term_capacity=2, consolidate_to=1, keep_thumbnails=keep, thumbnail_size=16)
        )
        for i in range(3):
            mem.observe(v, FrameMeta("r", "t", 0, i, 0.0, 0.0, thumbnail=img))
        lt, st = mem.query(v, k=2)
        assert {lt.source, st.source} == {"long_term", "short_term"}
        for h in (lt, st):
            assert (h.meta.thumbnail is not None) == keep
            if keep:
                assert h.meta.thumbnail.shape == (16, 16, 3) and h.meta.thumbnail.dtype == np.uint8
        assert (mem.stats()["metadata_bytes"] > 16 * 16 * 3) == keep


def test_sleep_reset_and_least_used_hits() -> None:
    cfg = MemoryConfig(dim=D, short_term_capacity=4, consolidate_to=2, dedup_threshold=0.9, node_distance=100.0)
    mem = AgentMemory(cfg)
    v = _unit(np.ones(D))
    for i in range(10):
        mem.observe(v, FrameMeta("r", "t", 0, i, 0.0, 0.0))
    mem.query(v, k=1)
    rep = mem.sleep()
    assert rep["flushed"] == 1 and rep["records_after"] == 1
    assert mem.stats()["frames_represented"] == 10 and mem.stats()["sleeps"] == 1
    assert mem.query(v, k=1)[0].meta.count == 10 and mem.query(v, k=1)[0].meta.hits >= 1
    mem.reset()
    assert mem.stats()["frames_kept"] == 0 and len(mem.map) == 0 and mem.query(v, k=3) == []


def test_budget_with_pq_end_to_end() -> None:
    # The budget must hold train_min raw vectors for the cold start (40 x 128 bytes); once PQ8x4 is
    # trained the same budget holds 1280 codes of 4 bytes.
    cfg = MemoryConfig(dim=D, index_factory="PQ8x4", train_min=40, train_sample=80, byte_budget=40 * 4 * D)
    mem = AgentMemory(cfg)
    rng = np.random.default_rng(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(3000):
            mem.observe(rng.standard_normal(D), FrameMeta("r", "t", 0, i, float(i % 50), 0.0))
    s = mem.stats()
    assert s["trained"] and s["bytes_per_frame"] == 4 and s["code_bytes"] <= cfg.byte_budget
    assert s["long_term_records"] == 1280 and s["evicted"] == 3000 // 32 * 16 - 1280
    assert mem.store.meta.ids[0] > 0 and np.all(np.diff(mem.store.meta.ids) > 0)  # the oldest went


BAD_FIELDS: list[tuple[str, object]] = [
    ("run_id", None), ("run_id", 5), ("task", None), ("task", b"t"),
    ("episode", None), ("episode", -1), ("episode", 1.5), ("episode", True), ("episode", 2**40),
    ("step", None), ("step", -3), ("step", 2.0), ("step", "7"),
    ("x", None), ("x", float("nan")), ("x", float("inf")), ("x", "1"), ("y", float("-inf")),
    ("heading", 7), ("heading", -1), ("heading", None), ("heading", 1.0),
    ("node", -2), ("node", "n16"), ("node", 1.5),
    ("count", 0), ("count", None), ("step_min", None), ("step_min", 10**6), ("step_max", -1),
    ("hits", -1), ("hits", None),
    ("label", None), ("label", 3), ("salience", -0.1), ("salience", 1.5), ("salience", float("nan")),
    ("salience", "0.9"), ("salience", True), ("salience", 0.5),  # the last: a confidence in no label
    ("thumbnail", np.zeros((4, 4))), ("thumbnail", "img"), ("thumbnail", np.full((4, 4, 3), np.nan)),
]  # fmt: skip
"""(field, value) pairs FrameMeta must refuse."""


@pytest.mark.parametrize("field, value", [b for b in BAD_FIELDS if b != ("step_min", None)])  # None: "= step"
def test_frame_meta_refuses_bad_fields_by_name(field: str, value: object) -> None:
    kwargs: dict[str, object] = dict(run_id="r", task="t", episode=0, step=5, x=1.0, y=2.0)
    kwargs[field] = value
    with pytest.raises(ValueError, match=rf"FrameMeta\.{field} must be "):
        FrameMeta(**kwargs)  # type: ignore[arg-type]


def _memory_state(mem: AgentMemory) -> str:
    """Everything observe can change, as text."""
    arrays = mem.store.meta.to_arrays()
    return repr(
        (
            mem.stats(), mem.counters.next_id, mem.segment, mem.fifo.ids, [repr(m) for m in mem.fifo.metas],
            mem.fifo.vectors.tobytes(), {k: v.tobytes() for k, v in arrays.items()}, mem.map.to_json(),
            mem.map.prev, mem.store.faiss_ids().tolist(),
        )
    )  # fmt: skip


class MemoryMachine(RuleBasedStateMachine):
    """Valid writes interleaved with invalid ones (bad FrameMeta fields, bad embeddings): every
    invalid call raises a ValueError naming the field and leaves the memory exactly as it was, and
    the memory keeps working (observe, query, flush, sleep, save/load) afterwards."""

    @initialize(factory=st.sampled_from(["Flat", "SQ8"]), thumbs=st.booleans())
    def setup(self, factory: str, thumbs: bool) -> None:
        self.mem = AgentMemory(
            MemoryConfig(dim=8, short_term_capacity=6, consolidate_to=3, index_factory=factory, train_min=20,
                         train_sample=40, node_distance=2.0, keep_thumbnails=thumbs, thumbnail_size=4)
        )  # fmt: skip
        self.step = 0
        self.rng = np.random.default_rng(0)

    def _valid_meta(self, task: str, episode: int) -> FrameMeta:
        self.step += 1
        x, y = self.rng.integers(0, 9, 2)
        return FrameMeta("run", task, episode, self.step, float(x), float(y), int(self.step % 4),
                         thumbnail=np.full((6, 6, 3), self.step % 255, np.uint8))  # fmt: skip

    @rule(n=st.integers(1, 8), task=st.sampled_from(["a", "b"]), episode=st.integers(0, 2))
    def observe(self, n: int, task: str, episode: int) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(n):
                self.mem.observe(self.rng.standard_normal(8), self._valid_meta(task, episode))

    @rule(bad=st.sampled_from(BAD_FIELDS))
    def observe_bad_meta(self, bad: tuple[str, object]) -> None:
        field, value = bad
        meta = self._valid_meta("a", 0)
        setattr(meta, field, value)  # a caller mutating a checked record after construction
        before = _memory_state(self.mem)
        with pytest.raises(ValueError, match=rf"FrameMeta\.{field} must be "):
            self.mem.observe(self.rng.standard_normal(8), meta)
        assert _memory_state(self.mem) == before

    @rule(vec=st.sampled_from([np.full(8, np.nan), np.zeros(8), np.ones(5), np.array([np.inf] + [0.0] * 7), "x"]))
    def observe_bad_embedding(self, vec: object) -> None:
        before = _memory_state(self.mem)
        with pytest.raises(ValueError, match="embedding|could not convert"):
            self.mem.observe(vec, self._valid_meta("a", 0))  # type: ignore[arg-type]
        assert _memory_state(self.mem) == before

    @rule()
    def observe_not_a_meta(self) -> None:
        before = _memory_state(self.mem)
        with pytest.raises(ValueError, match="observe needs a FrameMeta"):
            self.mem.observe(np.ones(8), {"step": 1})  # type: ignore[arg-type]
        assert _memory_state(self.mem) == before

    @rule()
    def query(self) -> None:
        hits = self.mem.query(self.rng.standard_normal(8), k=3)
        assert len(hits) == min(3, len(self.mem.store) + len(self.mem.fifo))

    @rule()
    def flush_and_sleep(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.mem.sleep()

    @rule()
    def save_and_load(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            self.mem.save(d)
            back = AgentMemory.load(d)
        assert _memory_state(back) == _memory_state(self.mem)
        self.mem = back

    @invariant()
    def consistent(self) -> None:
        mem = self.mem
        assert np.array_equal(mem.store.faiss_ids(), mem.store.meta.ids)
        assert len(mem.fifo) < mem.config.short_term_capacity and mem.counters.next_id == mem.counters.frames_written


MemoryMachine.TestCase.settings = settings(
    max_examples=30, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_memory_state_machine = MemoryMachine.TestCase


def test_plain_frames_take_the_quick_check_and_agree_with_the_full_one() -> None:
    """What the agent writes every step (plain ints, floats, strs, no thumbnail) passes the quick
    check; numpy scalars and thumbnails take the field-by-field one, and every bad field above is
    refused either way (the test before)."""
    plain = FrameMeta("r", "t", 0, 5, 1.0, 2.0, heading=3, node=7, label="barrel", salience=1.0)
    assert plain._plainly_valid()
    for changes in ({"x": np.float32(1.0)}, {"step": np.int64(5)}, {"thumbnail": np.zeros((4, 4, 3), np.uint8)}):
        meta = plain.replace(**changes)
        assert not meta._plainly_valid()
        meta.validate()  # still valid, by the full check
    for field, value in BAD_FIELDS:
        kwargs: dict[str, object] = dict(run_id="r", task="t", episode=0, step=5, x=1.0, y=2.0)
        meta = FrameMeta(**kwargs)  # type: ignore[arg-type]
        setattr(meta, field, value)
        if (field, value) != ("step_min", None):
            assert not meta._plainly_valid()


def test_query_is_the_best_of_both_searches_long_term_first_on_ties() -> None:
    """A query returns the best ``k`` of the long-term store's and the FIFO's own searches (one
    stable sort over both lists, long-term first), counts a use for each hit returned, in either
    place, and reads their vectors back in the order of the hits."""
    mem = AgentMemory(MemoryConfig(dim=4, short_term_capacity=8, consolidate_to=4))
    vectors = np.eye(4, dtype=np.float32)
    for t in range(11):
        mem.observe(vectors[t % 4] + 0.01 * t, FrameMeta("r", "t", 0, t, float(t), 0.0))
    raw = np.array([[1.0, 0.5, 0.0, 0.0]], np.float32)
    q = raw / np.linalg.norm(raw, axis=1, keepdims=True)  # as the query normalises it
    both = mem.store.search(q, 5)[0] + mem.fifo.search(q, 5)[0]
    want = sorted(both, key=lambda h: -h.score)[:5]
    got = mem.query(raw[0], 5)
    assert [(h.id, h.source, h.score) for h in got] == [(h.id, h.source, h.score) for h in want]
    long_hits = {h.id for h in got if h.source == "long_term"}
    assert {int(i) for i, n in zip(mem.store.meta.ids, mem.store.meta.col("hits")) if n} == long_hits
    assert {i for i, m in zip(mem.fifo.ids, mem.fifo.metas) if m.hits} == {h.id for h in got} - long_hits
    np.testing.assert_array_equal(mem.hit_vectors(got), np.stack([mem.hit_vectors([h])[0] for h in got]))


def test_a_repeated_query_vector_is_normalised_once_and_answered_alike() -> None:
    """The last query's unit vector is kept for the same bytes: asking again answers as before,
    another vector is normalised afresh, and a bad one is still refused."""
    mem = AgentMemory(MemoryConfig(dim=4, short_term_capacity=4, consolidate_to=2))
    for t in range(6):
        mem.observe(np.eye(4, dtype=np.float32)[t % 4], FrameMeta("r", "t", 0, t, float(t), 0.0))
    q = np.array([2.0, 1.0, 0.0, 0.0], np.float32)
    first = [(h.id, h.score) for h in mem.query(q, 3, count_hits=False)]
    assert [(h.id, h.score) for h in mem.query(q.copy(), 3, count_hits=False)] == first
    assert mem.query(np.array([0.0, 0.0, 3.0, 0.0]), 1)[0].id == 2
    with pytest.raises(ValueError, match="queries must be non-zero vectors of dim 4"):
        mem.query(np.zeros(4), 1)
