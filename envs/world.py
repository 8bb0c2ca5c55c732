"""Procedural seabed: one world per world seed, independent of the episode seed.

A :class:`World` is plain numpy data (a kind id per cell, an instance id per cell, the two fixed start
poses), so it is cheap to copy, compare and hash. The environment builds its MiniGrid grid from it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from embodmem.envs.geodesic import bfs_distance
from embodmem.envs.objects import KIND_INDEX, KIND_VARIANTS, KINDS, TARGET_KINDS, VARIANTS_PER_KIND, Variant

# Footprints (dx, dy offsets) of each kind; one is chosen at random and may be rotated 90 degrees.
FOOTPRINTS: dict[str, list[list[tuple[int, int]]]] = {
    "mining_robot": [[(0, 0)]],
    "pipeline": [[(i, 0) for i in range(5)], [(i, 0) for i in range(4)]],
    "barrel": [[(0, 0), (1, 0)]],  # a pair of drum stacks
    "wreck": [[(i, j) for i in range(4) for j in range(2)]],
    "electrical_box": [[(0, 0)]],
    "wind_station": [[(0, 0), (1, 0), (0, 1), (1, 1)]],
    "aircraft": [[(0, 0), (1, 0), (2, 0), (1, -1), (1, 1)], [(0, 0), (1, 0), (2, 0)]],
    "landing_platform": [[(0, 0), (1, 0), (0, 1), (1, 1)]],
    "cable": [[(i, 0) for i in range(3)]],
    "tower_wreckage": [[(0, 0), (1, 0), (0, 1), (1, 1)]],
    "metal_debris": [[(0, 0)]],
    "collapsed_tower": [[(i, 0) for i in range(3)]],
    "rock_arch": [[(0, 0), (1, 0), (2, 0)]],
}
DISTRACTOR_COUNTS: dict[str, int] = {
    "cable": 2,
    "tower_wreckage": 1,
    "metal_debris": 3,
    "collapsed_tower": 1,
    "rock_arch": 1,
}

MIN_SIZE = 24
"""Smallest world side that holds every target with its clearance."""


@dataclass
class World:
    """The static seabed of one world seed."""

    seed: int
    kinds: np.ndarray
    """(H, W) uint8: kind id per cell (0 = open water), indexed ``[y, x]``."""
    instances: np.ndarray
    """(H, W) int16: instance number of target cells (-1 elsewhere), per kind."""
    fixed_starts: tuple[tuple[int, int, int], tuple[int, int, int]]
    """Two fixed start poses (x, y, heading), as in the reference benchmark."""
    looks: np.ndarray | None = None
    """(H, W) uint8: look id per cell (the kind id, or a variant's look id; ``objects.LOOK_KIND``).
    None: every instance wears its kind's standard look (the looks are the kinds)."""
    instance_variants: dict[str, tuple[int, ...]] | None = None
    """Privileged ground truth, like target positions: the variant index of each instance of each
    target kind (a world with variants only). Agents never see it; the runner and the oracle may."""

    @property
    def has_variants(self) -> bool:
        """True for a world whose instances wear appearance variants (instance-goal worlds)."""
        return self.instance_variants is not None

    @property
    def look_map(self) -> np.ndarray:
        """What the camera renders: ``looks``, or the kinds for a world without variants."""
        return self.kinds if self.looks is None else self.looks

    def variant_of(self, kind: str, instance: int) -> Variant:
        """The appearance variant of one instance (privileged: runner, oracle, goal rendering)."""
        index = 0 if self.instance_variants is None else self.instance_variants[kind][instance]
        return KIND_VARIANTS[kind][index]

    def instance_of(self, kind: str, variant: str) -> int:
        """The instance of ``kind`` wearing ``variant``; a variant the world lacks is refused in one line."""
        for i in range(len(self.instance_cells(kind))):
            if self.variant_of(kind, i).name == variant:
                return i
        present = sorted({self.variant_of(kind, i).name for i in range(len(self.instance_cells(kind)))})
        raise ValueError(
            f"world {self.seed}: no {kind} wears variant {variant!r}; this world's {kind} variants: {', '.join(present)}"
        )

    @property
    def size(self) -> int:
        return int(self.kinds.shape[0])

    def free(self) -> np.ndarray:
        """(H, W) bool: cells the robot can occupy."""
        return self.kinds == 0

    def instance_cells(self, kind: str) -> list[np.ndarray]:
        """For each instance of ``kind``: an (n, 2) int array of its (x, y) cells."""
        k = KIND_INDEX[kind]
        mask = self.kinds == k
        out = []
        for i in range(int(self.instances[mask].max(initial=-1)) + 1):
            ys, xs = np.nonzero(mask & (self.instances == i))
            out.append(np.stack([xs, ys], axis=1))
        return out

    def digest(self) -> str:
        """Content hash, used in logs to check that a replay runs in the same world."""
        h = hashlib.sha256(self.kinds.tobytes())
        h.update(self.instances.tobytes())
        if self.looks is not None:  # worlds without variants keep the digest they always had
            h.update(self.looks.tobytes())
        return h.hexdigest()[:16]


def _rotate(cells: list[tuple[int, int]], quarter_turns: int) -> list[tuple[int, int]]:
    for _ in range(quarter_turns % 4):
        cells = [(-dy, dx) for dx, dy in cells]
    return cells


def _try_place(
    kinds: np.ndarray,
    reserved: np.ndarray,
    rng: np.random.Generator,
    footprint: list[tuple[int, int]],
    clearance: int,
    tries: int = 200,
) -> list[tuple[int, int]] | None:
    """Find a spot where ``footprint`` plus ``clearance`` cells around it is all unreserved water."""
    n = kinds.shape[0]
    fp = _rotate(footprint, int(rng.integers(4)))
    xs = [c[0] for c in fp]
    ys = [c[1] for c in fp]
    for _ in range(tries):
        ox = int(rng.integers(1 + clearance - min(xs), n - 1 - clearance - max(xs)))
        oy = int(rng.integers(1 + clearance - min(ys), n - 1 - clearance - max(ys)))
        cells = [(ox + dx, oy + dy) for dx, dy in fp]
        ok = all(
            not reserved[max(0, y - clearance) : y + clearance + 1, max(0, x - clearance) : x + clearance + 1].any()
            for x, y in cells
        )
        if ok:
            return cells
    return None


def _blob(rng: np.random.Generator, n: int, size: int) -> list[tuple[int, int]]:
    """A random connected blob of about ``size`` cells (a rock outcrop or a reef)."""
    x, y = int(rng.integers(1, n - 1)), int(rng.integers(1, n - 1))
    cells = {(x, y)}
    frontier = [(x, y)]
    while len(cells) < size and frontier:
        cx, cy = frontier[int(rng.integers(len(frontier)))]
        dx, dy = [(1, 0), (-1, 0), (0, 1), (0, -1)][int(rng.integers(4))]
        nx, ny = cx + dx, cy + dy
        if 1 <= nx < n - 1 and 1 <= ny < n - 1 and (nx, ny) not in cells:
            cells.add((nx, ny))
            frontier.append((nx, ny))
    return sorted(cells)


def generate_world(seed: int, size: int = 32, obstacle_density: float = 0.08, variants: bool = False) -> World:
    """Build the seabed for ``seed``: border rocks, targets, distractors, outcrops and reefs.

    ``variants=True`` builds the instance-goal world of ``seed``: every target kind gets
    :data:`~embodmem.envs.objects.VARIANTS_PER_KIND` instances (at least), each wearing a different
    appearance variant, so same-kind distractors are everywhere. It is a different seabed from the
    category world of the same seed (more instances are placed); ``variants=False`` generates
    exactly what it always did.

    Targets are placed first with a clear ring of water around them so every instance can be
    approached; then distractors; then rock and reef blobs that never touch a clearance ring. Water
    cells cut off from the main basin are filled with rock, so every free cell is reachable.

    Raises:
        ValueError: if ``size`` is below :data:`MIN_SIZE` or ``obstacle_density`` is outside [0, 0.3].
    """
    if size < MIN_SIZE:
        raise ValueError(f"size={size} is too small: the world must be at least {MIN_SIZE} cells wide")
    if not 0.0 <= obstacle_density <= 0.3:
        raise ValueError(f"obstacle_density={obstacle_density} must lie in [0, 0.3]")
    for attempt in range(20):
        world = _generate_once(np.random.default_rng([seed, attempt]), seed, size, obstacle_density, variants)
        if world is not None:
            return world if not variants else _dress(world, np.random.default_rng([seed, attempt, 7]))
    raise RuntimeError(f"could not generate world seed={seed} size={size}; lower obstacle_density")


def _dress(world: World, rng: np.random.Generator) -> World:
    """Give each instance of each target kind its own variant (a random order per kind)."""
    looks = world.kinds.copy()
    chosen: dict[str, tuple[int, ...]] = {}
    for kind in TARGET_KINDS:
        cells = world.instance_cells(kind)
        order = rng.permutation(VARIANTS_PER_KIND)
        # More instances than variants repeat the order (no kind has more than three today).
        picks = tuple(int(order[i % VARIANTS_PER_KIND]) for i in range(len(cells)))
        for inst, xy in enumerate(cells):
            looks[xy[:, 1], xy[:, 0]] = KIND_VARIANTS[kind][picks[inst]].look
        chosen[kind] = picks
    world.looks = looks
    world.instance_variants = chosen
    return world


def _generate_once(rng: np.random.Generator, seed: int, n: int, density: float, variants: bool = False) -> World | None:
    kinds = np.zeros((n, n), dtype=np.uint8)
    instances = np.full((n, n), -1, dtype=np.int16)
    reserved = np.zeros((n, n), dtype=bool)
    kinds[0, :] = kinds[-1, :] = kinds[:, 0] = kinds[:, -1] = KIND_INDEX["rock"]
    reserved[kinds > 0] = True

    # Larger worlds get proportionally more distractors, outcrops and fish; targets keep their counts.
    scale = max(1, (n * n) // (32 * 32))
    placements: list[tuple[str, int]] = [
        (k, max(KINDS[KIND_INDEX[k]].instances, VARIANTS_PER_KIND) if variants else KINDS[KIND_INDEX[k]].instances)
        for k in TARGET_KINDS
    ]
    placements += [(k, c * scale) for k, c in DISTRACTOR_COUNTS.items()]
    for name, count in placements:
        for inst in range(count):
            fp = FOOTPRINTS[name][int(rng.integers(len(FOOTPRINTS[name])))]
            cells = _try_place(kinds, reserved, rng, fp, clearance=1)
            if cells is None:
                return None
            for x, y in cells:
                kinds[y, x] = KIND_INDEX[name]
                instances[y, x] = inst if KINDS[KIND_INDEX[name]].is_target else -1
            for x, y in cells:  # clearance ring stays water
                reserved[max(0, y - 1) : y + 2, max(0, x - 1) : x + 2] = True

    target_cells = int(density * (n - 2) ** 2)
    placed = 0
    while placed < target_cells:
        kind = KIND_INDEX["rock"] if rng.random() < 0.6 else KIND_INDEX["reef"]
        for x, y in _blob(rng, n, int(rng.integers(3, 9))):
            if not reserved[y, x]:
                kinds[y, x] = kind
                placed += 1

    free = kinds == 0
    starts = _pick_starts(rng, free)
    source = np.zeros_like(free)
    source[starts[0][1], starts[0][0]] = True
    basin = np.isfinite(bfs_distance(free, source))
    if not basin[starts[1][1], starts[1][0]]:
        return None
    kinds[free & ~basin] = KIND_INDEX["rock"]
    return World(seed=seed, kinds=kinds, instances=instances, fixed_starts=starts)


def _pick_starts(rng: np.random.Generator, free: np.ndarray) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Two fixed starts near opposite corners (like a survey vessel's drop points)."""
    n = free.shape[0]
    out = []
    for cx, cy in ((2, 2), (n - 3, n - 3)):
        ys, xs = np.nonzero(free)
        d = np.abs(xs - cx) + np.abs(ys - cy)
        i = int(np.argmin(d + rng.random(d.shape) * 0.5))
        out.append((int(xs[i]), int(ys[i]), int(rng.integers(4))))
    return out[0], out[1]
