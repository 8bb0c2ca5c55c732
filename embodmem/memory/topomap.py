"""Topological map of places, as in SPTM (Savinov et al., 2018) and MemoNav (Li et al., 2024).

Nodes are places; an edge joins two places the agent actually moved between. Each node keeps its
anchor pose (where it was created), a visit count and the running mean of the embeddings seen
there. The graph is a ``networkx.Graph`` (shortest paths, export); node poses and embeddings are
also kept in numpy arrays with a grid hash, so that localising a pose costs O(1) and localising an
embedding is one matrix-vector product, whatever the number of nodes.
"""

from __future__ import annotations

import base64
import json
import math
from typing import TypedDict

import networkx as nx
import numpy as np

NODE_RULES = ("pose", "embedding", "pose_or_embedding", "pose_and_embedding")


class MapNodeDocument(TypedDict):
    """One node of ``map.json``: its id (0..n-1 in order), mean pose in cells and visit count."""

    id: int
    x: float
    y: float
    visits: int


class MapDocument(TypedDict):
    """The layout of ``map.json`` (:meth:`TopologicalMap.to_json`, format ``embodmem.topomap`` 1)."""

    format: str
    version: int
    dim: int
    node_distance: float
    node_similarity: float
    node_rule: str
    prev: int | None
    nodes: list[MapNodeDocument]
    edges: list[tuple[int, int, float, int]]
    """``(u, v, weight in cells, traversals)``; JSON writes each as a list."""
    embedding_sums: str
    """Base64 of the nodes' embedding sums, little-endian float32, node-major."""


