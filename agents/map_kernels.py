"""The occupancy grid's per-scan loops, compiled with Numba: folding a sonar scan into the grid, and
scoring how well a scan fits the map at candidate cells (scan matching).

Both walk the beams sample by sample and stop where a beam stops mattering, which numpy cannot do
without computing every sample of every beam. The arithmetic is the numpy model's, operation for
operation (``floor(x + dx)`` in float64, integer votes and counts), so the results are equal bit for
bit (``tests/agents/test_mapping.py`` holds the plain numpy versions they are checked against).
Compiled on first use and cached on disk (Numba's cache; ``NUMBA_CACHE_DIR`` moves it).
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _first_at_or_after(t: np.ndarray, value: float) -> int:
    """``np.searchsorted(t, value)`` (side ``left``) for an increasing ``t``."""
    lo, hi = 0, len(t)
    while lo < hi:
        mid = (lo + hi) // 2
        if t[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def fold_scan(
    evidence: np.ndarray,
    occupied: np.ndarray,
    free: np.ndarray,
    x: float,
    y: float,
    dx: np.ndarray,
    dy: np.ndarray,
    t: np.ndarray,
    readings: np.ndarray,
    cell_size: float,
    max_range: float,
) -> None:
    """Fold one scan at (x, y) into the grid's arrays, in place (:meth:`OccupancyGrid.update`).

    ``dx``, ``dy``: (beams, samples) offsets of the beam samples from the cell's corner for the
    scan's heading; ``t``: the samples' distances (cells); ``readings``: the ranges (metres, each
    divided by ``cell_size`` in float64, as numpy would, into cells). Each cell in
    the window the samples cover gets -1 per beam that passed through it and +2 per echo from it,
    clipped to +-8 a scan; evidence stays in [-20, 100]; a cell is occupied while its evidence is
    positive, and free cells that became occupied are free no more.
    """
    n = evidence.shape[0]
    beams, samples = dx.shape
    r = np.empty(len(readings), dtype=np.float64)
    for b in range(len(readings)):
        r[b] = np.float64(readings[b]) / cell_size
    x0, x1, y0, y1 = n, -1, n, -1
    for b in range(beams):
        for s in (0, samples - 1):  # along a beam the cells move one way: its ends bound the window
            px = int(math.floor(x + dx[b, s]))
            py = int(math.floor(y + dy[b, s]))
            x0, x1, y0, y1 = min(x0, px), max(x1, px), min(y0, py), max(y1, py)
    x0, x1 = max(x0, 0), min(x1 + 1, n)
    y0, y1 = max(y0, 0), min(y1 + 1, n)
    if x0 < x1 and y0 < y1:
        votes = np.zeros((y1 - y0, x1 - x0), dtype=np.int64)
        for b in range(beams):
            for s in range(samples):
                if not t[s] < r[b] - 0.1:
                    break
                px = int(math.floor(x + dx[b, s]))
                py = int(math.floor(y + dy[b, s]))
                if 0 <= px < n and 0 <= py < n:
                    votes[py - y0, px - x0] -= 1
                    free[py, px] = True
            if r[b] < max_range - 1e-3:
                j = min(_first_at_or_after(t, r[b] + 0.05), samples - 1)
                px = int(math.floor(x + dx[b, j]))
                py = int(math.floor(y + dy[b, j]))
                if 0 <= px < n and 0 <= py < n:
                    votes[py - y0, px - x0] += 2
        for gy in range(y0, y1):
            for gx in range(x0, x1):
                e = int(evidence[gy, gx]) + min(max(votes[gy - y0, gx - x0], -8), 8)
                e = min(max(e, -20), 100)
                evidence[gy, gx] = e
                occupied[gy, gx] = e > 0
                if e > 0:
                    free[gy, gx] = False
    xi, yi = int(x), int(y)
    if 0 <= x < n and 0 <= y < n:
        evidence[yi, xi] = min(evidence[yi, xi], -1)
        free[yi, xi] = True
        occupied[yi, xi] = False


@numba.njit(cache=True, nogil=True)
def fit_scan(
    evidence: np.ndarray,
    occupied: np.ndarray,
    cells: np.ndarray,
    dx: np.ndarray,
    dy: np.ndarray,
    t: np.ndarray,
    r: np.ndarray,
    max_range: float,
    established: int,
) -> np.ndarray:
    """Per candidate cell ((K, 2) x, y), the fit of a scan taken there (:meth:`OccupancyGrid.scan_fit`):
    +1 per echo within half a cell of an established obstacle, -1 per echoing beam that passes
    through one more than a cell before its echo, -0.5 per such beam without an echo; -inf for a
    cell outside the map or known to be occupied."""
    n = evidence.shape[0]
    beams, samples = dx.shape
    scores = np.empty(len(cells), dtype=np.float64)
    for k in range(len(cells)):
        cx, cy = cells[k, 0], cells[k, 1]
        if not (0 <= cx < n and 0 <= cy < n) or occupied[cy, cx]:
            scores[k] = -np.inf
            continue
        hits, blocked_echo, blocked_silent = 0, 0, 0
        for b in range(beams):
            echo = r[b] < max_range - 1e-3
            blocked = False
            s = 0
            while s < samples and t[s] < r[b] - 1.0:  # the stretch before the echo: passed through?
                px = int(math.floor(cx + dx[b, s]))
                py = int(math.floor(cy + dy[b, s]))
                if 0 <= px < n and 0 <= py < n and evidence[py, px] >= established:
                    blocked = True
                    break
                s += 1
            if blocked:
                if echo:
                    blocked_echo += 1
                else:
                    blocked_silent += 1
            if not echo:
                continue
            while s < samples and t[s] <= r[b] + 0.5:  # the cell around the echo (after the stretch)
                if abs(t[s] - r[b]) <= 0.5:
                    px = int(math.floor(cx + dx[b, s]))
                    py = int(math.floor(cy + dy[b, s]))
                    if 0 <= px < n and 0 <= py < n and evidence[py, px] >= established:
                        hits += 1
                        break
                s += 1
        scores[k] = (hits - blocked_echo) - 0.5 * blocked_silent
    return scores


@numba.njit(cache=True, nogil=True)
def mark_in_view(
    targets: np.ndarray,
    occupied: np.ndarray,
    x: float,
    y: float,
    along_x: np.ndarray,
    along_y: np.ndarray,
    prefix: np.ndarray,
) -> None:
    """Set ``targets[k]`` ((K, n, n) bool) at the cells a camera at (x, y) sees along each ray,
    among the first ``prefix[k]`` samples: ``along_x``, ``along_y`` are the rays' (rays, samples)
    offsets from the cell centre; a ray sees up to and including the first occupied cell it meets
    inside the map (:meth:`OccupancyGrid.look_by_kind`)."""
    n = occupied.shape[0]
    rays, samples = along_x.shape
    longest = min(samples, int(prefix.max()))
    for i in range(rays):
        for s in range(longest):
            px = int(math.floor(x + 0.5 + along_x[i, s]))
            py = int(math.floor(y + 0.5 + along_y[i, s]))
            if not (0 <= px < n and 0 <= py < n):
                continue
            for k in range(len(prefix)):
                if s < prefix[k]:
                    targets[k, py, px] = True
            if occupied[py, px]:
                break


@numba.njit(cache=True, nogil=True)
def _touches_unfaced(occupied: np.ndarray, faced: np.ndarray, cx: int, cy: int) -> bool:
    """Whether cell (cx, cy) has an object (an occupied cell off the map's edge) not yet faced
    among its eight neighbours."""
    n = occupied.shape[0]
    for oy in range(max(cy - 1, 1), min(cy + 2, n - 1)):
        for ox in range(max(cx - 1, 1), min(cx + 2, n - 1)):
            if occupied[oy, ox] and not faced[oy, ox]:
                return True
    return False


@numba.njit(cache=True, nogil=True)
def look_view(
    seen: np.ndarray,
    close: np.ndarray,
    searched: np.ndarray,
    faced: np.ndarray,
    occupied: np.ndarray,
    x: float,
    y: float,
    along_x: np.ndarray,
    along_y: np.ndarray,
    close_prefix: int,
    searched_prefix: int,
    within: float,
    across: bool,
    beside: bool = False,
) -> None:
    """One camera view into the grid's marks, in place (:meth:`OccupancyGrid.look`): every sample a
    ray sees (up to and including the first occupied cell inside the map) is seen, the first
    ``close_prefix`` of each ray close and the first ``searched_prefix`` searched.

    With ``within`` >= 0 (``face_objects_in_fog``): a ray ending at an object (an occupied cell off
    the map's edge) at most ``within`` cells off marks it faced; a ray ending farther off at an
    object not faced (after this view's own marks) does not mark as seen its samples farther than
    ``distance - within``, and with ``across`` no ray of the view marks those samples' cells. With
    ``beside`` as well, a sample farther than ``within`` whose cell touches (8-neighbourhood) an object
    not faced is not marked seen either: an object beside the line of sight is as far off as the water
    next to it, and in fog it shows only from about ``within``.
    """
    n = occupied.shape[0]
    rays, samples = along_x.shape
    px = np.empty((rays, samples), dtype=np.int64)
    py = np.empty((rays, samples), dtype=np.int64)
    ends = np.zeros(rays, dtype=np.int64)  # samples each ray sees: a prefix, bar those outside the map
    inside = np.zeros((rays, samples), dtype=np.bool_)
    first_hit = np.full(rays, -1, dtype=np.int64)
    for i in range(rays):
        ends[i] = samples
        for s in range(samples):
            cx = int(math.floor(x + 0.5 + along_x[i, s]))
            cy = int(math.floor(y + 0.5 + along_y[i, s]))
            px[i, s], py[i, s] = cx, cy
            if 0 <= cx < n and 0 <= cy < n:
                inside[i, s] = True
                if occupied[cy, cx]:
                    if 0 < cx < n - 1 and 0 < cy < n - 1:
                        first_hit[i] = s
                    ends[i] = s + 1
                    break
    withheld = np.zeros((rays, samples), dtype=np.bool_)
    if within >= 0.0:
        for i in range(rays):
            s = first_hit[i]
            if s >= 0 and (s + 1) * 0.25 <= within:
                faced[py[i, s], px[i, s]] = True
        any_withheld = False
        for i in range(rays):
            s = first_hit[i]
            if s < 0 or (s + 1) * 0.25 <= within or faced[py[i, s], px[i, s]]:
                continue
            limit = (s + 1) * 0.25 - within
            for j in range(ends[i]):
                if inside[i, j] and (j + 1) * 0.25 > limit:
                    withheld[i, j] = True
                    any_withheld = True
        if across and any_withheld:
            cells = np.zeros((n, n), dtype=np.bool_)
            for i in range(rays):
                for j in range(ends[i]):
                    if withheld[i, j]:
                        cells[py[i, j], px[i, j]] = True
            for i in range(rays):
                for j in range(ends[i]):
                    if inside[i, j] and cells[py[i, j], px[i, j]]:
                        withheld[i, j] = True
        if beside:
            for i in range(rays):
                for j in range(ends[i]):
                    if not inside[i, j] or withheld[i, j] or (j + 1) * 0.25 <= within:
                        continue
                    cx, cy = px[i, j], py[i, j]
                    if not occupied[cy, cx] and _touches_unfaced(occupied, faced, cx, cy):
                        withheld[i, j] = True
    for i in range(rays):
        for j in range(ends[i]):
            if not inside[i, j]:
                continue
            cx, cy = px[i, j], py[i, j]
            if not withheld[i, j]:
                seen[cy, cx] = True
            if j < close_prefix:
                close[cy, cx] = True
            if j < searched_prefix:
                searched[cy, cx] = True


@numba.njit(cache=True, nogil=True)
def clean_views(
    foreign: np.ndarray,
    cx: int,
    cy: int,
    viewing: np.ndarray,
    along_x: np.ndarray,
    along_y: np.ndarray,
    hypot_table: np.ndarray,
) -> np.ndarray:
    """The ``viewing`` cells (an (n, n) bool mask) facing the judged cell (``cx``, ``cy``) from which
    no ray of the fan marched meets a ``foreign`` cell farther off than the judged cell plus half a
    cell, as a mask (:meth:`~embodmem.agents.explorer.FrontierExplorer._clean_background`).
    ``along_x``, ``along_y``: (heading, ray, sample) offsets from the cell centre;
    ``hypot_table[dy + r, dx + r]`` is ``np.hypot(dx, dy)`` for the integer offsets a march or a
    viewing cell reaches, so every distance compared is numpy's, bit for bit. The same
    ``floor(x + 0.5 + offset)`` in float64 as the numpy march."""
    n = foreign.shape[0]
    rays, samples = along_x.shape[1], along_x.shape[2]
    r = (hypot_table.shape[0] - 1) // 2
    clean = np.zeros_like(viewing)
    for y in range(n):
        for x in range(n):
            if not viewing[y, x]:
                continue
            dx, dy = cx - x, cy - y
            target = hypot_table[dy + r, dx + r] + 0.5
            if abs(dx) >= abs(dy):
                h = 0 if dx > 0 else 2
            else:
                h = 1 if dy > 0 else 3
            ok = True
            for k in range(rays):
                for s in range(samples):
                    px = int(math.floor(x + 0.5 + along_x[h, k, s]))
                    py = int(math.floor(y + 0.5 + along_y[h, k, s]))
                    if 0 <= px < n and 0 <= py < n and foreign[py, px] and hypot_table[py - y + r, px - x + r] > target:
                        ok = False
                        break
                if not ok:
                    break
            clean[y, x] = ok
    return clean


@numba.njit(cache=True, nogil=True)
def look_view_by_kind(
    seen: np.ndarray,
    close: np.ndarray,
    searched: np.ndarray,
    faced: np.ndarray,
    occupied: np.ndarray,
    x: float,
    y: float,
    along_x: np.ndarray,
    along_y: np.ndarray,
    close_prefix: int,
    searched_prefix: int,
    within: float,
    across: bool,
    beside: bool,
    by_kind: np.ndarray,
    kind_x: np.ndarray,
    kind_y: np.ndarray,
    kind_prefix: np.ndarray,
) -> None:
    """:func:`look_view`, then :func:`mark_in_view` into ``by_kind`` along the rays ``kind_x``,
    ``kind_y`` (the two write different marks and read the same map): one call a step
    (:meth:`~embodmem.agents.mapping.OccupancyGrid.look` with ``kind_ranges``)."""
    look_view(
        seen,
        close,
        searched,
        faced,
        occupied,
        x,
        y,
        along_x,
        along_y,
        close_prefix,
        searched_prefix,
        within,
        across,
        beside,
    )
    mark_in_view(by_kind, occupied, x, y, kind_x, kind_y, kind_prefix)


@numba.njit(cache=True, nogil=True)
def nearest_goal_path(passable: np.ndarray, goals: np.ndarray, sx: int, sy: int) -> np.ndarray:
    """The cells (K, 2) x, y of a shortest 4-connected path over ``passable`` and ``goals`` cells
    from (sx, sy) to the nearest ``goals`` cell, excluding (sx, sy) (:func:`~embodmem.agents.mapping.plan_path`): (0, 2)
    at a goal already, (1, 2) holding (-1, -1) when no goal can be reached.

    The path is the one a descent of the goals' distance field takes (at each cell the first
    4-neighbour, east, south, west, north, one step nearer a goal), found from the start instead: a
    search from the start to the first level holding a goal, then back from that level's goals over
    cells one level nearer the start each step. Those marked cells are the ones whose distance to a
    goal is the nearest goal's distance less their own from the start, the ones the descent may step
    on; the search covers a disc as wide as the nearest goal is far, not the whole map (a frontier
    is often large and near)."""
    height, width = passable.shape
    none = np.full((1, 2), -1, dtype=np.int64)
    if not (0 <= sx < width and 0 <= sy < height):
        return none
    if goals[sy, sx]:
        return np.empty((0, 2), dtype=np.int64)
    if not passable[sy, sx]:
        return none
    depth = np.full((height, width), -1, dtype=np.int64)
    queue = np.empty(height * width, dtype=np.int64)
    depth[sy, sx] = 0
    queue[0] = sy * width + sx
    head, tail, level, found = 0, 1, 0, False
    while head < tail and not found:
        level += 1
        end = tail
        while head < end:
            y, x = queue[head] // width, queue[head] % width
            head += 1
            for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1)):
                nx, ny = x + dx, y + dy
                if 0 <= nx < width and 0 <= ny < height and depth[ny, nx] < 0 and (passable[ny, nx] or goals[ny, nx]):
                    depth[ny, nx] = level
                    queue[tail] = ny * width + nx
                    tail += 1
                    if goals[ny, nx]:
                        found = True
    if not found:
        return none
    on_path = np.zeros((height, width), dtype=np.bool_)
    for i in range(tail - 1, -1, -1):  # the queue holds the levels in order: walk them back
        y, x = queue[i] // width, queue[i] % width
        d = depth[y, x]
        if not (on_path[y, x] or (d == level and goals[y, x])):
            continue
        on_path[y, x] = True
        for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1)):
            nx, ny = x + dx, y + dy
            if 0 <= nx < width and 0 <= ny < height and depth[ny, nx] == d - 1:
                on_path[ny, nx] = True
    path = np.empty((level, 2), dtype=np.int64)
    x, y = sx, sy
    for k in range(level):
        for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1)):
            nx, ny = x + dx, y + dy
            if 0 <= nx < width and 0 <= ny < height and on_path[ny, nx] and depth[ny, nx] == k + 1:
                x, y = nx, ny
                break
        path[k, 0], path[k, 1] = x, y
    return path


@numba.njit(cache=True, nogil=True)
def joined_cells(occupied: np.ndarray, cx: int, cy: int, radius: int) -> np.ndarray:
    """The occupied cells (K, 2) x, y joined to (cx, cy) (8-connected) within ``radius`` cells of it
    (the window clipped to the map), row by row (:meth:`~embodmem.agents.mapping.OccupancyGrid.occupied_around`);
    (cx, cy) alone when it is not occupied. A flood fill over the window: the component OpenCV's
    connected-component labelling would give, without labelling the rest of the window."""
    height, width = occupied.shape
    x0, y0 = max(cx - radius, 0), max(cy - radius, 0)
    x1, y1 = min(cx + radius + 1, width), min(cy + radius + 1, height)
    if not occupied[cy, cx]:
        out = np.empty((1, 2), dtype=np.int64)
        out[0, 0], out[0, 1] = cx, cy
        return out
    joined = np.zeros((y1 - y0, x1 - x0), dtype=np.bool_)
    stack = np.empty((y1 - y0) * (x1 - x0), dtype=np.int64)
    joined[cy - y0, cx - x0] = True
    stack[0] = (cy - y0) * (x1 - x0) + (cx - x0)
    top, count = 1, 1
    while top > 0:
        top -= 1
        wy, wx = stack[top] // (x1 - x0), stack[top] % (x1 - x0)
        for dy in range(-1, 2):
            for dx in range(-1, 2):
                ny, nx = wy + dy, wx + dx
                if 0 <= ny < y1 - y0 and 0 <= nx < x1 - x0 and not joined[ny, nx] and occupied[ny + y0, nx + x0]:
                    joined[ny, nx] = True
                    stack[top] = ny * (x1 - x0) + nx
                    top += 1
                    count += 1
    out = np.empty((count, 2), dtype=np.int64)
    k = 0
    for wy in range(y1 - y0):
        for wx in range(x1 - x0):
            if joined[wy, wx]:
                out[k, 0], out[k, 1] = wx + x0, wy + y0
                k += 1
    return out


@numba.njit(cache=True, nogil=True)
def viewing_mask(
    occupied: np.ndarray, cx: int, cy: int, offsets: np.ndarray, between: np.ndarray, used: np.ndarray
) -> np.ndarray:
    """The cells (an (n, n) bool mask) from which to judge (cx, cy): each of ``offsets`` ((K, 2) from
    it) inside the map and not occupied, with none of its ``between`` cells ((K, M, 2) offsets, the
    ``used`` ones) inside the map and occupied
    (:meth:`~embodmem.agents.explorer.FrontierExplorer.viewing_cells`)."""
    n = occupied.shape[0]
    mask = np.zeros_like(occupied)
    for k in range(len(offsets)):
        gx, gy = cx + offsets[k, 0], cy + offsets[k, 1]
        if not (0 <= gx < n and 0 <= gy < n) or occupied[gy, gx]:
            continue
        blocked = False
        for m in range(between.shape[1]):
            bx, by = cx + between[k, m, 0], cy + between[k, m, 1]
            if used[k, m] and 0 <= bx < n and 0 <= by < n and occupied[by, bx]:
                blocked = True
                break
        if not blocked:
            mask[gy, gx] = True
    return mask
