"""Dead reckoning and sonar degradation: what a DVL/IMU-aided AUV believes about where it is.

The robot's pose observation is its dead-reckoned estimate, not the truth. Its error has two parts:

- a **drift** that grows with the distance travelled: each move adds ``drift_pct`` percent of its
  length in a bias direction that wanders slowly (a heading-gyro bias, a DVL scale error, an
  unmodelled current), so over a straight leg the error is ``drift_pct`` % of the distance travelled,
  the way navigation figures for DVL-aided INS are quoted (docs/design.md, "Drift");
- a **random walk**: each move adds Gaussian noise of ``noise_cells`` per axis (the old
  ``odometry_noise``).

With ``carry`` the error is kept across the tasks of one world visit (a real robot does not get its
true position back between missions); without it, every task starts from the true pose.
The true pose stays in the environment (``agent_pos``); only the belief reaches the observation.

Example:
    >>> import numpy as np
    >>> dr = DeadReckoning(noise_cells=0.0, drift_pct=1.0, carry=True)
    >>> rng = np.random.default_rng(0)
    >>> dr.start_visit(rng)
    >>> for _ in range(100):
    ...     dr.move(rng)
    >>> round(float(np.hypot(*dr.error)), 2) <= 1.0  # at most 1% of 100 cells
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

BIAS_CORRELATION_MOVES = 400.0
"""Moves over which the drift's direction decorrelates (its random walk has variance 2 / this per
move): long compared with one task, so the error keeps growing across a visit rather than averaging
out from move to move."""


@dataclass
class DeadReckoning:
    """The robot's position error in cells, accumulated move by move."""

    noise_cells: float = 0.0
    """Random-walk noise per move, per axis (cells)."""
    drift_pct: float = 0.0
    """Drift per move, percent of the distance moved."""
    carry: bool = False
    """Keep the error across tasks of one world visit."""
    error: np.ndarray = field(default_factory=lambda: np.zeros(2, dtype=np.float64))
    """Believed minus true position (cells)."""
    bias_angle: float = 0.0
    """Current direction of the drift (radians)."""
    started: bool = False

    def start_visit(self, rng: np.random.Generator) -> None:
        """A new world visit: the robot knows where it is (a GPS fix at the surface)."""
        self.error = np.zeros(2, dtype=np.float64)
        self.bias_angle = float(rng.uniform(0.0, 2 * math.pi)) if self.drift_pct > 0 else 0.0
        self.started = True

    def start_task(self, rng: np.random.Generator, new_visit: bool) -> None:
        """Start of a task: the error carries over within a visit when ``carry`` is on."""
        if new_visit or not self.carry or not self.started:
            self.start_visit(rng)

    def move(self, rng: np.random.Generator, cells: float = 1.0) -> None:
        """The robot moved ``cells``: the error grows. Draws nothing when there is no noise (so clean
        worlds give the same random streams as before the model existed)."""
        if self.drift_pct > 0:
            self.bias_angle += float(rng.normal(0.0, math.sqrt(2.0 / BIAS_CORRELATION_MOVES)))
            step = self.drift_pct / 100.0 * cells
            self.error += step * np.array([math.cos(self.bias_angle), math.sin(self.bias_angle)])
        if self.noise_cells > 0:
            self.error += rng.normal(0.0, self.noise_cells, 2)


def degrade_sonar(
    ranges_m: np.ndarray, rng: np.random.Generator, noise_m: float, dropout: float, max_range_m: float
) -> np.ndarray:
    """Gaussian range noise, then dropouts: a beam that loses its echo (aeration, a steep or soft
    surface, the vehicle's own pitch) reads the maximum range, as if nothing were there.

    Draws nothing for a zero noise or dropout.

    Example:
        >>> r = degrade_sonar(np.full(1000, 10.0), np.random.default_rng(0), 0.0, 0.1, 40.0)
        >>> 0.07 < float(np.mean(r == 40.0)) < 0.13
        True
    """
    out = np.asarray(ranges_m, dtype=np.float64)
    if noise_m > 0:
        out = np.clip(out + rng.normal(0.0, noise_m, out.shape), 0.0, max_range_m)
    if dropout > 0:
        out = np.where(rng.random(out.shape) < dropout, max_range_m, out)
    return out
