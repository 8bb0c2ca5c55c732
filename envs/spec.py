"""Public contract of the underwater environments: actions, and the sensor description agents may read.

Agents import from here (and the world-free grid geometry of :mod:`embodmem.envs.geodesic`), never
from the world generator: everything in this module is information a
real robot would have (its action set, its camera and sonar geometry, the size of a map cell), nothing
about where things are.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import TypedDict

import numpy as np
from numpy.typing import NDArray


class Action(IntEnum):
    """Discrete actions. The reference benchmark's ascend/descend are dropped: the world is 2-D."""

    TURN_LEFT = 0
    TURN_RIGHT = 1
    FORWARD = 2
    STOP = 3
    BACKWARD = 4
    STRAFE_LEFT = 5
    STRAFE_RIGHT = 6
    # MiniGrid's names for the same actions (aliases: not extra actions), for MiniGrid tools that read
    # ``env.actions.forward`` and the like (e.g. ``minigrid.wrappers.NoDeath``).
    left = 0
    right = 1
    forward = 2
    done = 3


ACTION_NAMES: dict[int, str] = {a.value: a.name.lower() for a in Action}
"""Action index -> name (``turn_left`` ...); iterating ``Action`` skips the MiniGrid aliases."""


class _ObservationAlways(TypedDict):
    image: NDArray[np.uint8]
    """(H, W, 3) camera frame, fogged with the depth of the water."""
    sonar: NDArray[np.float32]
    """(beams,) ranges in metres (``inf`` where nothing echoes or the ping dropped out)."""
    pose: NDArray[np.float32]
    """(3,) [x, y, heading]: where the robot believes it is, in cells (dead reckoning)."""
    mission: str
    """The task in words (``"find oil drums"``, or one instance's description)."""


class Observation(_ObservationAlways, total=False):
    """What an agent reads each step: the underwater env's observation (its ``observation_space``):
    always ``image``, ``sonar``, ``pose`` and ``mission``; the keys below only when configured."""

    image_left: NDArray[np.uint8]
    image_right: NDArray[np.uint8]
    image_back: NDArray[np.uint8]
    """Extra camera views (``extra_views``), a quarter, half or three quarters turned."""
    topdown: NDArray[np.uint8]
    """MiniGrid's 7x7 egocentric view as 56x56 RGB (``topdown``: for baselines, not the memory agent)."""
    goal_image: NDArray[np.uint8]
    """With ``instance_goals``: a rendered view of the goal instance (zeros for category goals)."""


# Heading index -> unit step (dx, dy) in grid cells, MiniGrid convention: 0 east, 1 south, 2 west, 3 north.
DIR_TO_VEC: tuple[tuple[int, int], ...] = ((1, 0), (0, 1), (-1, 0), (0, -1))


@dataclass(frozen=True)
class SensorSpec:
    """Geometry of the robot's sensors, as a datasheet would give it.

    Observations report the pose in grid cells (``pose = [x, y, heading]``, heading an index into
    ``DIR_TO_VEC``) and sonar ranges in metres; ``cell_size_m`` converts between the two.
    """

    cell_size_m: float
    """Metres per grid cell."""
    image_size: int
    """Side of the square first-person camera image, in pixels."""
    camera_fov_deg: float
    """Horizontal field of view of each camera."""
    view_range_m: float
    """Distance at which fog hides everything (depends on the light level)."""
    sonar_beams: int
    """Number of beams in the sonar fan (0 when the sonar is off)."""
    sonar_fov_deg: float
    """Angular width of the sonar fan, centred on the heading."""
    sonar_max_range_m: float
    """Range reported when a beam hits nothing."""
    grid_size: int
    """Side of the square world in cells (the survey area's extent is known to the operator)."""
    extra_views: tuple[str, ...] = ()
    """Names of extra camera views present in the observation (``image_left`` ...)."""
    odometry_drift_pct: float = 0.0
    """Drift the dead reckoning is specified to, in % of the distance travelled; the navigation
    unit's datasheet figure, not its error now."""
    odometry_noise_cells: float = 0.0
    """Random-walk noise of the dead reckoning per move and axis, in cells (datasheet)."""

    @property
    def exact_pose(self) -> bool:
        """The pose observation is the true pose (no drift, no noise): nothing to re-localise."""
        return self.odometry_drift_pct == 0 and self.odometry_noise_cells == 0

    def sonar_angles(self) -> list[float]:
        """Beam angles in radians relative to the heading (negative = left), evenly spaced."""
        import math

        if self.sonar_beams <= 1:
            return [0.0] * self.sonar_beams
        half = math.radians(self.sonar_fov_deg) / 2
        step = 2 * half / (self.sonar_beams - 1)
        return [-half + i * step for i in range(self.sonar_beams)]
