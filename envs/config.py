"""``EnvConfig``: every setting of the underwater world, defined and checked once.

:class:`~embodmem.envs.underwater.UnderwaterEnv` takes these as keyword arguments (``gymnasium.make``
passes them through) or as a whole ``config``; the Hydra ``env`` group is this dataclass, so the
YAML files in ``configs/env/`` hold only what differs from the defaults below.

Example:
    >>> EnvConfig(size=64).step_budget
    1024
    >>> EnvConfig(success_distance_m=2.0)
    Traceback (most recent call last):
    ...
    ValueError: EnvConfig.success_distance_m: 2.0 is not allowed; allowed: a number >= EnvConfig.cell_size_m (5)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from embodmem.checks import Range, check_ranges, check_types, not_allowed

EXTRA_VIEWS = {"image_left": 3, "image_right": 1, "image_back": 2}
"""Extra camera views: name -> quarter turns clockwise from the heading."""

STEPS_PER_CELL = 16
"""Default step budget per task: this many steps per cell of the world's side."""


@dataclass
class EnvConfig:
    """The underwater world and the robot's sensors."""

    size: int = 32
    """World side in cells (24-512)."""
    cell_size_m: float = 5.0
    """Metres per cell."""
    success_distance_m: float = 10.0
    """Stop within this distance of a target instance to succeed (>= cell_size_m: the robot cannot
    stand inside a target)."""
    max_steps: Optional[int] = None
    """Step budget per task (None: 16 x size)."""
    image_size: int = 64
    """First-person camera side in pixels (16-512)."""
    fov_deg: float = 75.0
    """Camera field of view in degrees (10-170)."""
    extra_views: list[str] = field(default_factory=list)
    """Extra cameras: image_left, image_right, image_back."""
    topdown: bool = False
    """Add MiniGrid's egocentric top-down view to observations."""
    sonar_beams: int = 24
    """Beams in the sonar fan (0-512)."""
    sonar_fov_deg: float = 120.0
    """Sonar fan width in degrees."""
    sonar_range_m: float = 40.0
    """Sonar maximum range."""
    sonar_noise_m: float = 0.0
    """Gaussian noise on sonar ranges."""
    odometry_noise: float = 0.0
    """Random-walk noise added to the reported pose per move, per axis, in cells."""
    odometry_drift_pct: float = 0.0
    """Dead-reckoning drift per move, percent of the distance moved, in a slowly wandering direction
    (envs/odometry.py; 0.1-1 is a DVL-aided INS with bottom lock, docs/design.md "Drift")."""
    odometry_carry: bool = False
    """Keep the pose error across the tasks of one world visit instead of starting each task exact."""
    sonar_dropout: float = 0.0
    """Probability that a sonar beam loses its echo and reads the maximum range (0-1)."""
    view_range_m: float = 40.0
    """Visibility in shallow water."""
    deep_view_range_m: float = 25.0
    """Visibility in deep water."""
    n_fish: Optional[int] = None
    """Fish in the world (None: size^2 / 80)."""
    obstacle_density: float = 0.08
    """Share of cells covered by rock outcrops and reefs (0-0.3)."""
    start_min_distance_m: float = 50.0
    """Random starts lie at least this far (shortest path) from the nearest success cell."""
    instance_goals: bool = False
    """Build the world with appearance variants (3 instances per target kind, each its own look) and
    add ``goal_image`` to the observation. Switched on by itself when the tasks hold an instance goal."""

    def __post_init__(self) -> None:
        if isinstance(self.extra_views, tuple):
            self.extra_views = list(self.extra_views)
        check_types(self)
        check_ranges(type(self).__name__, vars(self), LIMITS)
        if self.success_distance_m < self.cell_size_m:
            raise ValueError(
                not_allowed(
                    f"{type(self).__name__}.success_distance_m",
                    self.success_distance_m,
                    f"a number >= {type(self).__name__}.cell_size_m ({self.cell_size_m:g})",
                )
            )
        for view in self.extra_views:
            if view not in EXTRA_VIEWS:
                raise ValueError(not_allowed(f"{type(self).__name__}.extra_views", view, ", ".join(EXTRA_VIEWS)))

    @property
    def step_budget(self) -> int:
        """Steps per task: ``max_steps``, or 16 per cell of the world's side."""
        return self.max_steps if self.max_steps is not None else STEPS_PER_CELL * self.size

    @property
    def fish(self) -> int:
        """Fish in the world: ``n_fish``, or one per 80 cells."""
        return self.n_fish if self.n_fish is not None else self.size * self.size // 80


LIMITS: dict[str, Range] = {
    "size": Range(24, 512, integer=True),
    "cell_size_m": Range(0, low_open=True),
    "success_distance_m": Range(0, low_open=True),
    "max_steps": Range(1, integer=True),
    "image_size": Range(16, 512, integer=True),
    "fov_deg": Range(10, 170),
    "sonar_beams": Range(0, 512, integer=True),
    "sonar_fov_deg": Range(0, 360, low_open=True),
    "sonar_range_m": Range(0, low_open=True),
    "sonar_noise_m": Range(0),
    "odometry_noise": Range(0),
    "odometry_drift_pct": Range(0, 100),
    "sonar_dropout": Range(0, 1),
    "view_range_m": Range(0, low_open=True),
    "deep_view_range_m": Range(0, low_open=True),
    "n_fish": Range(0, integer=True),
    "obstacle_density": Range(0, 0.3),
    "start_min_distance_m": Range(0),
}
"""Allowed values of the numeric fields (None values of optional fields pass)."""
