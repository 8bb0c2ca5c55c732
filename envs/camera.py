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
from dataclasses import dataclass

import cv2
import numpy as np

from embodmem.envs.objects import LOOK_HEIGHTS, LOOK_KIND, TEX, texture_atlas

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


class Camera:
    """Renders (size, size, 3) uint8 first-person frames of a kind map.

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
        self.fov = math.radians(fov_deg)
        half = size / 2.0
        self.focal = half / math.tan(self.fov / 2)
        cols = np.arange(size, dtype=np.float64) + 0.5 - half
        self.col_offsets = np.arctan(cols / self.focal)
        self.col_cos = np.cos(self.col_offsets).astype(np.float32)
        self.col_cos2 = np.concatenate([self.col_cos, self.col_cos])
        self.rows = (np.arange(size, dtype=np.float32) + 0.5)[:, None]
        self.atlas = texture_atlas()
        self._backgrounds: dict[tuple[float, float], np.ndarray] = {}
        self._tables: dict[tuple[int, float], RayTable] = {}
        self._background_rows: dict[tuple[float, float], np.ndarray] = {}
        self.atlas_flat = self.atlas.reshape(-1, 3) * 255.0
        self._no_clip = np.full(size, np.inf, dtype=np.float32)
        self.tex_row_offsets = (np.arange(TEX, dtype=np.int32) * TEX)[None, :]
        self.row_index = np.broadcast_to(np.arange(size, dtype=np.int32)[:, None], (size, size))

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

    def table(self, heading: int, max_dist: float) -> RayTable:
        """Ray table for heading index 0-3 (east, south, west, north), built once per range."""
        key = (heading, max_dist)
        table = self._tables.get(key)
        if table is None:
            table = RayTable(heading * math.pi / 2 + self.col_offsets, max_dist)
            self._tables[key] = table
        return table

    def _columns(
        self,
        dist: np.ndarray,
        kind: np.ndarray,
        u: np.ndarray,
        shade: np.ndarray,
        look: WaterLook,
        clip_bottom: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Textured columns for any number of layers side by side (arrays of n * size columns).

        Fog and absorption depend only on the column, so they are applied to each column's texture
        strip (TEX texels) rather than to every pixel; pixels then index into the strips.
        Returns (mask, strip index per pixel, shaded strips (n*size*TEX, 3), top row, fog-weighted
        visible pixels per column).
        """
        half = self.size / 2.0
        d = np.where(np.isfinite(dist), dist, look.view_range).astype(np.float32)
        perp = np.maximum(d * (self.col_cos if len(d) == self.size else self.col_cos2), 1e-3)
        top = half - self.focal * (LOOK_HEIGHTS[kind] - CAMERA_Z) / perp
        floor = half + self.focal * CAMERA_Z / perp
        bottom = np.where(kind > 0, np.minimum(floor, clip_bottom), -1.0)
        rows = self.rows
        mask = (rows >= top) & (rows < bottom)
        index = ((rows - top) * (TEX / np.maximum(floor - top, 1e-3))).astype(np.int32)
        index += (np.arange(len(d), dtype=np.int32) * TEX)[None, :]
        ui = np.minimum((u * TEX).astype(np.int32), TEX - 1)
        fog = 1.0 - np.exp(-FOG_DENSITY * d / look.view_range)
        gain = np.exp(-d[:, None] * ABSORPTION_PER_CELL) * ((look.brightness * shade) * (1.0 - fog))[:, None]
        texels = (kind.astype(np.int32) * (TEX * TEX) + ui)[:, None] + self.tex_row_offsets
        strips = self.atlas_flat.take(texels.ravel(), axis=0).reshape(len(d), TEX, 3)
        strips *= gain[:, None, :]
        strips += (look.water_rgb[None, :] * (255.0 * fog[:, None]))[:, None, :]
        return mask, index, strips.reshape(-1, 3), top, mask.sum(axis=0).astype(np.float32) * (1.0 - fog)

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
        The frame is one table lookup into background rows, near strips and far strips.
        """
        s = self.size
        hits = self.table(heading, look.view_range).cast(padded, pad, x, y, look.view_range)
        shade = np.where(hits.side_x, 1.0, 0.78).astype(np.float32)
        if hits.kind2.any():  # something taller stands behind a low object: draw both layers
            perp1 = np.maximum(np.where(np.isfinite(hits.dist), hits.dist, 1.0) * self.col_cos, 1e-3)
            top1 = s / 2.0 - self.focal * (LOOK_HEIGHTS[hits.kind] - CAMERA_Z) / perp1
            mask, index, strips, _, vis = self._columns(
                np.concatenate([hits.dist, hits.dist2]),
                np.concatenate([hits.kind, hits.kind2]),
                np.concatenate([hits.u, hits.u2]),
                np.concatenate([shade, np.full(s, 0.78, np.float32)]),
                look,
                np.concatenate([np.full(s, np.inf, np.float32), top1]),
            )
            index += s
            index = np.where(mask[:, :s], index[:, :s], np.where(mask[:, s:], index[:, s:], self.row_index))
        else:
            mask, index, strips, _, vis = self._columns(hits.dist, hits.kind, hits.u, shade, look, self._no_clip)
            index += s
            index = np.where(mask, index, self.row_index)
            vis = np.concatenate([vis, np.zeros(s, np.float32)])
        # Every entry is a convex mix of texels (<= 1) and water (<= 1): no clipping needed.
        table = np.concatenate([self.background_rows(look), strips]).astype(np.uint8)
        img = table.take(index, axis=0)
        if fish is not None and len(fish):
            depth = np.where(np.isfinite(hits.dist), hits.dist * self.col_cos, np.inf)
            self._draw_fish(img, fish, x + 0.5, y + 0.5, heading * math.pi / 2, depth, look)
        if particles is not None and len(particles):
            py, px = particles[:, 0].astype(np.int32), particles[:, 1].astype(np.int32)
            add = (particles[:, 2] * 255.0 * look.brightness).astype(np.int16)
            img[py, px] = np.minimum(img[py, px].astype(np.int16) + add[:, None], 255).astype(np.uint8)
        visibility = {
            "kind": LOOK_KIND[hits.kind],
            "look": hits.kind,
            "look2": hits.kind2,
            "cell_x": hits.cell_x,
            "cell_y": hits.cell_y,
            "pixels": vis[:s],
            "kind2": LOOK_KIND[hits.kind2],
            "cell_x2": hits.cell_x2,
            "cell_y2": hits.cell_y2,
            "pixels2": vis[s:],
        }
        return img, visibility

    def _draw_fish(
        self,
        img: np.ndarray,
        fish: np.ndarray,
        ox: float,
        oy: float,
        heading: float,
        depth: np.ndarray,
        look: WaterLook,
    ) -> None:
        """Fish are small silver-teal sprites, hidden behind nearer walls (a per-column z-buffer)."""
        fwd = np.array([math.cos(heading), math.sin(heading)])
        right = np.array([-fwd[1], fwd[0]])
        rel = fish - np.array([ox, oy])
        f = rel @ fwd
        lat = rel @ right
        s = self.size
        near = (f > 0.4) & (f < look.view_range) & (np.abs(lat) < f * (s / (2 * self.focal)) + 0.5)
        for fi, li in zip(f[near], lat[near]):
            cx = s / 2 + self.focal * li / fi
            col = int(min(max(cx, 0), s - 1))
            if depth[col] <= fi:  # a nearer wall hides it (z-buffer at the fish's centre column)
                continue
            r = self.focal * 0.12 / fi
            cy = s / 2 - self.focal * 0.08 / fi
            fog = 1.0 - math.exp(-FOG_DENSITY * fi / look.view_range)
            color = np.array([0.55, 0.85, 0.8]) * look.brightness * (1 - fog) + look.water_rgb * fog
            axes = (max(1, int(round(2 * r))), max(1, int(round(r))))
            cv2.ellipse(
                img,
                (int(round(cx)), int(round(cy))),
                axes,
                0,
                0,
                360,
                tuple(int(c) for c in np.clip(color, 0, 1) * 255),
                -1,
            )


class Sonar:
    """Imaging sonar as a range scan: metres to the first obstacle along each beam of a fan.

    Fish are not obstacles and do not echo. Beams that hit nothing report ``max_range``.
    """

    def __init__(self, offsets: np.ndarray, max_range: float):
        self.offsets = np.asarray(offsets, dtype=np.float64)
        self.max_range = max_range
        self._tables = [RayTable(h * math.pi / 2 + self.offsets, max_range) for h in range(4)]

    @property
    def reach(self) -> int:
        return self._tables[0].reach

    def scan(self, padded: np.ndarray, pad: int, x: int, y: int, heading: int) -> np.ndarray:
        """Ranges in cells from the centre of cell (x, y) facing heading index ``heading``."""
        if len(self.offsets) == 0:
            return np.zeros(0, dtype=np.float32)
        hits = self._tables[heading].cast(padded, pad, x, y, self.max_range, second_layer=False)
        return np.minimum(hits.dist, self.max_range).astype(np.float32)
