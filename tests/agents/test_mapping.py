"""Occupancy grid and path planning of the agents (agents/mapping.py)."""

from __future__ import annotations

import numpy as np

from embodmem.agents.mapping import OccupancyGrid, facing, plan_path, step_toward, turn_toward
from embodmem.envs.camera import Sonar, pad_kinds
from embodmem.envs.objects import KIND_INDEX
from embodmem.envs.spec import Action, SensorSpec


def _spec(n: int = 12, beams: int = 25) -> SensorSpec:
    return SensorSpec(5.0, 64, 75.0, 40.0, beams, 120.0, 40.0, n)


def test_grid_from_sonar_on_a_hand_built_layout() -> None:
    spec = _spec()
    kinds = np.zeros((12, 12), np.uint8)
    kinds[:, 8] = KIND_INDEX["rock"]
    sonar = Sonar(np.radians(np.linspace(-60, 60, 25)), 8.0)
    grid = OccupancyGrid(spec)
    for _ in range(3):
        ranges = sonar.scan(pad_kinds(kinds, sonar.reach), sonar.reach, 3, 5, 0) * spec.cell_size_m
        grid.update((3, 5, 0), ranges)
    assert grid.occupied[5, 8] and grid.occupied[4, 8] and grid.occupied[6, 8]
    assert grid.free[5, 4:8].all()
    assert not grid.occupied[:, :8].any()  # nothing in front of the wall is called occupied
    grid.mark_occupied(4, 5)
    assert grid.occupied[5, 4] and not grid.free[5, 4]


def test_plan_path_goes_around_obstacles() -> None:
    passable = np.ones((5, 5), bool)
    passable[1:4, 2] = False
    goals = np.zeros((5, 5), bool)
    goals[2, 4] = True
    path = plan_path(passable, (0, 2), goals)
    assert path is not None and path[-1] == (4, 2)
    assert len(path) == 8  # shortest 4-connected detour around the wall
    assert all(passable[y, x] for x, y in path)
    assert plan_path(passable, (4, 2), goals) == []
    passable[:, 2] = False
    assert plan_path(passable, (0, 2), goals) is None


def test_turning_and_facing() -> None:
    assert turn_toward(0, 0) == Action.FORWARD
    assert turn_toward(0, 1) == Action.TURN_RIGHT
    assert turn_toward(0, 3) == Action.TURN_LEFT
    assert step_toward((2, 2, 3), (2, 1)) == Action.FORWARD
    assert step_toward((2, 2, 0), (2, 3)) == Action.TURN_RIGHT
    assert facing((0, 0), (5, 1)) == 0 and facing((0, 0), (0, -4)) == 3
