"""What lies on the seabed: the eight target kinds, the distractors, and how each one looks.

Every kind has a distinct silhouette (height on screen), base colour and texture pattern, so that a
small CLIP trained on rendered frames can tell a barrel from a wreck in fog. On MiniGrid's grid each
kind is a :class:`~embodmem.envs.seabed_object.SeabedObject`, in its own module: the catalogue here
imports no MiniGrid, so the config checks that read it (task and kind names) stay light.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

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


@functools.lru_cache(maxsize=4)
def texture_atlas(seed: int = 1234) -> np.ndarray:
    """Every look's texture stacked: (len(LOOKS), TEX, TEX, 3) float32. Fixed seed: same look everywhere.

    Rows 0-15 are the kinds' standard looks, drawn first from the same generator as before variants
    existed, so a world without variants renders exactly as it always did. Made once per seed and
    shared, read-only, by every camera (a lockstep run builds an env per lane).
    """
    rng = np.random.default_rng(seed)
    base = [make_texture(k, rng) for k in KINDS]
    extra = [variant_texture(v, base[KIND_INDEX[v.kind]], rng) for v in VARIANTS if v.look >= len(KINDS)]
    atlas = np.stack(base + extra)
    atlas.flags.writeable = False
    return atlas


# --------------------------------------------------------------------------- instance variants


@dataclass(frozen=True)
class Variant:
    """One appearance of a target kind: a colour scheme, a marking, or a condition or pose.

    Variant 0 of every kind is its standard look (the texture and height every category world
    uses); variants 1 and 2 get their own rows in the texture atlas (their ``look`` id).
    """

    kind: str
    index: int
    """0, 1, 2 within the kind."""
    name: str
    """Short identifier ("yellow_band"), unique within the kind."""
    phrase: str
    """The instance named in words, as a description goal says it ("the oil drums with a yellow band")."""
    height: float
    """Height on screen (a capsized ship lies lower than an upright one)."""
    look: int
    """Row in :func:`texture_atlas` and in :data:`LOOK_HEIGHTS` (the kind id for variant 0)."""
    recolor: tuple[int, int, int] | None = None
    """New base colour: texels near the kind's colour take this one (a colour scheme)."""
    band: tuple[int, int, int] | None = None
    """A bold horizontal band in this colour across the middle (a marking)."""
    bands: tuple[int, int, int] | None = None
    """Two bold horizontal bands in this colour, the face between them white (a marking on towers)."""
    vertical_bands: tuple[int, int, int] | None = None
    """A bold vertical band in this colour on every face (a marking on long things)."""
    flipped: bool = False
    """Upside down or on its side (texture turned; a condition or pose)."""
    broken: bool = False
    """Broken: jagged dark tears through the face (a condition)."""

    @property
    def key(self) -> str:
        """``kind.name``, the variant's name across kinds ("barrel.yellow_band")."""
        return f"{self.kind}.{self.name}"


_WHITE = (240, 240, 235)
_YELLOW = (250, 215, 30)
_BLACK = (15, 15, 15)
# (kind, name, phrase, height factor, modifiers). Variant 0 is the kind's standard look.
_VARIANT_TABLE: tuple[tuple[str, str, str, float, dict], ...] = (
    ("mining_robot", "yellow", "the yellow mining robot", 1.0, {}),
    ("mining_robot", "white_band", "the mining robot with a white band", 1.0, {"band": _WHITE}),
    ("mining_robot", "toppled", "the toppled mining robot", 0.5, {"flipped": True}),
    ("pipeline", "green", "the green oil pipeline", 1.0, {}),
    ("pipeline", "yellow_bands", "the oil pipeline with yellow bands", 1.0, {"vertical_bands": _YELLOW}),
    ("pipeline", "white", "the white oil pipeline", 1.0, {"recolor": _WHITE}),
    ("barrel", "red", "the red oil drums", 1.0, {}),
    ("barrel", "yellow_band", "the oil drums with a yellow band", 1.0, {"band": _YELLOW}),
    ("barrel", "toppled", "the toppled oil drums", 0.55, {"flipped": True}),
    ("wreck", "upright", "the upright sunken ship", 1.0, {}),
    ("wreck", "capsized", "the capsized sunken ship", 0.6, {"flipped": True, "recolor": (120, 30, 25)}),
    ("wreck", "white_hull", "the sunken ship with a white hull", 1.0, {"recolor": _WHITE}),
    ("electrical_box", "blue", "the blue electrical box", 1.0, {}),
    ("electrical_box", "white", "the white electrical box", 1.0, {"recolor": _WHITE}),
    ("electrical_box", "broken", "the broken electrical box", 0.6, {"broken": True}),
    ("wind_station", "red_band", "the wind power station with a red band", 1.0, {}),
    ("wind_station", "black_bands", "the wind power station with black bands", 1.0, {"bands": _BLACK}),
    ("wind_station", "broken", "the broken wind power station", 0.55, {"broken": True}),
    ("aircraft", "silver", "the silver aircraft wreckage", 1.0, {}),
    ("aircraft", "yellow", "the yellow aircraft wreckage", 1.0, {"recolor": _YELLOW}),
    ("aircraft", "dark_green", "the dark green aircraft wreckage", 1.0, {"recolor": (40, 70, 35)}),
    ("landing_platform", "orange", "the orange landing platform", 1.0, {}),
    ("landing_platform", "blue", "the blue landing platform", 1.0, {"recolor": (30, 70, 220)}),
    ("landing_platform", "tilted", "the tilted landing platform", 1.7, {"flipped": True}),
)


