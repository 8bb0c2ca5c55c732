"""The camera's inner loop, compiled with Numba: cast every column's ray and paint its pixels.

Only integer work happens here (table lookups, comparisons, copies): every float the frame depends
on was computed once with numpy in the column atlas (:class:`~embodmem.envs.camera.ColumnAtlas`), so
the compiled loop gives exactly the pixels of the numpy model, for one frame or a batch. Compiled on
first call (:mod:`embodmem.envs.jit`: importing this module imports no Numba) and cached on disk
(Numba's cache; ``NUMBA_CACHE_DIR`` moves it).
"""

from __future__ import annotations

import numpy as np

from embodmem.envs.jit import njit_on_first_call


@njit_on_first_call(cache=True, nogil=True, boundscheck=False)
def paint_frames(
    padded: np.ndarray,
    base: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    heading: np.ndarray,
    frame_rows: np.ndarray,
    offsets: np.ndarray,
    reach: np.ndarray,
    taller: np.ndarray,
    look_class: np.ndarray,
    n_heights: int,
    texel_rows: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    count: np.ndarray,
    strips: np.ndarray,
    background: np.ndarray,
    n_looks: int,
    strip: int,
    distance: np.ndarray,
    clear: np.ndarray,
    cell_dx: np.ndarray,
    cell_dy: np.ndarray,
    col_cos: np.ndarray,
    images: np.ndarray,
    look: np.ndarray,
    look2: np.ndarray,
    cell_x: np.ndarray,
    cell_y: np.ndarray,
    cell_x2: np.ndarray,
    cell_y2: np.ndarray,
    pixels: np.ndarray,
    pixels2: np.ndarray,
    depth: np.ndarray,
) -> None:
    """Frame b: map ``padded[base[b] + ...]``, pose ``x[b], y[b], heading[b]``, written to row
    ``frame_rows[b]`` of ``images`` and the per-column outputs. Each column: the first solid look
    along its ray within range (``reach[h, c]`` crossings) and the first taller one behind it; its
    pixels: the near face's rows, the far face's rows above the near face's top, the background
    elsewhere; what it shows (looks, cells,
    fog-weighted pixel counts) and its depth for the fish z-buffer."""
    n_cols = offsets.shape[1]
    crossings = offsets.shape[2]
    n_rows = texel_rows.shape[1]
    for b in range(base.shape[0]):
        h = heading[b]
        out = frame_rows[b]
        image = images[out]
        for c in range(n_cols):
            limit = reach[h, c]
            first = 0
            k1 = 0
            for j in range(limit):
                k = padded[base[b] + offsets[h, c, j]]
                if k > 0:
                    first = j
                    k1 = k
                    break
            second = 0
            k2 = 0
            if k1 > 0:
                for j in range(first + 1, limit):
                    k = padded[base[b] + offsets[h, c, j]]
                    if k > 0 and taller[k, k1]:
                        second = j
                        k2 = k
                        break
            column = h * n_cols + c
            at_first = column * crossings + first
            at_second = column * crossings + second
            near = at_first * n_heights + look_class[k1]
            near_strip = (at_first * n_looks + k1) * 2 * strip
            top = start[near] if k2 > 0 else 0
            far = at_second * n_heights + look_class[k2]
            far_strip = ((at_second * n_looks + k2) * 2 + 1) * strip
            for r in range(n_rows):
                if r < top:
                    texel = texel_rows[far, r]
                    index = far_strip + texel
                else:
                    texel = texel_rows[near, r]
                    index = near_strip + texel
                if texel < 0:
                    image[r, c, 0] = background[r, 0]
                    image[r, c, 1] = background[r, 1]
                    image[r, c, 2] = background[r, 2]
                else:
                    image[r, c, 0] = strips[index, 0]
                    image[r, c, 1] = strips[index, 1]
                    image[r, c, 2] = strips[index, 2]
            shown = max(min(end[far], top) - start[far], 0) if k2 > 0 else 0
            look[out, c] = k1
            look2[out, c] = k2
            cell_x[out, c] = x[b] + cell_dx[at_first]
            cell_y[out, c] = y[b] + cell_dy[at_first]
            cell_x2[out, c] = x[b] + cell_dx[at_second]
            cell_y2[out, c] = y[b] + cell_dy[at_second]
            pixels[out, c] = np.float32(count[near]) * clear[at_first]
            pixels2[out, c] = np.float32(shown) * clear[at_second]
            depth[out, c] = distance[at_first] * col_cos[c] if k1 > 0 else np.inf


@njit_on_first_call(cache=True, nogil=True, boundscheck=False)
def sonar_ranges(
    padded: np.ndarray,
    base: np.ndarray,
    heading: np.ndarray,
    offsets: np.ndarray,
    reach: np.ndarray,
    distance: np.ndarray,
    max_range: np.float32,
    out: np.ndarray,
) -> None:
    """For pose b and beam k: the distance of the first solid crossing within range (``reach``), or
    ``max_range``; ``distance[h, k, j]`` is the table's float32 distance of crossing j."""
    for b in range(base.shape[0]):
        h = heading[b]
        for k in range(offsets.shape[1]):
            value = max_range
            for j in range(reach[h, k]):
                if padded[base[b] + offsets[h, k, j]] > 0:
                    value = min(distance[h, k, j], max_range)
                    break
            out[b, k] = value


@njit_on_first_call(cache=True, nogil=True, boundscheck=False)
def fish_in_view(
    fish: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    forward: np.ndarray,
    heading: np.ndarray,
    view_range: np.ndarray,
    spread: float,
    along: np.ndarray,
    across: np.ndarray,
    near: np.ndarray,
) -> None:
    """Each fish's distance ahead of the camera (``along``), to its right (``across``) and whether it
    lies in the view cone and range (``near``); plain IEEE double arithmetic, as numpy does it."""
    for b in range(fish.shape[0]):
        cos_h = forward[heading[b], 0]
        sin_h = forward[heading[b], 1]
        ox = x[b] + 0.5
        oy = y[b] + 0.5
        for i in range(fish.shape[1]):
            rx = fish[b, i, 0] - ox
            ry = fish[b, i, 1] - oy
            f = rx * cos_h + ry * sin_h
            lat = rx * -sin_h + ry * cos_h
            along[b, i] = f
            across[b, i] = lat
            near[b, i] = f > 0.4 and f < view_range[b] and abs(lat) < f * spread + 0.5
