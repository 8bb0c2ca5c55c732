"""Geodesic distance over a grid of free cells: shared by the world generator, the env's measures and
the agents' planners.

It knows nothing of a world: it takes a mask of free cells and a mask of sources, so an agent may
import it (over the map it built) without touching the world generator (:mod:`embodmem.envs.spec`).
"""

from __future__ import annotations

import numpy as np

from embodmem.envs.jit import njit_on_first_call


def bfs_distance(
    free: np.ndarray, sources: np.ndarray, stop: np.ndarray | None = None, beside: bool = False
) -> np.ndarray:
    """Geodesic distance in cells (4-connected) from the ``sources`` mask over ``free`` cells.

    Unreachable cells get ``inf``. A breadth-first search compiled with Numba, level by level. With
    ``stop``, the search ends at the first level by which it has reached every cell of that mask
    (``beside``: reached it or one of its four neighbours); cells it has not reached stay ``inf``,
    being farther than every reached one. A planner descending from a cell, or a ranking that reads
    a few cells, needs no more, and nearby goals then cost a few levels, not the whole map.

    >>> free = np.ones((1, 6), bool)
    >>> sources = np.zeros((1, 6), bool); sources[0, 0] = True
    >>> stop = np.zeros((1, 6), bool); stop[0, 2] = True
    >>> bfs_distance(free, sources).tolist(), bfs_distance(free, sources, stop).tolist()
    ([[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]], [[0.0, 1.0, 2.0, inf, inf, inf]])
    """
    free = np.ascontiguousarray(free, dtype=np.bool_)
    sources = np.ascontiguousarray(sources, dtype=np.bool_)
    if stop is None:
        return _bfs(free, sources, np.zeros((0, 0), dtype=np.bool_), False, False)
    return _bfs(free, sources, np.ascontiguousarray(stop, dtype=np.bool_), True, beside)


@njit_on_first_call(cache=True, nogil=True)
def _bfs(free: np.ndarray, sources: np.ndarray, stop: np.ndarray, has_stop: bool, beside: bool) -> np.ndarray:
    """:func:`bfs_distance` with a queue: each level is the cells first reached from the last."""
    height, width = free.shape
    dist = np.full((height, width), np.inf, dtype=np.float32)
    queue = np.empty(height * width, dtype=np.int64)
    tail = 0
    pending = stop.copy()
    left = int(pending.sum()) if has_stop else 0
    steps = ((0, 1), (0, -1), (1, 0), (-1, 0))
    for y in range(height):
        for x in range(width):
            if sources[y, x] and free[y, x]:
                dist[y, x] = 0.0
                queue[tail] = y * width + x
                tail += 1
    head = 0
    level = 0
    settled_up_to = 0  # queue entries whose stop cells are accounted for
    while head < tail:
        if has_stop:
            for i in range(settled_up_to, tail):
                y, x = queue[i] // width, queue[i] % width
                if pending[y, x]:
                    pending[y, x] = False
                    left -= 1
                if beside:
                    for dy, dx in steps:
                        ny, nx = y + dy, x + dx
                        if 0 <= ny < height and 0 <= nx < width and pending[ny, nx]:
                            pending[ny, nx] = False
                            left -= 1
            settled_up_to = tail
            if left == 0:
                break
        level += 1
        end = tail
        while head < end:
            y, x = queue[head] // width, queue[head] % width
            head += 1
            for dy, dx in steps:
                ny, nx = y + dy, x + dx
                if 0 <= ny < height and 0 <= nx < width and free[ny, nx] and dist[ny, nx] == np.inf:
                    dist[ny, nx] = level
                    queue[tail] = ny * width + nx
                    tail += 1
    return dist
