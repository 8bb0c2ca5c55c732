"""Occupancy grid and path planning of the agents (agents/mapping.py)."""

from __future__ import annotations

import numpy as np

from embodmem.agents.mapping import ESTABLISHED, OccupancyGrid, facing, plan_path, step_toward, turn_toward
from embodmem.envs.camera import Sonar, pad_kinds
from embodmem.envs.objects import KIND_INDEX, TARGET_KINDS
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


def _scan_fit_plainly(grid: OccupancyGrid, cells: np.ndarray, heading: int, sonar_m: np.ndarray) -> np.ndarray:
    """:meth:`OccupancyGrid.scan_fit` the plain numpy way, every beam sample of every cell."""
    cells = np.asarray(cells, dtype=np.int64).reshape(-1, 2)
    n = grid.size
    r = np.asarray(sonar_m, dtype=np.float64) / grid.spec.cell_size_m
    px = np.floor(cells[:, 0, None, None] + grid._dx[heading][None]).astype(np.int64)
    py = np.floor(cells[:, 1, None, None] + grid._dy[heading][None]).astype(np.int64)
    inside = (px >= 0) & (px < n) & (py >= 0) & (py < n)
    solid = np.zeros(px.shape, dtype=bool)
    solid[inside] = grid.evidence[py[inside], px[inside]] >= ESTABLISHED
    echo = r < grid.max_range - 1e-3
    t = grid._t[None, :]
    at_echo = (np.abs(t - r[:, None]) <= 0.5) & echo[:, None]
    before = t < r[:, None] - 1.0
    hits = (solid & at_echo[None]).any(axis=2).sum(axis=1)
    blocked = np.asarray((solid & before[None]).any(axis=2))
    score = hits - blocked[:, echo].sum(axis=1) - 0.5 * blocked[:, ~echo].sum(axis=1)
    inside_cell = (cells[:, 0] >= 0) & (cells[:, 0] < n) & (cells[:, 1] >= 0) & (cells[:, 1] < n)
    here = np.zeros(len(cells), dtype=bool)
    here[inside_cell] = grid.occupied[cells[inside_cell, 1], cells[inside_cell, 0]]
    return np.where(here | ~inside_cell, -np.inf, score.astype(np.float64))


def test_fast_scan_fit_equals_the_plain_one_bit_for_bit() -> None:
    """The compiled match, which reads each beam only as far as it can score, gives exactly the
    per-sample scores, on every heading (two have samples a rounding away from the next cell), for
    cells inside, at and beyond the map's edge, with dropouts, echoes on and off obstacles and
    negative readings."""
    rng = np.random.default_rng(0)
    grid = _random_grid(rng)
    assert any((d - np.floor(d) > 1 - 1e-9).any() for d in grid._dx + grid._dy)  # samples a rounding off
    offsets = np.array([(dx, dy) for dy in range(-2, 3) for dx in range(-2, 3)])
    for _ in range(600):
        grid.evidence[:] = rng.integers(-20, 12, size=grid.evidence.shape) * (rng.random(grid.evidence.shape) < 0.3)
        grid.occupied = grid.evidence > 0
        cells = rng.integers(-4, 44, size=2)[None] + offsets
        sonar = rng.uniform(-1.0, 45.0, size=24)
        sonar[rng.random(24) < 0.3] = 40.0
        heading = int(rng.integers(4))
        fast, plain = grid.scan_fit(cells, heading, sonar), _scan_fit_plainly(grid, cells, heading, sonar)
        assert fast.tobytes() == plain.tobytes()
    far = np.array([[-30, 5], [80, 3]])
    assert grid.scan_fit(far, 0, sonar).tobytes() == _scan_fit_plainly(grid, far, 0, sonar).tobytes()
    assert grid.echoes(sonar) == int((sonar / 5.0 < 8.0 - 1e-3).sum())


def _grid_and_twin(rng: np.random.Generator) -> tuple[OccupancyGrid, OccupancyGrid]:
    """Two 20x20 grids with the same random obstacles (one to act on, one for the plain way)."""
    grid, twin = _random_grid(rng, 20), _random_grid(rng, 20)
    twin.evidence[:] = grid.evidence
    twin.occupied = grid.occupied.copy()
    return grid, twin