class TopologicalMap:
    """A graph of places built online from poses and (optionally) embeddings.

    Args:
        dim: Embedding dimension.
        node_distance: A pose farther than this (grid cells, Euclidean) from every node is a new
            place under the pose rules.
        node_similarity: An embedding whose cosine to the node aggregate is below this is a new
            place under the embedding rules.
        node_rule: When to create a node: ``"pose"`` (far from every node), ``"embedding"`` (unlike
            every node), ``"pose_or_embedding"`` (far, or unlike every nearby node: several views of
            one spot may become several nodes), ``"pose_and_embedding"`` (far and unlike every node:
            a familiar view far away closes a loop onto its node).

    Example:
        >>> m = TopologicalMap(dim=2, node_distance=2.0)
        >>> [m.observe(x, 0.0) for x in (0.0, 1.0, 3.0, 0.5)]
        [0, 0, 1, 0]
        >>> m.shortest_path(0, 1)
        [0, 1]
    """

    def __init__(
        self,
        dim: int = 128,
        node_distance: float = 3.0,
        node_similarity: float = 0.8,
        node_rule: str = "pose",
    ) -> None:
        if node_rule not in NODE_RULES:
            raise ValueError(f"node_rule must be one of {NODE_RULES}, got {node_rule!r}")
        if not node_distance > 0:
            raise ValueError(f"node_distance must be > 0, got {node_distance!r}")
        if not -1.0 <= node_similarity <= 1.0:
            raise ValueError(f"node_similarity must be in [-1, 1], got {node_similarity!r}")
        self.dim = int(dim)
        self.node_distance = float(node_distance)
        self.node_similarity = float(node_similarity)
        self.node_rule = node_rule
        self.reset()

    def reset(self) -> None:
        """Remove every node and edge."""
        self._graph: nx.Graph[int] = nx.Graph()
        self._dirty: set[int] = set()  # nodes whose "visits" attribute lags self._visits
        self._xs: list[float] = []  # anchor poses as Python floats: scalar maths on them is fast
        self._ys: list[float] = []
        self._n = 0
        self._pos = np.zeros((64, 2), dtype=np.float64)
        self._sum = np.zeros((64, self.dim), dtype=np.float32)
        self._agg = np.zeros((64, self.dim), dtype=np.float32)
        self._visits = np.zeros(64, dtype=np.int64)
        self._grid: dict[tuple[int, int], list[int]] = {}
        self._stale: set[int] = set()  # nodes whose row of self._agg lags their embedding sum
        self._last: tuple[float, float, int | None] | None = None  # the last localise's pose and answer
        self.prev: int | None = None

    def __len__(self) -> int:
        return self._n

    # ----------------------------------------------------------------------------- queries
    @property
    def graph(self) -> nx.Graph:
        """The networkx graph: nodes carry ``x``, ``y``, ``visits``; edges ``weight`` (Euclidean
        distance between the node poses) and ``traversals``."""
        for n in self._dirty:
            self._graph.nodes[n]["visits"] = int(self._visits[n])
        self._dirty.clear()
        return self._graph

    @property
    def positions(self) -> np.ndarray:
        """``(n, 2)`` node anchor poses (x, y)."""
        return self._pos[: self._n]

    @property
    def embeddings(self) -> np.ndarray:
        """``(n, dim)`` unit aggregate embeddings (zero rows for nodes whose embeddings sum to zero,
        or that saw none)."""
        self._settle()
        return self._agg[: self._n]

    def _settle(self) -> None:
        """Bring the stale rows of the aggregates up to date: folding an embedding in only adds it to
        the node's sum (every step), the unit aggregate is its direction, worked out when read."""
        for node in self._stale:
            s = self._sum[node]
            norm = math.sqrt(float(s @ s))
            if norm > 0:
                np.divide(s, norm, out=self._agg[node])
            else:
                self._agg[node] = 0.0
        self._stale.clear()

    @property
    def visits(self) -> np.ndarray:
        """Visit counts per node."""
        return self._visits[: self._n]

    def _cell(self, x: float, y: float) -> tuple[int, int]:
        return math.floor(x / self.node_distance), math.floor(y / self.node_distance)

    def _near(self, x: float, y: float) -> list[tuple[float, int]]:
        """``(squared distance, node)`` of the nodes within ``node_distance`` of (x, y)."""
        cx, cy = self._cell(x, y)
        lim = self.node_distance**2
        xs, ys, grid = self._xs, self._ys, self._grid
        out = []
        for gx in (cx - 1, cx, cx + 1):
            for gy in (cy - 1, cy, cy + 1):
                for i in grid.get((gx, gy), ()):
                    d2 = (xs[i] - x) ** 2 + (ys[i] - y) ** 2
                    if d2 <= lim:
                        out.append((d2, i))
        return out

    def localise(self, x: float, y: float) -> int | None:
        """The nearest node within ``node_distance`` of the pose (the lowest id on ties), or ``None``.

        It runs on every step, often at the pose of the step before (a turn on the spot): that
        answer is kept until a node is added."""
        x, y = float(x), float(y)
        last = self._last
        if last is not None and last[0] == x and last[1] == y:
            return last[2]
        cx, cy = self._cell(x, y)
        lim = self.node_distance**2
        xs, ys, grid = self._xs, self._ys, self._grid
        best: int | None = None
        best_d2 = math.inf
        for gx in (cx - 1, cx, cx + 1):
            for gy in (cy - 1, cy, cy + 1):
                for i in grid.get((gx, gy), ()):
                    d2 = (xs[i] - x) ** 2 + (ys[i] - y) ** 2
                    if d2 <= lim and (d2 < best_d2 or (d2 == best_d2 and i < best)):  # type: ignore[operator]
                        best, best_d2 = i, d2
        self._last = (x, y, best)
        return best

    def nearest_node(self, x: float, y: float) -> int | None:
        """The nearest node at any distance (``None`` for an empty map)."""
        if self._n == 0:
            return None
        near = self.localise(x, y)
        if near is not None:
            return near
        return int(np.argmin(((self.positions - (x, y)) ** 2).sum(axis=1)))

    def most_similar(self, vec: np.ndarray) -> tuple[int, float] | None:
        """``(node, cosine)`` of the node whose aggregate embedding best matches ``vec``."""
        if self._n == 0:
            return None
        sims = self.embeddings @ np.asarray(vec, dtype=np.float32)
        best = int(np.argmax(sims))
        return best, float(sims[best])

    def localise_embedding(self, vec: np.ndarray) -> int | None:
        """The most similar node if its cosine is at least ``node_similarity``, else ``None``."""
        best = self.most_similar(vec)
        return best[0] if best is not None and best[1] >= self.node_similarity else None

    def shortest_path(self, a: int, b: int) -> list[int]:
        """Nodes on the shortest path from ``a`` to ``b`` (edge weight: Euclidean distance).

        Raises:
            ValueError: naming the nodes when either is unknown or no path joins them.
        """
        for n in (a, b):
            if n not in self.graph:
                raise ValueError(f"unknown map node {n!r} (map has {self._n} nodes)")
        try:
            return [int(n) for n in nx.shortest_path(self.graph, a, b, weight="weight")]
        except nx.NetworkXNoPath:
            raise ValueError(f"no path between map nodes {a} and {b}") from None

    def path_length(self, path: list[int]) -> float:
        """Sum of edge weights along ``path``."""
        return float(nx.path_weight(self.graph, path, weight="weight")) if len(path) > 1 else 0.0

    # ----------------------------------------------------------------------------- updates
    def break_trajectory(self) -> None:
        """Forget the previous node, so the next observation adds no edge (new episode, teleport)."""
        self.prev = None

    def observe(self, x: float, y: float, embedding: np.ndarray | None = None) -> int:
        """Localise the agent (creating a node if the rule says so), link it to the previous node
        and fold ``embedding`` into the node's aggregate. Returns the node id."""
        x, y = float(x), float(y)
        e = None if embedding is None else np.asarray(embedding, dtype=np.float32)
        rule = self.node_rule
        if e is None and rule != "pose":
            raise ValueError(f"node_rule={rule!r} needs an embedding")
        node: int | None
        if rule == "pose":
            node = self.localise(x, y)
        elif rule == "embedding":
            node = self.localise_embedding(e)  # type: ignore[arg-type]
        elif rule == "pose_or_embedding":
            assert e is not None
            idx = np.asarray([i for _, i in self._near(x, y)], dtype=np.int64)
            node = None
            if len(idx):
                sims = self._agg[idx] @ e
                best = int(np.argmax(sims))
                if sims[best] >= self.node_similarity:
                    node = int(idx[best])
        else:  # pose_and_embedding
            node = self.localise(x, y)
            if node is None:
                node = self.localise_embedding(e)  # type: ignore[arg-type]
        if node is None:
            node = self._add_node(x, y)
        self._visits[node] += 1
        self._dirty.add(node)
        if e is not None:
            s = self._sum[node]
            s += e
            self._stale.add(node)
            if rule != "pose":  # the embedding rules read the aggregates at the next step
                self._settle()
        if self.prev is not None and self.prev != node:
            self._link(self.prev, node)
        self.prev = node
        return node

    def _add_node(self, x: float, y: float) -> int:
        n = self._n
        if n == len(self._pos):
            self._pos = np.concatenate([self._pos, np.zeros_like(self._pos)])
            self._sum = np.concatenate([self._sum, np.zeros_like(self._sum)])
            self._agg = np.concatenate([self._agg, np.zeros_like(self._agg)])
            self._visits = np.concatenate([self._visits, np.zeros_like(self._visits)])
        self._pos[n] = (x, y)
        self._xs.append(x)
        self._ys.append(y)
        self._grid.setdefault(self._cell(x, y), []).append(n)
        self._last = None
        self._graph.add_node(n, x=x, y=y, visits=0)
        self._n += 1
        return n

    def _link(self, a: int, b: int) -> None:
        adj = self._graph._adj[a]  # type: ignore[attr-defined]  # direct adjacency access: this runs on every step
        if b in adj:
            adj[b]["traversals"] += 1
        else:
            w = math.hypot(self._xs[a] - self._xs[b], self._ys[a] - self._ys[b])
            self._graph.add_edge(a, b, weight=w, traversals=1)

    # ----------------------------------------------------------------------------- export
    def to_json(self) -> str:
        """JSON text with the settings, nodes (pose, visits), edges and embedding sums (base64
        float32, so a round trip is exact)."""
        obj: MapDocument = {
            "format": "embodmem.topomap",
            "version": 1,
            "dim": self.dim,
            "node_distance": self.node_distance,
            "node_similarity": self.node_similarity,
            "node_rule": self.node_rule,
            "prev": self.prev,
            "nodes": [
                MapNodeDocument(id=i, x=float(p[0]), y=float(p[1]), visits=int(v))
                for i, (p, v) in enumerate(zip(self.positions, self.visits))
            ],
            "edges": [
                (int(u), int(v), float(d["weight"]), int(d["traversals"])) for u, v, d in self.graph.edges(data=True)
            ],
            "embedding_sums": base64.b64encode(
                np.ascontiguousarray(self._sum[: self._n], dtype="<f4").tobytes()
            ).decode("ascii"),
        }
        return json.dumps(obj)

    @classmethod
    def from_json(cls, text: str) -> TopologicalMap:
        """Inverse of :meth:`to_json`.

        Raises:
            ValueError: when the text is not a topological map of this format.
        """
        obj = json.loads(text)
        if not isinstance(obj, dict) or obj.get("format") != "embodmem.topomap" or obj.get("version") != 1:
            raise ValueError("not an embodmem.topomap version 1 document")
        m = cls(obj["dim"], obj["node_distance"], obj["node_similarity"], obj["node_rule"])
        sums = np.frombuffer(base64.b64decode(obj["embedding_sums"]), dtype="<f4")
        n = len(obj["nodes"])
        if sums.size != n * m.dim:
            raise ValueError(f"embedding sums hold {sums.size} floats, expected {n} x {m.dim}")
        sums = sums.reshape(n, m.dim)
        for i, node in enumerate(obj["nodes"]):
            if node["id"] != i:
                raise ValueError(f"node ids must be 0..n-1 in order, got {node['id']} at {i}")
            m._add_node(node["x"], node["y"])
            m._visits[i] = node["visits"]
            m._dirty.add(i)
            m._sum[i] = sums[i]
            norm = float(np.linalg.norm(sums[i]))
            if norm > 0:
                m._agg[i] = sums[i] / norm
        for u, v, w, t in obj["edges"]:
            m._graph.add_edge(u, v, weight=w, traversals=t)
        m.prev = obj["prev"]
        return m

    def draw(
        self,
        image: np.ndarray,
        cell_px: int,
        current: int | None = None,
        node_color: tuple[int, int, int] = (255, 210, 0),
        edge_color: tuple[int, int, int] = (230, 230, 230),
        current_color: tuple[int, int, int] = (255, 40, 40),
    ) -> np.ndarray:
        """Draw the map onto a copy of a top-down image (RGB) whose grid cells are ``cell_px``
        pixels wide: edges as lines, nodes as circles, the ``current`` node larger and red."""
        import cv2

        img = np.ascontiguousarray(image, dtype=np.uint8).copy()
        if img.ndim != 3 or img.shape[2] != 3:
            raise ValueError(f"image must be HxWx3, got shape {img.shape}")
        pix = np.rint((self.positions + 0.5) * cell_px).astype(np.int64)
        r = max(2, cell_px // 4)
        for u, v in self.graph.edges():
            cv2.line(
                img,
                tuple(map(int, pix[u])),
                tuple(map(int, pix[v])),
                edge_color,
                max(1, cell_px // 10),
                cv2.LINE_AA,
            )
        for p in pix:
            cv2.circle(img, tuple(map(int, p)), r, node_color, -1, cv2.LINE_AA)
        if current is not None and 0 <= current < self._n:
            cv2.circle(img, tuple(map(int, pix[current])), r + max(1, r // 2), current_color, -1, cv2.LINE_AA)
        return img
