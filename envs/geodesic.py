"""Geodesic distance over a grid of free cells: shared by the world generator, the env's measures and
the agents' planners.

It knows nothing of a world: it takes a mask of free cells and a mask of sources, so an agent may
import it (over the map it built) without touching the world generator (:mod:`embodmem.envs.spec`).
"""

from __future__ import annotations

import numpy as np


def bfs_distance(free: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """Geodesic distance in cells (4-connected) from the ``sources`` mask over ``free`` cells.

    Unreachable cells get ``inf``. Vectorised wavefront: each sweep expands the whole frontier at
    once, so a 128x128 world takes a few milliseconds.
    """
    dist = np.full(free.shape, np.inf, dtype=np.float32)
    frontier = sources & free
    dist[frontier] = 0.0
    visited = frontier.copy()
    d = 0
    while frontier.any():
        d += 1
        grown = np.zeros_like(frontier)
        grown[1:, :] |= frontier[:-1, :]
        grown[:-1, :] |= frontier[1:, :]
        grown[:, 1:] |= frontier[:, :-1]
        grown[:, :-1] |= frontier[:, 1:]
        frontier = grown & free & ~visited
        visited |= frontier
        dist[frontier] = d
    return dist
