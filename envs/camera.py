"""First-person underwater camera and sonar, ray cast over the grid with numpy.

One call casts every column's ray at once: the ray's crossings of vertical and horizontal grid
lines are computed in closed form, sorted, and looked up in the kind map, so there is no Python
loop over columns or cells. Walls are textured per kind, low objects let taller ones behind them
show above (two layers), each target instance wears its appearance variant (a look id per cell:
colour scheme, marking, pose; ``embodmem.envs.objects.VARIANTS``), and water is drawn as it looks: fog toward the water colour with distance,
red absorbed first, light falling off with depth, drifting particles and passing fish.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np

from embodmem.envs.jit import compiled
from embodmem.envs.kernels import fish_in_view, paint_frames, sonar_ranges
from embodmem.envs.objects import LOOK_HEIGHTS, LOOK_KIND, TEX, texture_atlas
from embodmem.envs.torch_kernels import paint_frames_torch, ray_device, sonar_ranges_torch

CAMERA_Z = 0.5
"""Camera height above the seabed, in wall heights."""
FOG_DENSITY = 2.3
"""Fog reaches 90% (1 - e^-2.3) at the view range."""
ABSORPTION_PER_CELL = np.array([0.22, 0.07, 0.035], dtype=np.float32)
"""Extra attenuation of R, G, B per cell travelled (red goes first)."""


@dataclass
class RayHits:
    """Nearest hit (layer 1) and the first taller hit behind it (layer 2) for each ray."""

    dist: np.ndarray
    kind: np.ndarray
    u: np.ndarray
    side_x: np.ndarray
    cell_x: np.ndarray
    cell_y: np.ndarray
    dist2: np.ndarray
    kind2: np.ndarray
    u2: np.ndarray
    cell_x2: np.ndarray
    cell_y2: np.ndarray


class RayTable:
    """Precomputed grid crossings of a fan of rays cast from a cell centre.

    The robot always stands at a cell centre and faces one of four headings, so the cells a ray
    crosses, the distance at each crossing and the texture coordinate there are the same wherever
    it stands: they are computed once here, and casting is one lookup into the (padded) kind map
    plus an ``argmax`` for the first solid cell.
    """

    def __init__(self, angles: np.ndarray, max_dist: float):
        dx = np.cos(angles)
        dy = np.sin(angles)
        dx = np.where(np.abs(dx) < 1e-9, 1e-9, dx)
        dy = np.where(np.abs(dy) < 1e-9, 1e-9, dy)
        n_cross = int(math.ceil(max_dist)) + 2
        k = np.arange(n_cross, dtype=np.float64)
        bx = np.where(dx[:, None] > 0, 1 + k[None, :], -k[None, :])
        by = np.where(dy[:, None] > 0, 1 + k[None, :], -k[None, :])
        t_all = np.concatenate([(bx - 0.5) / dx[:, None], (by - 0.5) / dy[:, None]], axis=1)
        order = np.argsort(t_all, axis=1, kind="stable")
        self.t = np.take_along_axis(t_all, order, axis=1).astype(np.float32)
        self.is_x = order < n_cross
        step_x = np.where(dx > 0, 1, -1)[:, None]
        step_y = np.where(dy > 0, 1, -1)[:, None]
        self.cx = np.cumsum(self.is_x * step_x, axis=1)
        self.cy = np.cumsum(~self.is_x * step_y, axis=1)
        px = 0.5 + self.t * dx[:, None]
        py = 0.5 + self.t * dy[:, None]
        self.u = np.where(self.is_x, py - np.floor(py), px - np.floor(px)).astype(np.float32)
        self.max_dist = max_dist
        self.in_range = self.t < max_dist
        self.reach = int(math.ceil(max_dist)) + 2
        self.rows = np.arange(len(angles))
        n = self.t.shape[1]
        self.after = np.arange(n)[None, :] > np.arange(n)[:, None]
        """``after[i, j]``: crossing j lies beyond crossing i."""
        self._flat_width = -1
        self._flat = np.zeros(0, dtype=np.int64)

    def _flat_offsets(self, width: int) -> np.ndarray:
        """Offsets of every crossing into a row-major map ``width`` cells wide (cached per width)."""
        if self._flat_width != width:
            self._flat = (self.cy * width + self.cx).astype(np.int64)
            self._flat_width = width
        return self._flat

    def cast(self, padded: np.ndarray, pad: int, x: int, y: int, max_dist: float, second_layer: bool = True) -> RayHits:
        """Cast from the centre of cell (x, y) of a kind map padded by ``pad`` solid cells."""
        if max_dist > self.max_dist + 1e-6 or pad < self.reach:
            raise ValueError(f"max_dist={max_dist} exceeds the table's range {self.max_dist} or pad={pad} too small")
        width = padded.shape[1]
        kind_along = padded.ravel()[self._flat_offsets(width) + ((y + pad) * width + x + pad)]
        kind_along = kind_along * (self.in_range if max_dist == self.max_dist else (self.t < max_dist))
        hit = kind_along > 0
        rows = self.rows
        first = np.argmax(hit, axis=1)
        has = hit[rows, first]
        dist = np.where(has, self.t[rows, first], np.inf)
        kind = kind_along[rows, first]
        cx = x + self.cx[rows, first]
        cy = y + self.cy[rows, first]
        if second_layer:
            behind = hit & self.after[first] & (LOOK_HEIGHTS[kind_along] > LOOK_HEIGHTS[kind][:, None] + 1e-3)
            second = np.argmax(behind, axis=1)
            has2 = behind[rows, second]
            dist2 = np.where(has2, self.t[rows, second], np.inf)
            kind2 = np.where(has2, kind_along[rows, second], 0)
            u2 = self.u[rows, second]
            cx2, cy2 = x + self.cx[rows, second], y + self.cy[rows, second]
        else:
            dist2, kind2, u2, cx2, cy2 = dist, np.zeros_like(kind), self.u[rows, first], cx, cy
        return RayHits(dist, kind, self.u[rows, first], self.is_x[rows, first], cx, cy, dist2, kind2, u2, cx2, cy2)


def pad_kinds(kinds: np.ndarray, pad: int) -> np.ndarray:
    """Surround a kind map with ``pad`` rock cells so rays never index outside it."""
    return np.pad(kinds, pad, constant_values=1)


def cast_rays(kinds: np.ndarray, x: int, y: int, angles: np.ndarray, max_dist: float) -> RayHits:
    """Cast rays from the centre of cell (x, y): convenience form of :class:`RayTable` for one-off use."""
    table = RayTable(angles, max_dist)
    return table.cast(pad_kinds(kinds, table.reach), table.reach, x, y, max_dist)


@dataclass(frozen=True)
class WaterLook:
    """How the water looks under a light level."""

    view_range: float
    """Cells at which fog hides everything."""
    brightness: float
    water_rgb: np.ndarray
    """Fog colour, float32 RGB in [0, 1]."""

    @staticmethod
    @functools.lru_cache(maxsize=64)
    def for_light(lux: float, view_range: float) -> WaterLook:
        """Shallow water (10 lux) is blue-green and bright; deep water (1.5 lux) is dim navy."""
        b = float(np.clip((lux / 10.0) ** 0.5, 0.05, 1.0))
        water = np.array([0.05, 0.32, 0.42], dtype=np.float32) * (0.35 + 0.65 * b)
        return WaterLook(view_range=view_range, brightness=b, water_rgb=water)


HEADINGS = 4
"""The robot faces east, south, west or north (``spec.DIR_TO_VEC``)."""
_HEADING_VECTORS = np.array(
    [[math.cos(h * math.pi / 2), math.sin(h * math.pi / 2)] for h in range(HEADINGS)], dtype=np.float64
)
"""Forward vector of each heading as ``cos``/``sin`` give it (fish positions are projected on it)."""
_FISH_RGB = np.array([0.55, 0.85, 0.8])


@dataclass
class BatchVisibility:
    """What each column of B frames shows (arrays (B, size)): looks, kinds and cells hit (two layers)
    and their fog-weighted visible pixel counts (for ``target_in_view`` and captions)."""

    look: np.ndarray
    look2: np.ndarray
    cell_x: np.ndarray
    cell_y: np.ndarray
    cell_x2: np.ndarray
    cell_y2: np.ndarray
    pixels: np.ndarray
    pixels2: np.ndarray
    kind: np.ndarray | None = None
    """The kinds of ``look`` (set by :meth:`Camera.render_batch`)."""
    kind2: np.ndarray | None = None

    def kinds(self) -> tuple[np.ndarray, np.ndarray]:
        """The kinds of ``look`` and ``look2`` (B, size), found once."""
        if self.kind is None or self.kind2 is None:
            self.kind, self.kind2 = LOOK_KIND[self.look], LOOK_KIND[self.look2]
        return self.kind, self.kind2

    def of(self, i: int | list[int]) -> dict[str, np.ndarray]:
        """The visibility record of frame ``i`` (the dict :meth:`Camera.render` returns), or of the
        frames of the list ``i`` (each array (len(i), size))."""
        kind, kind2 = self.kinds()
        return {
            "kind": kind[i],
            "look": self.look[i],
            "look2": self.look2[i],
            "cell_x": self.cell_x[i],
            "cell_y": self.cell_y[i],
            "pixels": self.pixels[i],
            "kind2": kind2[i],
            "cell_x2": self.cell_x2[i],
            "cell_y2": self.cell_y2[i],
            "pixels2": self.pixels2[i],
        }


class ColumnAtlas:
    """Every wall column a camera can show under one water look, for the four headings, precomputed.

    The robot stands at a cell centre facing one of four headings, so a column's ray meets the grid
    at fixed crossings (:class:`RayTable`); what the column shows is fixed by (heading, column,
    crossing of the first hit, look id hit). Here each is computed once: which screen rows a face
    covers and the texel row of each (per face height), and each face's strip of shaded, fogged
    texels (per look). Rendering (envs/kernels.py) is then a ray lookup and, per pixel, a texel row
    and a colour lookup, with no float maths. A second layer (something taller behind a low
    object) uses the same rows shaded as a far face, clipped above the near face's top.
    """

    def __init__(self, camera: Camera, look: WaterLook):
        s = camera.size
        tables = [RayTable(h * math.pi / 2 + camera.col_offsets, look.view_range) for h in range(HEADINGS)]
        j = max(1, max(int(t.in_range.sum(axis=1).max()) for t in tables))
        heights, look_class = np.unique(LOOK_HEIGHTS, return_inverse=True)
        n_looks, n_heights = len(LOOK_HEIGHTS), len(heights)
        self.crossings = j
        self.n_heights = n_heights
        self.look_class = look_class.astype(np.int64)
        """Look id -> index of its height in the row tables."""
        self.t = np.stack([t.t[:, :j] for t in tables]).ravel()
        """(heading, column, crossing) -> distance, flattened."""
        self.in_range = np.stack([t.in_range[:, :j] for t in tables])
        self.cx_flat = np.stack([t.cx[:, :j] for t in tables]).ravel()
        self.cy_flat = np.stack([t.cy[:, :j] for t in tables]).ravel()
        self._cells = np.stack([(t.cy[:, :j], t.cx[:, :j]) for t in tables])
        self.reach = self.in_range.sum(axis=2).astype(np.int64)
        self.pad_needed = tables[0].reach
        """Rock cells a map must be padded with so that no ray leaves it."""
        """Crossings within the view range of each (heading, column): they come first."""
        self.taller = LOOK_HEIGHTS[:, None] > LOOK_HEIGHTS[None, :] + 1e-3
        """``taller[a, b]``: a face of look a shows above a face of look b in front of it."""
        self._width = -1
        self._offsets = np.zeros(0, dtype=np.int64)
        t = self.t.reshape(HEADINGS, s, j)

        # Rows: one entry per (heading, column, crossing, height).
        shape = (HEADINGS, s, j, n_heights)
        top, floor, texel_row, mask = camera._face_rows(
            np.broadcast_to(t[..., None], shape).ravel(),
            np.broadcast_to(heights.astype(np.float32), shape).ravel(),
            np.broadcast_to(camera.col_cos[None, :, None, None], shape).ravel(),
        )
        overflow = int((mask & (texel_row >= TEX)).sum())
        if overflow:  # never seen; in the per-pixel model such a pixel read the next strip
            raise RuntimeError(f"{overflow} pixels map past their texture strip (size={s}, look={look})")
        rows = camera.rows[:, 0]
        self.start = (rows[None, :] < top[:, None]).sum(axis=1).astype(np.int16)
        """First screen row a face covers (the count of rows above its top)."""
        self.end = np.where(
            heights[None, :] > 0, (rows[None, :] < floor[:, None]).sum(axis=1).reshape(-1, n_heights), 0
        )
        self.end = self.end.ravel().astype(np.int16)
        """One past the last row a face covers (0: water, nothing)."""
        self.count = mask.sum(axis=1)
        self.texel_rows = np.where(mask, texel_row, -1).astype(np.int8)
        """(heading, column, crossing, height) x screen row -> the face's texel row there (-1: not
        covered, the background shows)."""

        # Colours: one strip per (heading, column, crossing, look), near and far shade.
        shape = (HEADINGS, s, j, n_looks)
        d = np.broadcast_to(t[..., None], shape).ravel()
        kind = np.broadcast_to(np.arange(n_looks, dtype=np.uint8), shape).ravel()
        u = np.broadcast_to(np.stack([t.u[:, :j] for t in tables])[..., None], shape).ravel()
        is_x = np.broadcast_to(np.stack([t.is_x[:, :j] for t in tables])[..., None], shape).ravel()
        near, clear = camera._face_strips(d, kind, u, np.where(is_x, 1.0, 0.78).astype(np.float32), look)
        far, _ = camera._face_strips(d, kind, u, np.full(len(d), 0.78, np.float32), look)
        self.clear = clear.reshape(shape)[..., 0].ravel()
        """1 - fog at each (heading, column, crossing): weights a face's visible pixels."""
        self.strips = np.stack([near, far], axis=1).astype(np.uint8).reshape(-1, 3)
        """((((heading, column, crossing, look), near/far), texel row) -> uint8 RGB."""
        self.background = camera.background_rows(look).astype(np.uint8)
        """(size, 3) uint8: each screen row with nothing in front."""

    def offsets(self, width: int) -> np.ndarray:
        """(heading, column, crossing) offsets into a row-major map ``width`` cells wide (cached)."""
        if self._width != width:
            self._offsets = (self._cells[:, 0] * width + self._cells[:, 1]).astype(np.int64)
            self._width = width
        return self._offsets