def test_one_march_looks_as_two_did() -> None:
    """look() marks seen and searched cells from one march, as two view_cells marches did."""
    rng = np.random.default_rng(1)
    for _ in range(200):
        grid, twin = _grid_and_twin(rng)
        pose = (int(rng.integers(20)), int(rng.integers(20)), int(rng.integers(4)))
        rays = np.linspace(-0.65, 0.65, 11)
        look, searched = float(rng.choice([4.0, 3.0])), float(rng.choice([2.5, 4.0, 1.25, 6.0]))
        grid.look(pose, rays, look, searched)
        twin.seen[twin.view_cells(pose, rays, look)] = True
        twin.searched[twin.view_cells(pose, rays, min(look, searched) if searched < look else look)] = True
        assert (grid.seen == twin.seen).all() and (grid.searched == twin.searched).all()


def _look_plainly(
    grid: OccupancyGrid,
    pose: tuple[int, int, int],
    angles: np.ndarray,
    look_range: float,
    searched_range: float | None,
    close_range: float | None,
    within: float | None,
    across: bool,
    beside: bool = False,
) -> None:
    """:meth:`OccupancyGrid.look` the plain numpy way (the model the compiled one must equal)."""

    def mark(target: np.ndarray, ok: np.ndarray, reach: float | None = None) -> None:
        near = ok.shape[1] if reach is None else len(np.arange(0.25, reach, 0.25))
        target[py[:, :near][ok[:, :near]], px[:, :near][ok[:, :near]]] = True

    px, py, ok = grid._in_view(pose, angles, look_range)
    if within is None:
        mark(grid.seen, ok)
    else:
        n = grid.size
        hit = np.zeros_like(ok)
        hit[ok] = grid.occupied[py[ok], px[ok]]
        hit &= (px > 0) & (py > 0) & (px < n - 1) & (py < n - 1)
        rays = np.nonzero(hit.any(axis=1))[0]
        first = hit[rays].argmax(axis=1)
        distance = (first + 1) * 0.25
        ox, oy = px[rays, first], py[rays, first]
        near = distance <= within
        grid.faced_closely[oy[near], ox[near]] = True
        far = ~near & ~grid.faced_closely[oy, ox]
        withheld = np.zeros_like(ok)
        t = (np.arange(ok.shape[1]) + 1) * 0.25
        withheld[rays[far]] = t[None, :] > (distance[far] - within)[:, None]
        withheld &= ok
        if across:
            cells = np.zeros_like(grid.seen)
            cells[py[withheld], px[withheld]] = True
            withheld[ok] = cells[py[ok], px[ok]]
        if beside:  # water beyond ``within`` that touches an inner object not faced closely
            unfaced = np.zeros((n + 2, n + 2), dtype=bool)
            unfaced[2:n, 2:n] = grid.occupied[1:-1, 1:-1] & ~grid.faced_closely[1:-1, 1:-1]
            touches = np.zeros_like(grid.seen)
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    touches |= unfaced[1 + dy : n + 1 + dy, 1 + dx : n + 1 + dx]
            cell_ok = np.zeros_like(ok)
            cell_ok[ok] = touches[py[ok], px[ok]] & ~grid.occupied[py[ok], px[ok]]
            withheld |= cell_ok & (t[None, :] > within)
        mark(grid.seen, ok & ~withheld)
    if close_range is not None:
        mark(grid.close, ok, close_range)
    mark(grid.searched, ok, searched_range)


def test_compiled_look_equals_the_plain_one() -> None:
    """look() (compiled) marks seen, close, searched and faced cells exactly as the numpy model does,
    with and without objects to face (withheld along the ray, across the view and beside objects),
    at the map's edge."""
    rng = np.random.default_rng(5)
    for _ in range(400):
        grid, twin = _grid_and_twin(rng)
        for name in ("seen", "close", "searched", "faced_closely"):
            marks = rng.random(grid.seen.shape) < 0.2
            setattr(grid, name, marks.copy())
            setattr(twin, name, marks.copy())
        pose = (int(rng.integers(20)), int(rng.integers(20)), int(rng.integers(4)))
        rays = np.linspace(-0.65, 0.65, 11)
        look = float(rng.choice([2.5, 4.0, 6.0]))
        searched = [None, 2.5, 4.0, 1.25][int(rng.integers(4))]
        close = [None, 2.0, 3.0][int(rng.integers(3))]
        within = [None, 1.0, 2.0, 3.0][int(rng.integers(4))]
        across = bool(rng.integers(2))
        beside = bool(rng.integers(2))
        grid.look(pose, rays, look, searched, close, within, across, beside)
        _look_plainly(twin, pose, rays, look, searched, close, within, across, beside)
        for name in ("seen", "close", "searched", "faced_closely"):
            assert (getattr(grid, name) == getattr(twin, name)).all(), name


