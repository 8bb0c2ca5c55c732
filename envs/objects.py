"""What lies on the seabed: the eight target kinds, the distractors, and how each one looks.

Every kind has a distinct silhouette (height on screen), base colour and texture pattern, so that a
small CLIP trained on rendered frames can tell a barrel from a wreck in fog. On MiniGrid's grid each
kind is a :class:`SeabedObject` that never touches MiniGrid's global tables (``OBJECT_TO_IDX``,
``COLOR_TO_IDX``, ``COLORS``): importing the project must not change stock MiniGrid envs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from minigrid.core.constants import OBJECT_TO_IDX
from minigrid.core.world_object import WorldObj
from minigrid.utils.rendering import fill_coords, point_in_circle, point_in_rect

TEX = 16
"""Side of every kind's texture, in texels (rows are height, columns run along the face)."""


@dataclass(frozen=True)
class Kind:
    """One kind of thing on the seabed."""

    name: str
    phrase: str
    """Words used in missions and captions ("a sunken ship")."""
    color: tuple[int, int, int]
    """Base colour (RGB, 0-255) in clear water; also its colour on the top-down map."""
    height: float
    """Height on screen as a fraction of a rock wall (the camera sits at 0.5)."""
    pattern: str
    """Name of the texture generator in :func:`make_texture`."""
    is_target: bool = False
    instances: int = 0
    """Number of instances in every world (targets only; docs/design.md, "Scenarios")."""


# id 0 is open water. Order is part of the file format of saved worlds: append, never reorder.
KINDS: tuple[Kind, ...] = (
    Kind("water", "open water", (20, 60, 90), 0.0, "none"),
    Kind("rock", "a rock outcrop", (92, 84, 74), 1.0, "rock"),
    Kind("reef", "a coral reef", (196, 92, 150), 0.55, "reef"),
    # --- the eight targets ---
    Kind("mining_robot", "a mining robot", (250, 200, 20), 0.6, "hazard", True, 2),
    Kind("pipeline", "an oil pipeline", (60, 170, 80), 0.28, "pipe", True, 3),
    Kind("barrel", "oil drums", (230, 60, 30), 0.42, "drums", True, 1),
    Kind("wreck", "a sunken ship", (150, 80, 40), 0.8, "hull", True, 2),
    Kind("electrical_box", "an electrical box", (40, 90, 230), 0.5, "ebox", True, 1),
    Kind("wind_station", "a wind power station", (240, 240, 240), 1.25, "tower", True, 1),
    Kind("aircraft", "aircraft wreckage", (170, 180, 200), 0.35, "plane", True, 3),
    Kind("landing_platform", "an H-marked landing platform", (250, 120, 0), 0.3, "helipad", True, 1),
    # --- distractors and landmarks ---
    Kind("cable", "electrical cables", (25, 25, 25), 0.12, "cable"),
    Kind("tower_wreckage", "tower wreckage", (95, 125, 130), 0.9, "lattice"),
    Kind("metal_debris", "metal debris", (130, 130, 120), 0.25, "debris"),
    Kind("collapsed_tower", "a collapsed tower", (110, 100, 90), 0.45, "lattice"),
    Kind("rock_arch", "a rock arch", (80, 75, 70), 1.0, "arch"),
)

KIND_INDEX: dict[str, int] = {k.name: i for i, k in enumerate(KINDS)}
KIND_SYMBOLS: tuple[str, ...] = (
    "  ",
    "Ro",
    "Re",
    "MR",
    "PL",
    "OD",
    "SS",
    "EB",
    "WS",
    "AW",
    "LP",
    "Ca",
    "TW",
    "MD",
    "CT",
    "RA",
)
"""Two characters per kind (in ``KINDS`` order) for text views of the grid (``pprint_grid``)."""
TARGET_KINDS: tuple[str, ...] = tuple(k.name for k in KINDS if k.is_target)
DISTRACTOR_KINDS: tuple[str, ...] = ("cable", "tower_wreckage", "metal_debris", "collapsed_tower", "rock_arch")
KIND_HEIGHTS = np.array([k.height for k in KINDS], dtype=np.float32)
KIND_COLORS = np.array([k.color for k in KINDS], dtype=np.uint8)