def _build_variants() -> tuple[Variant, ...]:
    out: list[Variant] = []
    next_look = len(KINDS)
    for kind, name, phrase, height_factor, mods in _VARIANT_TABLE:
        index = sum(v.kind == kind for v in out)
        look = KIND_INDEX[kind] if index == 0 else next_look
        next_look += index > 0
        height = KINDS[KIND_INDEX[kind]].height * height_factor
        out.append(Variant(kind, index, name, phrase, height, look, **mods))
    return tuple(out)


VARIANTS: tuple[Variant, ...] = _build_variants()
"""Every target kind's appearance variants, in kind order, three per kind (order is part of saved worlds)."""
VARIANTS_PER_KIND = 3
KIND_VARIANTS: dict[str, tuple[Variant, ...]] = {k: tuple(v for v in VARIANTS if v.kind == k) for k in TARGET_KINDS}
VARIANT_BY_KEY: dict[str, Variant] = {v.key: v for v in VARIANTS}
N_LOOKS = len(KINDS) + sum(v.index > 0 for v in VARIANTS)
LOOK_KIND = np.array(list(range(len(KINDS))) + [KIND_INDEX[v.kind] for v in VARIANTS if v.index > 0], dtype=np.uint8)
"""Kind id of every look id (looks 0-15 are the kinds' standard looks)."""
LOOK_HEIGHTS = np.array([k.height for k in KINDS] + [v.height for v in VARIANTS if v.index > 0], dtype=np.float32)
LOOK_VARIANT = np.array([0] * len(KINDS) + [v.index for v in VARIANTS if v.index > 0], dtype=np.int8)
"""Variant index of every look id."""


def get_variant(kind: str, name: str) -> Variant:
    """The variant ``name`` of ``kind``; an unknown one is refused naming the allowed ones."""
    for v in KIND_VARIANTS.get(kind, ()):
        if v.name == name:
            return v
    allowed = ", ".join(v.name for v in KIND_VARIANTS.get(kind, ())) or f"none ({kind!r} is not a target kind)"
    raise ValueError(f"variant {name!r} of {kind!r} is unknown; allowed: {allowed}")


def variant_texture(variant: Variant, base: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The texture of a non-standard variant, made from its kind's standard texture.

    The changes are bold on purpose (a whole-face colour, a band a quarter of the face high, a
    turned pattern, dark tears) so that they survive fog, deep-water light and a 64x64 camera.
    """
    tex = base.copy()
    v, u = np.mgrid[0:TEX, 0:TEX]
    kind = KINDS[KIND_INDEX[variant.kind]]
    if variant.recolor is not None:
        old = np.array(kind.color, dtype=np.float32) / 255.0
        new = np.array(variant.recolor, dtype=np.float32) / 255.0
        # Texels are the base colour times a shade or noise factor: keep the factor, swap the colour.
        near = np.abs(tex - old[None, None, :]).max(axis=2) < 0.35
        factor = tex.sum(axis=2, keepdims=True) / max(float(old.sum()), 1e-3)
        tex = np.where(near[..., None], np.clip(new * factor, 0.0, 1.0), tex)
    if variant.flipped:
        tex = (
            np.ascontiguousarray(np.rot90(tex, 2))
            if variant.kind == "wreck"
            else np.ascontiguousarray(tex.transpose(1, 0, 2))
        )
    if variant.band is not None:
        tex[(v >= 6) & (v <= 9)] = np.array(variant.band, dtype=np.float32) / 255.0
    if variant.bands is not None:
        tex[(v >= 4) & (v <= 11)] = np.array(_WHITE, dtype=np.float32) / 255.0
        tex[((v >= 2) & (v <= 4)) | ((v >= 10) & (v <= 12))] = np.array(variant.bands, dtype=np.float32) / 255.0
    if variant.vertical_bands is not None:
        tex[:, 5:11] = np.array(variant.vertical_bands, dtype=np.float32) / 255.0
    if variant.broken:
        tear = np.abs(u - 8 - 3 * np.sin(v * 0.9)) < 1.6 + 0.25 * rng.random((TEX, TEX))
        tex[tear] = np.array([0.02, 0.03, 0.03], dtype=np.float32)
        tex[v < 3] *= 0.45
    return np.clip(tex, 0.0, 1.0).astype(np.float32)