def test_compiled_look_by_kind_marks_what_the_view_cells_are() -> None:
    """look_by_kind (compiled) marks, per kind, exactly the cells view_cells gives up to that kind's
    range: up to and including the first occupied cell of each ray, at the map's edge too."""
    rng = np.random.default_rng(4)
    for _ in range(300):
        grid = _random_grid(rng, 20)
        pose = (int(rng.integers(20)), int(rng.integers(20)), int(rng.integers(4)))
        rays = np.linspace(-0.65, 0.65, 11)
        ranges = rng.choice([1.0, 2.0, 2.5, 3.0, 4.0, 7.5], size=len(TARGET_KINDS))
        grid.look_by_kind(pose, rays, ranges)
        for k, reach in enumerate(ranges):
            expected = np.zeros_like(grid.occupied)
            expected[grid.view_cells(pose, rays, float(reach))] = True
            assert (grid.searched_by_kind[k] == expected).all()
        # look with kind_ranges marks the same, in one call with the look's own marks.
        both = _random_grid(rng, 20)
        both.occupied[:] = grid.occupied
        both.look(pose, rays, 4.0, 2.5, None, 2.0, True, True, kind_ranges=ranges)
        alone = _random_grid(rng, 20)
        alone.occupied[:] = grid.occupied
        alone.look(pose, rays, 4.0, 2.5, None, 2.0, True, True)
        assert (both.searched_by_kind == grid.searched_by_kind).all()
        for name in ("seen", "close", "searched", "faced_closely"):
            assert (getattr(both, name) == getattr(alone, name)).all(), name


def test_planning_stops_the_wavefront_early_with_the_same_path() -> None:
    """plan_path's search from the start takes the path a descent of the goals' full wavefront takes,
    and bfs_distance(stop, beside) stops at settled cells with the distances of the full wavefront."""
    from embodmem.envs.geodesic import bfs_distance

    rng = np.random.default_rng(2)
    for trial in range(600):
        passable = rng.random((24, 24)) > 0.3
        goals = rng.random((24, 24)) < (0.01, 0.05, 0.3)[trial % 3]  # a few goals, to a frontier's many
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


def _bfs_plainly(free: np.ndarray, sources: np.ndarray, stop: np.ndarray | None, beside: bool) -> np.ndarray:
    """The numpy wavefront bfs_distance was (each sweep grows the whole frontier)."""

    def grow(mask: np.ndarray) -> np.ndarray:
        grown = np.zeros_like(mask)
        grown[1:, :] |= mask[:-1, :]
        grown[:-1, :] |= mask[1:, :]
        grown[:, 1:] |= mask[:, :-1]
        grown[:, :-1] |= mask[:, 1:]
        return grown

    dist = np.full(free.shape, np.inf, dtype=np.float32)
    frontier = sources & free
    dist[frontier] = 0.0
    visited = frontier.copy()
    pending = None if stop is None else stop.copy()
    d = 0
    while frontier.any():
        if pending is not None:
            pending &= ~(visited | grow(visited)) if beside else ~visited
            if not pending.any():
                break
        d += 1
        frontier = grow(frontier) & free & ~visited
        visited |= frontier
        dist[frontier] = d
    return dist


def test_compiled_bfs_equals_the_wavefront() -> None:
    """bfs_distance (a compiled queue) gives the wavefront's distances bit for bit, stopping at the
    same level: with and without stop cells, beside or not, non-square maps, no source, sources on
    blocked cells."""
    from embodmem.envs.geodesic import bfs_distance

    rng = np.random.default_rng(6)
    for _ in range(400):
        shape = (int(rng.integers(1, 30)), int(rng.integers(1, 30)))
        free = rng.random(shape) > rng.uniform(0.0, 0.6)
        sources = rng.random(shape) < rng.choice([0.0, 0.01, 0.05])
        stop = None if rng.random() < 0.3 else rng.random(shape) < rng.choice([0.0, 0.01, 0.1])
        beside = bool(rng.integers(2))
        fast, plain = bfs_distance(free, sources, stop, beside), _bfs_plainly(free, sources, stop, beside)
        assert fast.dtype == plain.dtype and fast.tobytes() == plain.tobytes()