def _stripes(u: np.ndarray, v: np.ndarray, period: float, slope: float) -> np.ndarray:
    return ((u + slope * v) // period) % 2 == 0


def make_texture(kind: Kind, rng: np.random.Generator) -> np.ndarray:
    """Return a (TEX, TEX, 3) float32 texture in [0, 1] for ``kind``.

    Rows run from the top of the object (v=0) to the seabed; columns run along the face.
    The patterns are deliberately bold (stripes, rings, portholes, letters) so they survive fog
    and a 64x64 camera.
    """
    v, u = np.mgrid[0:TEX, 0:TEX].astype(np.float32)
    base = np.array(kind.color, dtype=np.float32) / 255.0
    tex = np.broadcast_to(base, (TEX, TEX, 3)).copy()
    noise = rng.normal(0.0, 1.0, (TEX, TEX, 1)).astype(np.float32)
    dark = np.array([0.05, 0.05, 0.05], dtype=np.float32)
    white = np.array([0.95, 0.95, 0.95], dtype=np.float32)
    p = kind.pattern
    if p == "rock":
        tex = tex * (1.0 + 0.18 * noise)
    elif p == "reef":
        spots = rng.random((TEX, TEX)) < 0.3
        tex[spots] = np.array([0.98, 0.55, 0.35])
        tex *= 1.0 + 0.1 * noise
    elif p == "hazard":  # yellow/black diagonal warning stripes
        tex[_stripes(u, v, 3, 1.0)] = dark
    elif p == "pipe":  # a horizontal cylinder: bright top band, dark underside, flange rings
        shade = 1.15 - 0.8 * (v / TEX)
        tex = tex * shade[..., None]
        tex[:, ::6] *= 0.4
    elif p == "drums":  # upright drums side by side, each with two dark rings
        tex[(u % 5) == 0] = dark
        tex[(v == 4) | (v == 11)] *= 0.35
    elif p == "hull":  # rusty hull with a row of portholes and a dark waterline
        holes = ((u % 5 - 2) ** 2 + (v - 5) ** 2) <= 2
        tex[holes] = dark
        tex[v >= 12] *= 0.45
        tex *= 1.0 + 0.12 * noise
    elif p == "ebox":  # blue cabinet with a yellow warning square
        sq = (u >= 5) & (u <= 10) & (v >= 4) & (v <= 9)
        tex[sq] = np.array([1.0, 0.9, 0.1])
        tex[(u == 0) | (u == TEX - 1)] = dark
    elif p == "tower":  # white column with a red band
        tex[(v >= 5) & (v <= 8)] = np.array([0.85, 0.1, 0.1])
    elif p == "plane":  # silver fuselage with a blue stripe and windows
        tex[(v >= 7) & (v <= 9)] = np.array([0.1, 0.2, 0.75])
        tex[((u % 3) == 0) & (v >= 3) & (v <= 5)] = dark
    elif p == "helipad":  # orange deck, white H, dark legs
        h = ((u == 4) | (u == 11) | ((v == 5) & (u > 4) & (u < 11))) & (v >= 1) & (v <= 9)
        tex[h] = white
        tex[(u >= 3) & (u <= 12) & ((u == 4) | (u == 5) | (u == 10) | (u == 11)) & (v >= 1) & (v <= 9)] = white
        tex[v >= 11] = dark
        tex[(v >= 11) & ((u % 8) < 2)] = np.array([0.5, 0.5, 0.5])
    elif p == "cable":
        tex *= 1.0 + 0.3 * noise
    elif p == "lattice":  # steel lattice: cross bracing
        lat = ((u + v) % 8 < 1.5) | ((u - v) % 8 < 1.5) | (u % 8 < 1)
        tex[~lat] = np.array([0.0, 0.0, 0.0])  # gaps read as dark water behind
        tex[lat] *= 1.0 + 0.15 * noise[lat]
    elif p == "debris":
        tex = tex * (1.0 + 0.5 * noise)
        tex[rng.random((TEX, TEX)) < 0.25] = dark
    elif p == "arch":
        tex = tex * (1.0 + 0.18 * noise)
        opening = ((u - 7.5) ** 2 / 25 + (v - 16) ** 2 / 100) <= 1.0
        tex[opening] = np.array([0.02, 0.06, 0.1])
    return np.clip(tex, 0.0, 1.0).astype(np.float32)


def texture_atlas(seed: int = 1234) -> np.ndarray:
    """All kinds' textures stacked: (len(KINDS), TEX, TEX, 3) float32. Fixed seed: same look everywhere."""
    rng = np.random.default_rng(seed)
    return np.stack([make_texture(k, rng) for k in KINDS])


# --------------------------------------------------------------------------- MiniGrid's grid

FIRST_SEABED_COLOR_IDX = 6
"""Colour index of kind 1 in :meth:`SeabedObject.encode`; MiniGrid's own colours use 0-5.

MiniGrid caches rendered tiles by ``encode()``: indices no stock colour uses keep our tiles and
stock tiles apart in that process-wide cache, without adding anything to MiniGrid's tables.
"""


class SeabedObject(WorldObj):
    """A MiniGrid cell occupant of one of our kinds (MiniGrid's grid, top-down views and wrappers).

    ``type`` is MiniGrid's nearest word, so tools that read it (``SymbolicObsWrapper``, ``NoDeath``)
    work: ``"box"`` for a target, ``"wall"`` for everything else (the robot can enter neither).
    ``color`` is the kind's name. ``encode()`` is ``(OBJECT_TO_IDX[type], FIRST_SEABED_COLOR_IDX +
    kind id - 1, 0)``: MiniGrid's type index with a colour index of the project's own.

    >>> SeabedObject("wreck").encode(), SeabedObject("rock").encode()
    ((7, 11, 0), (2, 6, 0))
    """

    def __init__(self, kind: str, instance: int = -1):
        if kind not in KIND_INDEX or kind == "water":
            raise ValueError(f"unknown seabed kind {kind!r}; valid: {[k.name for k in KINDS[1:]]}")
        # WorldObj.__init__ asserts that type and colour are in MiniGrid's global tables: set its
        # attributes here instead of registering our kinds there.
        self.kind = kind
        self.instance = instance
        self.kind_info = KINDS[KIND_INDEX[kind]]
        self.type = "box" if self.kind_info.is_target else "wall"
        self.color = kind
        self.contains = None
        self.init_pos = None
        self.cur_pos = None

    def encode(self) -> tuple[int, int, int]:
        return (OBJECT_TO_IDX[self.type], FIRST_SEABED_COLOR_IDX + KIND_INDEX[self.kind] - 1, 0)

    def can_overlap(self) -> bool:
        return False

    def see_behind(self) -> bool:
        return self.kind_info.height < 0.5

    def render(self, img: np.ndarray) -> None:
        color = np.array(self.kind_info.color)
        if self.kind_info.is_target:
            fill_coords(img, point_in_rect(0.1, 0.9, 0.1, 0.9), color)
            fill_coords(img, point_in_circle(0.5, 0.5, 0.18), (0, 0, 0))
        else:
            fill_coords(img, point_in_rect(0, 1, 0, 1), color)
