"""Our kinds on MiniGrid's grid: one :class:`SeabedObject` per occupied cell, for MiniGrid's grid,
top-down views and wrappers. It never touches MiniGrid's global tables (``OBJECT_TO_IDX``,
``COLOR_TO_IDX``, ``COLORS``): importing the project must not change stock MiniGrid envs.
"""

from __future__ import annotations

import numpy as np
from minigrid.core.constants import OBJECT_TO_IDX
from minigrid.core.world_object import WorldObj
from minigrid.utils.rendering import fill_coords, point_in_circle, point_in_rect

from embodmem.envs.objects import KIND_INDEX, KINDS

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
