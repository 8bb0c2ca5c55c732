"""What the VLM policy reads from memory, and where a retrieved frame lies relative to the agent.

The memory and the embedder are written elsewhere (``embodmem.memory``, ``embodmem.embedding``);
these Protocols state the little the policy relies on (a test double or a user's own memory module
returns real :class:`embodmem.memory.Hit`). What is retrieved is a :class:`embodmem.retrieval.Retrieval`,
the type the trace, the episode log and the video use too; the prompt places it around the agent.

Example:
    >>> r = Retrieval(0.8, 2, (4.0, 0.0, 0), "wreck", 5)
    >>> placement(r, pose=(0.0, 0.0, 0.0), cell_size_m=2.0)  # 8 m away, straight ahead
    (8.0, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from embodmem.agents.base import Embedder
from embodmem.retrieval import Retrieval

__all__ = ["Embedder", "QueryableMemory", "placement", "retrieve"]
HEADING_NAMES = ("east", "south", "west", "north")
"""Heading index -> compass name (MiniGrid convention, ``embodmem.envs.spec.DIR_TO_VEC``)."""


@runtime_checkable
class QueryableMemory(Protocol):
    """Anything that answers ``query(vec, k)`` with :class:`embodmem.memory.Hit`, best first (e.g. ``AgentMemory``)."""

    def query(self, vec: np.ndarray, k: int) -> Sequence[Any]: ...


def placement(retrieval: Retrieval, pose: Sequence[float] | np.ndarray, cell_size_m: float) -> tuple[float, float]:
    """``(distance_m, bearing_deg)`` of a retrieved frame from ``pose`` = (x, y, heading index): the
    straight-line distance, and the direction relative to the heading, -180..180, positive = right."""
    x, y = float(retrieval.pose[0]), float(retrieval.pose[1])
    dx, dy = x - float(pose[0]), y - float(pose[1])
    # Grid y points south, so atan2(dy, dx) grows clockwise, like the heading index * 90 degrees.
    bearing = math.degrees(math.atan2(dy, dx)) - float(pose[2]) * 90.0 if (dx or dy) else 0.0
    return math.hypot(dx, dy) * cell_size_m, (bearing + 180.0) % 360.0 - 180.0


def retrieve(memory: QueryableMemory, query_vec: np.ndarray, k: int) -> list[Retrieval]:
    """Top-``k`` memory frames for ``query_vec`` (the mission's text embedding), best first."""
    if k <= 0:
        return []
    hits = memory.query(np.asarray(query_vec, dtype=np.float32), k)
    return [Retrieval.from_hit(hit) for hit in list(hits)[:k]]
