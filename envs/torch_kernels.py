"""The camera's and the sonar's ray casts as batched torch gathers, for a GPU.

The Numba loops (:mod:`embodmem.envs.kernels`) walk one column's ray at a time; here every ray of
every frame is one tensor: the map cells along all rays gathered at once, the first solid crossing
found with an ``argmax`` over a mask, the pixels looked up in the same tables. Only integer work
and the same single float32 products happen, so the result is bit-identical to the Numba loops on
any device (tested on the CPU, ``tests/envs/test_torch_rays.py``).

Which path runs is :func:`ray_device`, read once by each camera and sonar at its first cast (a
step then calls the chosen cast directly): ``EMBODMEM_RAY_DEVICE`` = ``numba`` (the compiled loops),
``cpu``, ``cuda`` or ``cuda:N`` (these kernels on that torch device) or ``auto`` (the default: CUDA
when torch is already imported, as the harness's embedder imports it on a machine with a GPU driver,
and sees a GPU; else Numba).
``auto`` never imports torch itself: a Gymnasium user of the env alone does not pay for it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

RAY_DEVICE_VARIABLE = "EMBODMEM_RAY_DEVICE"
_resolved: dict[str, str | None] = {}


def ray_device() -> str | None:
    """The torch device the ray casts run on, or None for the Numba loops (see the module's text).

    >>> os.environ[RAY_DEVICE_VARIABLE] = "numba"; ray_device() is None
    True
    >>> del os.environ[RAY_DEVICE_VARIABLE]
    """
    asked = os.environ.get(RAY_DEVICE_VARIABLE, "auto").strip().lower() or "auto"
    if asked not in _resolved:
        if asked == "numba":
            _resolved[asked] = None
        elif asked == "auto":
            torch = sys.modules.get("torch")
            _resolved[asked] = "cuda" if torch is not None and torch.cuda.is_available() else None
        elif asked == "cpu" or asked.startswith("cuda"):
            _resolved[asked] = asked
        else:
            raise ValueError(f"{RAY_DEVICE_VARIABLE}={asked!r} is not allowed; allowed: auto, numba, cpu, cuda, cuda:N")
    return _resolved[asked]


class _Tables:
    """The constant tables on the device, kept while the arrays they came from live."""

    def __init__(self) -> None:
        self.kept: dict[tuple[int, str, bool], tuple[np.ndarray, Any]] = {}

    def get(self, array: np.ndarray, device: Any, widen: bool = False) -> Any:
        """``array`` as a tensor on ``device`` (``widen``: as int64, for tables used as indices)."""
        import torch

        key = (id(array), str(device), widen)
        hit = self.kept.get(key)
        if hit is None or hit[0] is not array:
            if len(self.kept) > 256:
                self.kept.clear()
            source = (
                np.ascontiguousarray(array) if array.flags.writeable else np.array(array)
            )  # shared tables are read-only
            tensor = torch.from_numpy(source).to(device)
            hit = (array, tensor.long() if widen else tensor)
            self.kept[key] = hit
        return hit[1]


_tables = _Tables()


def _first(mask: Any) -> tuple[Any, Any]:
    """Along the last axis: whether any entry is set, and the first set index (0 when none)."""
    import torch

    return mask.any(-1), mask.to(torch.int32).argmax(-1)


def paint_frames_torch(
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
    device: str = "cpu",
) -> None:
    """:func:`embodmem.envs.kernels.paint_frames`, every column of every frame at once on ``device``."""
    import torch

    dev = torch.device(device)
    n_cols, crossings = offsets.shape[1], offsets.shape[2]
    n_rows = texel_rows.shape[1]
    cells = torch.from_numpy(padded).to(dev)
    h = torch.from_numpy(heading).to(dev)
    rows = torch.from_numpy(frame_rows).to(dev)
    at = torch.from_numpy(base).to(dev)[:, None, None] + _tables.get(offsets, dev)[h]  # (B, C, J)
    kinds = cells[at].long()
    along = torch.arange(crossings, device=dev)
    inside = along < _tables.get(reach, dev)[h][..., None]
    solid = (kinds > 0) & inside
    hit1, first = _first(solid)
    k1 = torch.where(hit1, kinds.gather(-1, first[..., None])[..., 0], 0)
    behind = solid & (along > first[..., None]) & _tables.get(taller, dev)[kinds, k1[..., None]] & hit1[..., None]
    hit2, second = _first(behind)
    k2 = torch.where(hit2, kinds.gather(-1, second[..., None])[..., 0], 0)
    second = torch.where(hit2, second, 0)
    column = h[:, None] * n_cols + torch.arange(n_cols, device=dev)[None, :]
    at_first = column * crossings + first
    at_second = column * crossings + second
    look_class_t = _tables.get(look_class, dev)
    start_t = _tables.get(start, dev, widen=True)
    near = at_first * n_heights + look_class_t[k1]
    near_strip = (at_first * n_looks + k1) * 2 * strip
    top = torch.where(k2 > 0, start_t[near], 0)
    far = at_second * n_heights + look_class_t[k2]
    far_strip = ((at_second * n_looks + k2) * 2 + 1) * strip
    texels = _tables.get(texel_rows, dev, widen=True)
    upper = torch.arange(n_rows, device=dev)[None, None, :] < top[..., None]  # (B, C, R)
    texel = torch.where(upper, texels[far], texels[near])
    index = torch.where(upper, far_strip[..., None], near_strip[..., None]) + texel
    colour = torch.where(
        (texel < 0)[..., None],
        _tables.get(background, dev)[None, None, :, :],
        _tables.get(strips, dev)[index.clamp(min=0)],
    )  # (B, C, R, 3)
    end_t = _tables.get(end, dev, widen=True)
    shown = torch.where(k2 > 0, (torch.minimum(end_t[far], top) - start_t[far]).clamp(min=0), 0)
    dx, dy = _tables.get(cell_dx, dev), _tables.get(cell_dy, dev)
    px, py = torch.from_numpy(x).to(dev)[:, None], torch.from_numpy(y).to(dev)[:, None]
    clear_t = _tables.get(clear, dev)
    far_pixels = shown.to(torch.float32) * clear_t[at_second]
    near_pixels = _tables.get(count, dev)[near].to(torch.float32) * clear_t[at_first]
    cos = _tables.get(col_cos, dev)[None, :]
    near_depth = torch.where(k1 > 0, _tables.get(distance, dev)[at_first] * cos, torch.inf)
    out = rows.cpu().numpy()
    images[out] = colour.permute(0, 2, 1, 3).to(torch.uint8).cpu().numpy()
    look[out] = k1.cpu().numpy()
    look2[out] = k2.cpu().numpy()
    cell_x[out] = (px + dx[at_first]).cpu().numpy()
    cell_y[out] = (py + dy[at_first]).cpu().numpy()
    cell_x2[out] = (px + dx[at_second]).cpu().numpy()
    cell_y2[out] = (py + dy[at_second]).cpu().numpy()
    pixels[out] = near_pixels.cpu().numpy()
    pixels2[out] = far_pixels.cpu().numpy()
    depth[out] = near_depth.cpu().numpy()


def sonar_ranges_torch(
    padded: np.ndarray,
    base: np.ndarray,
    heading: np.ndarray,
    offsets: np.ndarray,
    reach: np.ndarray,
    distance: np.ndarray,
    max_range: np.float32,
    out: np.ndarray,
    device: str = "cpu",
) -> None:
    """:func:`embodmem.envs.kernels.sonar_ranges`, every beam of every pose at once on ``device``."""
    import torch

    dev = torch.device(device)
    h = torch.from_numpy(heading).to(dev)
    at = torch.from_numpy(base).to(dev)[:, None, None] + _tables.get(offsets, dev)[h]  # (B, K, J)
    along = torch.arange(offsets.shape[2], device=dev)
    solid = (torch.from_numpy(padded).to(dev)[at] > 0) & (along < _tables.get(reach, dev)[h][..., None])
    hit, first = _first(solid)
    ranges = _tables.get(distance, dev)[h].gather(-1, first[..., None])[..., 0]
    limit = torch.tensor(float(max_range), dtype=ranges.dtype, device=dev)
    out[:] = torch.where(hit, torch.minimum(ranges, limit), limit).cpu().numpy()
