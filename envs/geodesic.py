"""Geodesic distance over a grid of free cells: shared by the world generator, the env's measures and
the agents' planners.

It knows nothing of a world: it takes a mask of free cells and a mask of sources, so an agent may
import it (over the map it built) without touching the world generator (:mod:`embodmem.envs.spec`).
"""

from __future__ import annotations

import numpy as np


def bfs_distance(
    free: np.ndarray, sources: np.ndarray, stop: np.ndarray | None = None, beside: bool = False
) -> np.ndarray:
    """Geodesic distance in cells (4-connected) from the ``sources`` mask over ``free`` cells.

    Unreachable cells get ``inf``. Vectorised wavefront: each sweep expands the whole frontier at
    once, so a 128x128 world takes a few milliseconds. With ``stop``, the wavefront ends once it has
    reached every cell of that mask (``beside``: reached it or one of its four neighbours); cells it
    has not reached stay ``inf``, being farther than every reached one. A planner descending from a
    cell, or a ranking that reads a few cells, needs no more, and nearby goals then cost a few
    sweeps, not the whole map.

    >>> free = np.ones((1, 6), bool)
    >>> sources = np.zeros((1, 6), bool); sources[0, 0] = True
    >>> stop = np.zeros((1, 6), bool); stop[0, 2] = True
    >>> bfs_distance(free, sources).tolist(), bfs_distance(free, sources, stop).tolist()
    ([[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]], [[0.0, 1.0, 2.0, inf, inf, inf]])
    """
    dist = np.full(free.shape, np.inf, dtype=np.float32)
    frontier = sources & free
    dist[frontier] = 0.0
    visited = frontier.copy()
    pending = None if stop is None else stop.copy()
    d = 0
    while frontier.any():
        if pending is not None:
            # beside: a stop cell is settled once it or a neighbour is reached (anything later is farther)
            pending &= ~(visited | neighbours(visited)) if beside else ~visited
            if not pending.any():
                break
        d += 1
        frontier = neighbours(frontier) & free & ~visited
        visited |= frontier
        dist[frontier] = d
    return dist


def neighbours(mask: np.ndarray) -> np.ndarray:
    """Cells 4-adjacent to a cell of ``mask`` (one wavefront sweep)."""
    grown = np.zeros_like(mask)
    grown[1:, :] |= mask[:-1, :]
    grown[:-1, :] |= mask[1:, :]
    grown[:, 1:] |= mask[:, :-1]
    grown[:, :-1] |= mask[:, 1:]
    return grown
