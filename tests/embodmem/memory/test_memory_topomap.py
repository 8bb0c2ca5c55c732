"""Topological map: node creation, edges, localisation, paths, JSON, drawing, speed."""

from __future__ import annotations

import numpy as np
import pytest

from embodmem.memory import TopologicalMap


def _e(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_pose_nodes_and_edges() -> None:
    m = TopologicalMap(dim=2, node_distance=2.0)
    walk = [(0, 0), (1, 0), (2.5, 0), (3, 0), (5, 0), (3, 0.5), (0.5, 0)]
    nodes = [m.observe(x, y, _e(1, 0)) for x, y in walk]
    assert nodes == [0, 0, 1, 1, 2, 1, 0]
    assert sorted(m.graph.edges()) == [(0, 1), (1, 2)]
    assert m.graph.edges[0, 1]["traversals"] == 2 and m.graph.edges[0, 1]["weight"] == pytest.approx(2.5)
    assert m.visits.tolist() == [3, 3, 1] and m.graph.nodes[1]["visits"] == 3
    assert m.localise(4.6, 0) == 2 and m.localise(10, 10) is None
    assert m.nearest_node(10, 10) == 2 and TopologicalMap(dim=2).nearest_node(0, 0) is None


def test_break_trajectory_adds_no_edge() -> None:
    m = TopologicalMap(dim=2, node_distance=1.0)
    m.observe(0, 0, _e(1, 0))
    m.break_trajectory()
    m.observe(5, 5, _e(1, 0))
    assert m.graph.number_of_edges() == 0 and len(m) == 2


def test_embedding_aggregate_and_rules() -> None:
    m = TopologicalMap(dim=2, node_distance=2.0, node_similarity=0.9, node_rule="embedding")
    assert m.observe(0, 0, _e(1, 0)) == 0
    assert m.observe(9, 9, _e(1, 0.1)) == 0  # same view far away: same place under "embedding"
    assert m.observe(0, 0, _e(0, 1)) == 1
    np.testing.assert_allclose(m.embeddings[0], _e(1 + 1 / np.sqrt(1.01), 0.1 / np.sqrt(1.01)), rtol=1e-5)
    assert m.localise_embedding(_e(0.1, 1)) == 1 and m.localise_embedding(_e(1, -1)) is None
    both = TopologicalMap(dim=2, node_distance=2.0, node_similarity=0.9, node_rule="pose_or_embedding")
    assert [
        both.observe(0, 0, _e(1, 0)),
        both.observe(0.5, 0, _e(0, 1)),
        both.observe(1, 0, _e(1, 0.05)),
    ] == [0, 1, 0]
    closure = TopologicalMap(dim=2, node_distance=2.0, node_similarity=0.9, node_rule="pose_and_embedding")
    got = [closure.observe(x, 0, e) for x, e in [(0, _e(1, 0)), (5, _e(0, 1)), (10, _e(1, 0.02))]]
    assert got == [0, 1, 0]  # a familiar view far away closes the loop onto node 0
    with pytest.raises(ValueError, match="needs an embedding"):
        closure.observe(0, 0)
    with pytest.raises(ValueError, match="node_rule"):
        TopologicalMap(node_rule="teleport")


def test_shortest_path_uses_distances() -> None:
    m = TopologicalMap(dim=2, node_distance=0.5)
    # a square 0-1-2-3 walked around, plus a long detour 0 -> 4 -> 2
    for x, y in [(0, 0), (1, 0), (1, 1), (0, 1), (0, 0)]:
        m.observe(x, y, _e(1, 0))
    m.break_trajectory()
    for x, y in [(0, 0), (3, 3), (1, 1)]:
        m.observe(x, y, _e(1, 0))
    assert m.shortest_path(0, 2) in ([0, 1, 2], [0, 3, 2])
    assert m.path_length(m.shortest_path(0, 2)) == pytest.approx(2.0)
    m.observe(20, 20, _e(1, 0))
    m.break_trajectory()
    m.observe(40, 40, _e(1, 0))
    with pytest.raises(ValueError, match="no path"):
        m.shortest_path(0, len(m) - 1)
    with pytest.raises(ValueError, match="unknown map node 99"):
        m.shortest_path(0, 99)


def test_json_round_trip() -> None:
    rng = np.random.default_rng(0)
    m = TopologicalMap(dim=8, node_distance=1.5, node_similarity=0.5, node_rule="pose_or_embedding")
    for _ in range(200):
        v = rng.standard_normal(8).astype(np.float32)
        m.observe(float(rng.integers(0, 10)), float(rng.integers(0, 10)), v / np.linalg.norm(v))
    m2 = TopologicalMap.from_json(m.to_json())
    assert m2.to_json() == m.to_json()
    np.testing.assert_array_equal(m2.embeddings, m.embeddings)
    assert sorted(m2.graph.edges(data=True)) == sorted(m.graph.edges(data=True))
    assert dict(m2.graph.nodes(data=True)) == dict(m.graph.nodes(data=True))
    q = rng.standard_normal(8).astype(np.float32)
    assert m2.most_similar(q) == m.most_similar(q) and m2.localise(3.2, 4.1) == m.localise(3.2, 4.1)
    v = np.ones(8, np.float32) / np.sqrt(8)
    assert m2.observe(5.0, 5.0, v) == m.observe(5.0, 5.0, v)  # continues identically
    with pytest.raises(ValueError, match="topomap"):
        TopologicalMap.from_json('{"format": "something else"}')


def test_draw_changes_pixels_not_input() -> None:
    m = TopologicalMap(dim=2, node_distance=1.0)
    for x in range(6):
        m.observe(x * 2.0, 3.0, _e(1, 0))
    img = np.zeros((64, 128, 3), dtype=np.uint8)
    out = m.draw(img, cell_px=8, current=2)
    assert out.shape == img.shape and out.dtype == np.uint8
    assert (out != 0).any() and not img.any()
    cx, cy = int(round((2 * 2 + 0.5) * 8)), int(round((3 + 0.5) * 8))
    assert tuple(out[cy, cx]) == (255, 40, 40)  # the current node is red
    assert tuple(out[cy, int(round((0 + 0.5) * 8))]) == (255, 210, 0)  # other nodes yellow


def test_observe_at_1000_nodes_localises_without_new_nodes() -> None:
    """Walking among 1000 nodes adds none (how fast it is: benchmarks/bench_memory.py)."""
    rng = np.random.default_rng(0)
    m = TopologicalMap(dim=128, node_distance=1.0, node_rule="pose")
    xs = np.stack(np.meshgrid(np.arange(0, 64, 2.0), np.arange(0, 64, 2.0)), -1).reshape(-1, 2)[:1000]
    e = rng.standard_normal((1000, 128)).astype(np.float32)
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    for (x, y), v in zip(xs, e):
        m.observe(x, y, v)
    assert len(m) == 1000
    walk = xs[rng.integers(0, 1000, 2000)] + rng.uniform(-0.4, 0.4, (2000, 2))
    for (x, y), v in zip(walk, e[rng.integers(0, 1000, 2000)]):
        m.observe(x, y, v)
    assert len(m) == 1000
    emb = TopologicalMap(dim=128, node_distance=1.0, node_similarity=2 / 3, node_rule="embedding")
    for (x, y), v in zip(xs, e):
        emb.observe(x, y, v)
    nodes = len(emb)
    for v in e[:500]:  # views seen before: each matches its own node
        emb.observe(0.0, 0.0, v)
    assert len(emb) == nodes


def test_localise_answers_again_after_a_node_is_added_and_aggregates_follow_the_sums() -> None:
    """``localise`` keeps its last answer for the same pose only until a node is added; the pose
    rule works out the unit aggregates when they are read, as the direction of each node's sum
    (zero for a sum of zero)."""
    m = TopologicalMap(dim=2, node_distance=2.0)
    m.observe(0, 0, _e(1, 0))
    assert m.localise(4, 0) is None and m.localise(4, 0) is None
    assert m.observe(4, 0, _e(0, 1)) == 1 and m.localise(4, 0) == 1
    assert m.localise(2, 0) == 0  # equidistant: the lower id
    m.observe(0.5, 0, _e(1, 1))
    m.observe(4, 0.5, -_e(0, 1))
    expected = np.stack([_e(1, 0) + _e(1, 1), np.zeros(2, np.float32)])
    expected[0] /= np.float32(np.sqrt(float(expected[0] @ expected[0])))
    assert m.embeddings.tolist() == expected.tolist()
    assert m.most_similar(_e(1, 0.4))[0] == 0
