"""Fish and drifting particles: how they move each step, for one world or a batch of worlds.

The random draws stay with each world's own generator (so a world in a batch sees the same stream
as alone); only the arithmetic is shared, so one call moves the fish of every world.
"""

from __future__ import annotations

import numpy as np

FISH_MOVES = np.array([(1, 0), (-1, 0), (0, 1), (0, -1), (0, 0)], dtype=np.float64)
"""East, west, south, north, stay."""
FISH_MOVE_PROBABILITY = 0.3
"""Chance that a fish drifts to a neighbouring cell in one step."""
PARTICLE_SINK = 0.35
"""Screen rows a particle falls per step."""
PARTICLE_SWAY = 0.8
"""Width of a particle's sideways drift per step (screen columns, uniform)."""


def drift(fish: np.ndarray, particles: np.ndarray, kinds: np.ndarray, draws: np.ndarray, image_size: int) -> np.ndarray:
    """Move the fish of B worlds and their camera particles one step.

    ``fish`` (B, n, 2) cell coordinates, ``particles`` (B, m, 3) screen row, column, brightness (moved
    in place), ``kinds`` (B, H, W) each world's kind map, ``draws`` (B, n + m) uniform draws of each
    world's generator. A fish whose draw is below :data:`FISH_MOVE_PROBABILITY` moves in the
    direction the draw picks, unless that cell is not water. Returns the new fish.
    """
    n = fish.shape[1]
    move = FISH_MOVES[np.minimum((draws[:, :n] * (4 / FISH_MOVE_PROBABILITY)).astype(np.int64), 4)]
    new = fish + move
    world = np.arange(len(kinds))[:, None]
    ok = kinds[world, new[..., 1].astype(np.int64), new[..., 0].astype(np.int64)] == 0
    particles[..., 0] += PARTICLE_SINK
    particles[..., 1] += (draws[:, n:] - 0.5) * PARTICLE_SWAY
    np.mod(particles[..., :2], image_size, out=particles[..., :2])
    return np.where(ok[..., None], new, fish)