class Camera:
    """Renders (size, size, 3) uint8 first-person frames of a kind map, one or a batch at a time.

    Example:
        >>> import numpy as np
        >>> kinds = np.zeros((8, 8), np.uint8); kinds[:, 6] = 1   # a rock wall at x = 6
        >>> cam = Camera(size=32, fov_deg=90.0)
        >>> img, vis = cam.render(pad_kinds(kinds, 12), 12, 2, 4, 0, WaterLook.for_light(10.0, 8.0))
        >>> img.shape, img.dtype
        ((32, 32, 3), dtype('uint8'))
    """

    def __init__(self, size: int = 64, fov_deg: float = 90.0):
        self.size = size
        self.fov_deg = float(fov_deg)
        self.fov = math.radians(fov_deg)
        half = size / 2.0
        self.focal = half / math.tan(self.fov / 2)
        cols = np.arange(size, dtype=np.float64) + 0.5 - half
        self.col_offsets = np.arctan(cols / self.focal)
        self.col_cos = np.cos(self.col_offsets).astype(np.float32)
        self.rows = (np.arange(size, dtype=np.float32) + 0.5)[:, None]
        self.atlas = texture_atlas()
        self._backgrounds: dict[tuple[float, float], np.ndarray] = {}
        self._background_rows: dict[tuple[float, float], np.ndarray] = {}
        self.atlas_flat = self.atlas.reshape(-1, 3) * 255.0
        self.tex_row_offsets = (np.arange(TEX, dtype=np.int32) * TEX)[None, :]
        self._paint: Callable[..., None] | None = None

    def _resolve_paint(self) -> Callable[..., None]:
        """The frame painter on the ray path of :func:`ray_device`, chosen once, at the first frame:
        a render then calls the compiled loop (or the torch cast) directly, with no per-call lookup."""
        device = ray_device()
        self._paint = compiled(paint_frames) if device is None else functools.partial(paint_frames_torch, device=device)
        return self._paint

    def background_rows(self, look: WaterLook) -> np.ndarray:
        """(size, 3) colour (0-255 float) of each row with nothing in front: it depends on the row only."""
        key = (look.view_range, look.brightness)
        rows = self._background_rows.get(key)
        if rows is None:
            rows = np.clip(self.background(look)[:, 0, :], 0.0, 1.0) * 255.0
            self._background_rows[key] = rows
        return rows

    def background(self, look: WaterLook) -> np.ndarray:
        """Water above the horizon, seabed below, both fading into fog (cached per light)."""
        key = (look.view_range, look.brightness)
        bg = self._backgrounds.get(key)
        if bg is None:
            s = self.size
            half = s / 2.0
            y = self.rows[:, 0]
            bg = np.zeros((s, s, 3), dtype=np.float32)
            up = np.clip((half - y) / half, 0.0, 1.0)[:, None]
            surface = look.water_rgb * (1.0 + 1.2 * look.brightness)
            bg[:] = (look.water_rgb * (1 - up) + np.minimum(surface, 1.0) * up)[:, None, :]
            below = y > half
            d = self.focal * CAMERA_Z / np.maximum(y[below] - half, 1e-3)
            fog = (1.0 - np.exp(-FOG_DENSITY * d / look.view_range))[:, None]
            sand = np.array([0.62, 0.55, 0.38], dtype=np.float32) * look.brightness
            sand_rows = sand[None, :] * np.exp(-d[:, None] * ABSORPTION_PER_CELL[None, :])
            bg[below] = (sand_rows * (1 - fog) + look.water_rgb * fog)[:, None, :]
            self._backgrounds[key] = bg
        return bg

    def atlas_for(self, look: WaterLook) -> ColumnAtlas:
        """The column atlas of ``look`` (built on first use, shared by cameras of the same geometry)."""
        key = (self.size, self.fov_deg, look.view_range, look.brightness)
        atlas = _ATLASES.get(key)
        if atlas is None:
            atlas = _ATLASES[key] = ColumnAtlas(self, look)
        return atlas

    def _face_rows(
        self, d: np.ndarray, height: np.ndarray, col_cos: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Where a face of ``height`` (wall heights) at distance ``d`` sits on screen, one per column:
        (top, floor, texel row per screen row (n, size) int32, mask of the rows it covers (n, size))."""
        half = self.size / 2.0
        perp = np.maximum(d * col_cos, 1e-3)
        top = half - self.focal * (height - CAMERA_Z) / perp
        floor = half + self.focal * CAMERA_Z / perp
        bottom = np.where(height > 0, floor, -1.0)
        rows = self.rows[:, 0][None, :]
        mask = (rows >= top[:, None]) & (rows < bottom[:, None])
        texel_row = ((rows - top[:, None]) * (TEX / np.maximum(floor - top, 1e-3))[:, None]).astype(np.int32)
        return top, floor, texel_row, mask

    def _face_strips(
        self, d: np.ndarray, kind: np.ndarray, u: np.ndarray, shade: np.ndarray, look: WaterLook
    ) -> tuple[np.ndarray, np.ndarray]:
        """The texel strip (TEX texels, 0-255 float) a face of look ``kind`` shows at distance ``d``,
        hit at ``u`` along it, and 1 - fog. Fog and absorption depend only on the distance, so they
        are applied to the strip, not to every pixel."""
        ui = np.minimum((u * TEX).astype(np.int32), TEX - 1)
        fog = 1.0 - np.exp(-FOG_DENSITY * d / look.view_range)
        gain = np.exp(-d[:, None] * ABSORPTION_PER_CELL) * ((look.brightness * shade) * (1.0 - fog))[:, None]
        texels = (kind.astype(np.int32) * (TEX * TEX) + ui)[:, None] + self.tex_row_offsets
        strips = self.atlas_flat.take(texels.ravel(), axis=0).reshape(len(d), TEX, 3)
        strips *= gain[:, None, :]
        strips += (look.water_rgb[None, :] * (255.0 * fog[:, None]))[:, None, :]
        return strips, 1.0 - fog

    def render(
        self,
        padded: np.ndarray,
        pad: int,
        x: int,
        y: int,
        heading: int,
        look: WaterLook,
        fish: np.ndarray | None = None,
        particles: np.ndarray | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Render the view from the centre of cell (x, y) facing heading index ``heading``.

        ``padded`` is the look map (a world's ``looks``: the kind id, or a variant's look id;
        ``embodmem.envs.objects.LOOK_KIND``) surrounded by ``pad`` rock cells (see :func:`pad_kinds`).
        Returns the uint8 image and a visibility record: per column the kinds and cells hit (two
        layers) and their fog-weighted visible pixel counts (for ``target_in_view`` and captions).
        The same code as :meth:`render_batch` with one frame, so both give the same pixels.
        """
        images, vis = self.render_batch(
            padded[None],
            pad,
            np.array([x]),
            np.array([y]),
            np.array([heading]),
            [look],
            None if fish is None else fish[None],
            None if particles is None else particles[None],
        )
        return images[0], vis.of(0)

    def render_batch(
        self,
        padded: np.ndarray,
        pad: int,
        x: np.ndarray,
        y: np.ndarray,
        heading: np.ndarray,
        looks: list[WaterLook],
        fish: np.ndarray | None = None,
        particles: np.ndarray | None = None,
    ) -> tuple[np.ndarray, BatchVisibility]:
        """Render B frames at once: ``padded`` (B, H, W) look maps (one per world, padded alike),
        poses ``x``, ``y``, ``heading`` (B,), one water look per frame, fish (B, n, 2) and
        particles (B, m, 3) or None. Returns (B, size, size, 3) uint8 and the visibility per column.
        """
        n = len(x)
        s = self.size
        x = np.asarray(x, dtype=np.int64)
        y = np.asarray(y, dtype=np.int64)
        heading = np.asarray(heading, dtype=np.int64)
        _check_poses(padded, pad, x, y, heading, 0)
        images = np.empty((n, s, s, 3), dtype=np.uint8)
        vis = BatchVisibility(
            look=np.empty((n, s), np.uint8),
            look2=np.empty((n, s), np.uint8),
            cell_x=np.empty((n, s), np.int64),
            cell_y=np.empty((n, s), np.int64),
            cell_x2=np.empty((n, s), np.int64),
            cell_y2=np.empty((n, s), np.int64),
            pixels=np.empty((n, s), np.float32),
            pixels2=np.empty((n, s), np.float32),
        )
        depth = np.empty((n, s), np.float32)
        keys = [(look.view_range, look.brightness) for look in looks]
        for key in dict.fromkeys(keys):
            group = np.array([i for i, k in enumerate(keys) if k == key], dtype=np.int64)
            every = len(group) == n
            look = looks[int(group[0])]
            sel = slice(None) if every else group
            self._frames(
                padded, pad, x[sel], y[sel], heading[sel], look, group if not every else None, images, vis, depth
            )
        if fish is not None and fish.shape[1]:
            self._draw_fish(images, fish, x, y, heading, depth, looks)
        if particles is not None and particles.shape[1]:
            py, px = particles[..., 0].astype(np.int32), particles[..., 1].astype(np.int32)
            brightness = np.array([look.brightness for look in looks])[:, None]
            add = (particles[..., 2] * 255.0 * brightness).astype(np.int16)
            frame = np.arange(n)[:, None]
            images[frame, py, px] = np.minimum(images[frame, py, px].astype(np.int16) + add[..., None], 255).astype(
                np.uint8
            )
        return images, vis

    def _frames(
        self,
        padded: np.ndarray,
        pad: int,
        x: np.ndarray,
        y: np.ndarray,
        heading: np.ndarray,
        look: WaterLook,
        group: np.ndarray | None,
        images: np.ndarray,
        vis: BatchVisibility,
        depth: np.ndarray,
    ) -> None:
        """Cast and draw the frames of one water look into ``images``/``vis``/``depth`` (rows ``group``)."""
        atlas = self.atlas_for(look)
        if pad < atlas.pad_needed:
            raise ValueError(f"pad={pad} is too small; allowed: >= {atlas.pad_needed} (rays reach that far)")
        frames = np.arange(len(x)) if group is None else group
        height, width = padded.shape[1], padded.shape[2]
        base = frames * (height * width) + (y + pad) * width + x + pad
        paint = self._paint if self._paint is not None else self._resolve_paint()
        paint(
            padded.reshape(-1),
            base,
            x,
            y,
            heading,
            frames,
            atlas.offsets(width),
            atlas.reach,
            atlas.taller,
            atlas.look_class,
            atlas.n_heights,
            atlas.texel_rows,
            atlas.start,
            atlas.end,
            atlas.count,
            atlas.strips,
            atlas.background,
            len(LOOK_HEIGHTS),
            TEX,
            atlas.t,
            atlas.clear,
            atlas.cx_flat,
            atlas.cy_flat,
            self.col_cos,
            images,
            vis.look,
            vis.look2,
            vis.cell_x,
            vis.cell_y,
            vis.cell_x2,
            vis.cell_y2,
            vis.pixels,
            vis.pixels2,
            depth,
        )

    def _draw_fish(
        self,
        images: np.ndarray,
        fish: np.ndarray,
        x: np.ndarray,
        y: np.ndarray,
        heading: np.ndarray,
        depth: np.ndarray,
        looks: list[WaterLook],
    ) -> None:
        """Fish are small silver-teal sprites, hidden behind nearer walls (a per-column z-buffer)."""
        s = self.size
        f = np.empty(fish.shape[:2])
        lat = np.empty(fish.shape[:2])
        near = np.empty(fish.shape[:2], dtype=np.bool_)
        view_range = np.array([look.view_range for look in looks])
        fish_in_view(fish, x, y, _HEADING_VECTORS, heading, view_range, s / (2 * self.focal), f, lat, near)
        for i, k in zip(*np.nonzero(near)):
            fi, li, look = float(f[i, k]), float(lat[i, k]), looks[i]
            cx = s / 2 + self.focal * li / fi
            col = int(min(max(cx, 0), s - 1))
            if depth[i, col] <= fi:  # a nearer wall hides it (z-buffer at the fish's centre column)
                continue
            r = self.focal * 0.12 / fi
            cy = s / 2 - self.focal * 0.08 / fi
            fog = 1.0 - math.exp(-FOG_DENSITY * fi / look.view_range)
            color = _FISH_RGB * look.brightness * (1 - fog) + look.water_rgb * fog
            axes = (max(1, int(round(2 * r))), max(1, int(round(r))))
            cv2.ellipse(
                images[i],
                (int(round(cx)), int(round(cy))),
                axes,
                0,
                0,
                360,
                tuple(int(c) for c in np.clip(color, 0, 1) * 255),
                -1,
            )


def _check_poses(padded: np.ndarray, pad: int, x: np.ndarray, y: np.ndarray, heading: np.ndarray, needed: int) -> None:
    """The compiled loops read the maps unchecked: refuse, in one line, a pose or pad they would
    read outside of."""
    if padded.ndim != 3 or padded.dtype != np.uint8 or not padded.flags.c_contiguous:
        raise ValueError(f"padded: {padded.dtype} {padded.shape}; allowed: a C-contiguous (B, H, W) uint8 array")
    if pad < needed:
        raise ValueError(f"pad={pad} is too small; allowed: >= {needed} (rays reach that far)")
    height, width = padded.shape[1] - 2 * pad, padded.shape[2] - 2 * pad
    if len(x) != len(padded) or len(y) != len(x) or len(heading) != len(x):
        raise ValueError(f"{len(x)} x, {len(y)} y, {len(heading)} headings for {len(padded)} maps; allowed: one each")
    if len(x) == 1:  # the single env, every step: plain comparisons, not six array reductions
        inside = 0 <= int(x[0]) < width and 0 <= int(y[0]) < height
        turned = 0 <= int(heading[0]) < HEADINGS
    else:
        inside = not len(x) or (x.min() >= 0 and y.min() >= 0 and x.max() < width and y.max() < height)
        turned = not len(x) or (heading.min() >= 0 and heading.max() < HEADINGS)
    if not inside:
        raise ValueError(f"poses x={x.tolist()}, y={y.tolist()}; allowed: cells inside the {width}x{height} map")
    if not turned:
        raise ValueError(f"heading={heading.tolist()}; allowed: 0-3")


_ATLASES: dict[tuple[int, float, float, float], ColumnAtlas] = {}
"""Column atlases by (size, fov, view range, brightness): one per camera geometry and light, shared
by every camera of the process (they are read-only)."""


@dataclass(frozen=True)
class SonarTables:
    """A sonar fan's crossings per heading, the same for every env with the same fan: built once
    per process (:func:`_sonar_tables`), read-only, shared (each env build cast four fans anew)."""

    t: np.ndarray
    """(heading, beam, crossing) float32 distance of each crossing."""
    reach_per_beam: np.ndarray
    """(heading, beam) crossings within range."""
    cells: np.ndarray
    """(heading, 2, beam, crossing) cell offsets (dy, dx) of each crossing."""
    reach: int
    """Cells a ray may cross (the pad the maps need)."""


@functools.lru_cache(maxsize=16)
def _sonar_tables(offsets: tuple[float, ...], max_range: float) -> SonarTables:
    tables = [RayTable(h * math.pi / 2 + np.asarray(offsets, dtype=np.float64), max_range) for h in range(HEADINGS)]
    crossings = max([1] + [int(t.in_range.sum(axis=1).max()) for t in tables if offsets])
    built = SonarTables(
        np.stack([t.t[:, :crossings] for t in tables]),
        np.stack([t.in_range[:, :crossings].sum(axis=1) for t in tables]).astype(np.int64),
        np.stack([(t.cy[:, :crossings], t.cx[:, :crossings]) for t in tables]),
        tables[0].reach,
    )
    for array in (built.t, built.reach_per_beam, built.cells):
        array.flags.writeable = False
    return built


class Sonar:
    """Imaging sonar as a range scan: metres to the first obstacle along each beam of a fan.

    Fish are not obstacles and do not echo. Beams that hit nothing report ``max_range``.
    """

    def __init__(self, offsets: np.ndarray, max_range: float):
        self.offsets = np.asarray(offsets, dtype=np.float64)
        self.max_range = max_range
        self._tables = _sonar_tables(tuple(self.offsets.tolist()), float(max_range))
        self._t, self._reach, self._cells = self._tables.t, self._tables.reach_per_beam, self._tables.cells
        self._width = -1
        self._offsets = np.zeros(0, dtype=np.int64)
        self._cast: Callable[..., None] | None = None

    def _resolve_cast(self) -> Callable[..., None]:
        """The sonar's cast on the ray path of :func:`ray_device`, chosen once, at the first scan."""
        device = ray_device()
        self._cast = compiled(sonar_ranges) if device is None else functools.partial(sonar_ranges_torch, device=device)
        return self._cast

    @property
    def reach(self) -> int:
        return self._tables.reach

    def scan(self, padded: np.ndarray, pad: int, x: int, y: int, heading: int) -> np.ndarray:
        """Ranges in cells from the centre of cell (x, y) facing heading index ``heading``."""
        return self.scan_batch(padded[None], pad, np.array([x]), np.array([y]), np.array([heading]))[0]

    def scan_batch(self, padded: np.ndarray, pad: int, x: np.ndarray, y: np.ndarray, heading: np.ndarray) -> np.ndarray:
        """(B, beams) ranges in cells for B poses, each in its own padded map (``padded`` is (B, H, W))."""
        n, beams = len(x), len(self.offsets)
        if beams == 0:
            return np.zeros((n, 0), dtype=np.float32)
        height, width = padded.shape[1], padded.shape[2]
        if self._width != width:
            self._offsets = (self._cells[:, 0] * width + self._cells[:, 1]).astype(np.int64)
            self._width = width
        x = np.asarray(x, dtype=np.int64)
        y = np.asarray(y, dtype=np.int64)
        heading = np.asarray(heading, dtype=np.int64)
        _check_poses(padded, pad, x, y, heading, self.reach)
        base = np.arange(n) * (height * width) + (y + pad) * width + x + pad
        out = np.empty((n, beams), np.float32)
        cast = self._cast if self._cast is not None else self._resolve_cast()
        cast(
            padded.reshape(-1),
            base,
            heading,
            self._offsets,
            self._reach,
            self._t,
            np.float32(self.max_range),
            out,
        )
        return out
