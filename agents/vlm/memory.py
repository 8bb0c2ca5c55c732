"""What the VLM policy reads from memory, and how a retrieved frame is placed relative to the agent.

The memory and the embedder are written elsewhere (``embodmem.memory``, ``embodmem.embedding``);
these Protocols state the little the policy relies on, so any object with the same shape works
(a test double, a user's own memory module).

Example:
    >>> from types import SimpleNamespace as NS
    >>> hit = NS(score=0.8, meta=NS(x=4.0, y=0.0, node=2, thumbnail=None))
    >>> item = place_hit(hit, pose=(0.0, 0.0, 0.0), cell_size_m=2.0)
    >>> item.node, item.distance_m, item.bearing_deg
    (2, 8.0, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from embodmem.agents.base import Embedder

__all__ = ["Embedder", "MemoryItem", "QueryableMemory", "retrieve"]

HEADING_NAMES = ("east", "south", "west", "north")
"""Heading index -> compass name (MiniGrid convention, ``embodmem.envs.spec.DIR_TO_VEC``)."""


class HitMeta(Protocol):
    """Metadata of a memory hit: where the frame was seen and which map node it belongs to."""

    x: float
    y: float
    node: int | None
    thumbnail: np.ndarray | None


class MemoryHit(Protocol):
    score: float
    meta: HitMeta


@runtime_checkable
class QueryableMemory(Protocol):
    """Anything that answers ``query(vec, k)`` with hits, best first (e.g. ``AgentMemory``)."""

    def query(self, vec: np.ndarray, k: int) -> Sequence[Any]: ...


@dataclass
class MemoryItem:
    """A retrieved frame as the prompt shows it.

    Attributes:
        node: topological-map node id (``None`` when the frame has none).
        score: retrieval similarity.
        x, y: where it was seen, in cells.
        distance_m: straight-line distance from the agent.
        bearing_deg: direction relative to the agent's heading, -180..180, positive = to the right.
        thumbnail: the stored frame, if any.
        heading, task, step: optional metadata, passed through to the agent trace.
    """

    node: int | None
    score: float
    x: float
    y: float
    distance_m: float
    bearing_deg: float
    thumbnail: np.ndarray | None = None
    heading: float = 0.0
    task: str = ""
    step: int = -1


def place_hit(hit: Any, pose: Sequence[float] | np.ndarray, cell_size_m: float) -> MemoryItem:
    """Turn a memory hit into a :class:`MemoryItem` relative to ``pose`` = (x, y, heading index)."""
    meta = hit.meta
    x, y = float(meta.x), float(meta.y)
    dx, dy = x - float(pose[0]), y - float(pose[1])
    # Grid y points south, so atan2(dy, dx) grows clockwise, like the heading index * 90 degrees.
    bearing = math.degrees(math.atan2(dy, dx)) - float(pose[2]) * 90.0 if (dx or dy) else 0.0
    bearing = (bearing + 180.0) % 360.0 - 180.0
    node = getattr(meta, "node", None)
    return MemoryItem(
        node=None if node is None else int(node),
        score=float(hit.score),
        x=x,
        y=y,
        distance_m=math.hypot(dx, dy) * cell_size_m,
        bearing_deg=bearing,
        thumbnail=getattr(meta, "thumbnail", None),
        heading=float(getattr(meta, "heading", 0.0) or 0.0),
        task=str(getattr(meta, "task", "") or ""),
        step=int(getattr(meta, "step", -1) if getattr(meta, "step", None) is not None else -1),
    )


def retrieve(
    memory: QueryableMemory, query_vec: np.ndarray, k: int, pose: Sequence[float] | np.ndarray, cell_size_m: float
) -> list[MemoryItem]:
    """Top-``k`` memory frames for ``query_vec`` (the mission's text embedding), placed around the agent."""
    if k <= 0:
        return []
    hits = memory.query(np.asarray(query_vec, dtype=np.float32), k)
    return [place_hit(hit, pose, cell_size_m) for hit in list(hits)[:k]]