def test_where_a_kind_was_recognised_the_map_does_not_rule_it_out() -> None:
    """A frame that recognised drums marks its whole view cone, behind an object too; only cells
    looked at for drums more than a cell from that cone count as looked at without recognising."""
    grid = OccupancyGrid(SensorSpec(5.0, 64, 75.0, 40.0, 24, 120.0, 40.0, 32))
    grid.free[:] = True
    grid.occupied[16, 12] = True
    angles = np.linspace(-0.5, 0.5, 7)
    barrel = TARGET_KINDS.index("barrel")
    grid.searched_by_kind[barrel] = True
    recognised = np.array([kind == "barrel" for kind in TARGET_KINDS])
    grid.mark_recognised((10, 16, 0), angles, 4.0, recognised)
    ruled_out = grid.looked_at_without_recognising("barrel")
    assert grid.recognised_by_kind[barrel, 16, 13] and not ruled_out[16, 13]  # behind the object
    assert not ruled_out[16, 15] and not ruled_out[16, 9]  # one cell beyond the cone, and behind the robot
    assert ruled_out[16, 17] and ruled_out[10, 10]
    assert not grid.recognised_by_kind[TARGET_KINDS.index("wreck")].any()
    assert not grid.looked_at_without_recognising("wreck").any()  # never looked at for wrecks


def test_occupied_around_is_the_connected_component_in_the_window() -> None:
    """The compiled flood fill gives OpenCV's 8-connected component of the cell's window, cell for
    cell and in the same (row by row) order."""
    import cv2

    from embodmem.agents.map_kernels import joined_cells

    spec = SensorSpec(5.0, 64, 75.0, 40.0, 3, 60.0, 40.0, 12)
    rng = np.random.default_rng(5)
    for _ in range(300):
        grid = OccupancyGrid(spec)
        grid.occupied[:] = rng.random((12, 12)) < 0.4
        cell, radius = (int(rng.integers(12)), int(rng.integers(12))), int(rng.integers(0, 4))
        cx, cy = cell
        x0, y0 = max(cx - radius, 0), max(cy - radius, 0)
        window = grid.occupied[y0 : cy + radius + 1, x0 : cx + radius + 1].astype(np.uint8)
        if window[cy - y0, cx - x0]:
            _, labels = cv2.connectedComponents(window, connectivity=8)
            ys, xs = np.nonzero(labels == labels[cy - y0, cx - x0])
            expected = [(int(x) + x0, int(y) + y0) for x, y in zip(xs, ys)]
            assert [(x, y) for x, y in joined_cells(grid.occupied, cx, cy, radius).tolist()] == expected
        else:
            expected = [cell]
        assert list(grid.occupied_around(cell, radius)) == list(set(expected)) and len(expected) == len(set(expected))


def test_clean_views_equals_the_plain_march() -> None:
    """clean_views (compiled) keeps exactly the viewing cells from which no marched sample of the
    fan facing the judged cell lands on a foreign cell farther off than the judged cell plus half a
    cell, by numpy's distances."""
    from embodmem.agents.map_kernels import clean_views

    rng = np.random.default_rng(6)
    n = 20
    grid = _random_grid(rng, n)
    offsets = np.arange(-8, 9)
    table = np.hypot(offsets[None, :], offsets[:, None])
    rays = np.linspace(-0.3, 0.3, 5)
    fans = [grid.rays(h, rays, 5.0) for h in range(4)]
    along_x, along_y = np.stack([f[0] for f in fans]), np.stack([f[1] for f in fans])
    for _ in range(200):
        foreign = rng.random((n, n)) < 0.15
        cx, cy = int(rng.integers(n)), int(rng.integers(n))
        viewing = np.zeros((n, n), bool)
        for dx, dy in rng.integers(-2, 3, size=(6, 2)):
            if 0 <= cx + dx < n and 0 <= cy + dy < n:
                viewing[cy + dy, cx + dx] = True
        expected = np.zeros_like(viewing)
        for y, x in zip(*np.nonzero(viewing)):
            h = facing((int(x), int(y)), (cx, cy))
            px = np.floor(x + 0.5 + along_x[h]).astype(np.int64)
            py = np.floor(y + 0.5 + along_y[h]).astype(np.int64)
            inside = (px >= 0) & (px < n) & (py >= 0) & (py < n)
            hit = np.zeros_like(inside)
            hit[inside] = foreign[py[inside], px[inside]]
            far = np.hypot(px - x, py - y) > np.hypot(cx - x, cy - y) + 0.5
            expected[y, x] = not (hit & far).any()
        assert (clean_views(foreign, cx, cy, viewing, along_x, along_y, table) == expected).all()
