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


# ---------------------------------------------------------------- speed-ups equal the plain way


def _random_grid(rng: np.random.Generator, n: int = 40) -> OccupancyGrid:
    grid = OccupancyGrid(SensorSpec(5.0, 64, 75.0, 40.0, 24, 120.0, 40.0, n))
    grid.evidence[:] = rng.integers(-20, 12, size=(n, n)) * (rng.random((n, n)) < 0.3)
    grid.occupied = grid.evidence > 0
    return grid


def test_fast_scan_fit_equals_the_plain_one_bit_for_bit() -> None:
    """The padded, samples-that-score-only match gives exactly the per-sample scores, on every
    heading (two have samples a rounding away from the next cell), for cells inside, at and beyond
    the map's edge, with dropouts, echoes on and off obstacles and negative readings."""
    rng = np.random.default_rng(0)
    grid = _random_grid(rng)
    assert any(f.any() for f in grid._fragile)  # the float-way fix-up is exercised
    offsets = np.array([(dx, dy) for dy in range(-2, 3) for dx in range(-2, 3)])
    for _ in range(600):
        grid.evidence[:] = rng.integers(-20, 12, size=grid.evidence.shape) * (rng.random(grid.evidence.shape) < 0.3)
        grid.occupied = grid.evidence > 0
        cells = rng.integers(-4, 44, size=2)[None] + offsets
        sonar = rng.uniform(-1.0, 45.0, size=24)
        sonar[rng.random(24) < 0.3] = 40.0
        heading = int(rng.integers(4))
        fast, plain = grid.scan_fit(cells, heading, sonar), grid.scan_fit_reference(cells, heading, sonar)
        assert fast.tobytes() == plain.tobytes()
    far = np.array([[-30, 5], [80, 3]])  # beyond the padded copy: the plain way
    assert grid.scan_fit(far, 0, sonar).tobytes() == grid.scan_fit_reference(far, 0, sonar).tobytes()
    assert grid.echoes(sonar) == int((sonar / 5.0 < 8.0 - 1e-3).sum())


def test_one_march_looks_as_two_did() -> None:
    """look() marks seen and searched cells from one march, as two view_cells marches did."""
    rng = np.random.default_rng(1)
    for _ in range(200):
        grid = _random_grid(rng, 20)
        twin = _random_grid(rng, 20)
        twin.evidence[:] = grid.evidence
        twin.occupied = grid.occupied.copy()
        pose = (int(rng.integers(20)), int(rng.integers(20)), int(rng.integers(4)))
        rays = np.linspace(-0.65, 0.65, 11)
        look, searched = float(rng.choice([4.0, 3.0])), float(rng.choice([2.5, 4.0, 1.25, 6.0]))
        grid.look(pose, rays, look, searched)
        twin.seen[twin.view_cells(pose, rays, look)] = True
        twin.searched[twin.view_cells(pose, rays, min(look, searched) if searched < look else look)] = True
        assert (grid.seen == twin.seen).all() and (grid.searched == twin.searched).all()


def test_planning_stops_the_wavefront_early_with_the_same_path() -> None:
    """plan_path's wavefront stops at the start cell, and bfs_distance(stop, beside) at settled cells:
    the paths and the distances read are those of the full wavefront."""
    from embodmem.envs.geodesic import bfs_distance

    rng = np.random.default_rng(2)
    for _ in range(300):
        passable = rng.random((24, 24)) > 0.3
        goals = rng.random((24, 24)) < 0.01
        start = (int(rng.integers(24)), int(rng.integers(24)))
        full = bfs_distance(passable | goals, goals)
        path = plan_path(passable, start, goals)
        # The plain way: descend the full field.
        if not np.isfinite(full[start[1], start[0]]):
            assert path is None
            continue
        x, y = start
        expected = []
        while full[y, x] > 0:
            x, y = next(
                (x + dx, y + dy)
                for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1))
                if 0 <= x + dx < 24 and 0 <= y + dy < 24 and full[y + dy, x + dx] < full[y, x]
            )
            expected.append((x, y))
        assert path == expected
        wanted = rng.random((24, 24)) < 0.02
        source = np.zeros((24, 24), bool)
        source[start[1], start[0]] = True
        quick, whole = bfs_distance(passable, source, wanted, beside=True), bfs_distance(passable, source)

        def beside(d: np.ndarray) -> np.ndarray:
            padded = np.pad(d, 1, constant_values=np.inf)
            return np.minimum(
                d,
                np.min([padded[1 + b : 25 + b, 1 + a : 25 + a] for a, b in ((1, 0), (0, 1), (-1, 0), (0, -1))], axis=0)
                + 1,
            )

        assert (beside(quick)[wanted] == beside(whole)[wanted]).all()


def _update_plainly(grid: OccupancyGrid, pose: tuple[int, int, int], sonar_m: np.ndarray) -> None:
    """OccupancyGrid.update as it was, over the whole map: what the windowed one must equal."""
    x, y, h = pose
    n = grid.size
    r = np.asarray(sonar_m, dtype=np.float64) / grid.spec.cell_size_m
    px = np.floor(x + grid._dx[h]).astype(np.int64)
    py = np.floor(y + grid._dy[h]).astype(np.int64)
    inside = (px >= 0) & (px < n) & (py >= 0) & (py < n)
    passed = inside & (grid._t[None, :] < r[:, None] - 0.1)
    flat = py * n + px
    votes = -np.bincount(flat[passed], minlength=n * n)
    echo = r < grid.max_range - 1e-3
    if echo.any():
        j = np.minimum(np.searchsorted(grid._t, r[echo] + 0.05), len(grid._t) - 1)
        ok = inside[echo, j]
        votes += 2 * np.bincount(flat[echo, j][ok], minlength=n * n)
    grid.free.ravel()[flat[passed]] = True
    grid.evidence += np.clip(votes.reshape(n, n), -8, 8).astype(np.int16)
    np.clip(grid.evidence, -20, 100, out=grid.evidence)
    if 0 <= x < n and 0 <= y < n:
        grid.evidence[y, x] = min(grid.evidence[y, x], -1)
        grid.free[y, x] = True
    grid.occupied = grid.evidence > 0
    grid.free &= ~grid.occupied


def test_the_windowed_update_equals_the_whole_map_one() -> None:
    rng = np.random.default_rng(3)
    spec = SensorSpec(5.0, 64, 75.0, 40.0, 24, 120.0, 40.0, 30)
    fast, plain = OccupancyGrid(spec), OccupancyGrid(spec)
    for step in range(3000):
        pose = (int(rng.integers(-2, 32)), int(rng.integers(-2, 32)), int(rng.integers(4)))
        sonar = rng.uniform(0.0, 40.0, size=24)
        sonar[rng.random(24) < 0.4] = 40.0
        if step % 50 == 7:
            cell = (int(rng.integers(30)), int(rng.integers(30)))
            fast.mark_occupied(*cell)
            plain.mark_occupied(*cell)
        fast.update(pose, sonar)
        _update_plainly(plain, pose, sonar)
        for name in ("free", "occupied", "evidence"):
            assert (getattr(fast, name) == getattr(plain, name)).all(), (step, name)
