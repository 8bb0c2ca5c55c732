"""Instance goals (GOAT-Bench style): which cells are the goal instance, and its goal image.

A description or image goal names one instance of a kind; success is stopping within range of
*that* instance, and stopping at another instance of the same kind is a ``wrong_instance``. The
goal image is a view of the instance rendered from a fixed pose chosen per world and goal (the
pose with the most of the instance in view, 2-4 cells away), so the robot need not have been there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from embodmem.envs.camera import Camera, WaterLook
from embodmem.envs.objects import KIND_INDEX
from embodmem.envs.spec import DIR_TO_VEC
from embodmem.envs.tasks import Task
from embodmem.envs.world import World

GOAL_VIEW_DISTANCES = (2, 3, 4)
"""Cells between the goal image's camera and the instance."""


@dataclass(frozen=True)
class GoalView:
    """A goal image and the pose it was rendered from (privileged: for logs and checks)."""

    image: np.ndarray
    """(S, S, 3) uint8."""
    pose: tuple[int, int, int]
    """(x, y, heading) of the camera."""


def goal_instance(world: World, task: Task) -> int:
    """Index of the goal instance among ``world.instance_cells(task.target)`` (instance goals only)."""
    if not task.instance_goal or task.variant is None:
        raise ValueError(f"task {task.name!r} is a category goal: any instance of {task.target} will do")
    return world.instance_of(task.target, task.variant)


def instance_pixels(world: World, visibility: dict[str, np.ndarray], kind: str) -> np.ndarray:
    """Fog-weighted visible pixels of each instance of ``kind`` in a rendered frame."""
    k = KIND_INDEX[kind]
    n = len(world.instance_cells(kind))
    size = world.size
    out = np.zeros(n, dtype=np.float64)
    for layer in ("", "2"):
        kinds = visibility["kind" + layer]
        sel = (kinds == k) & (visibility["pixels" + layer] > 0)
        if sel.any():
            inst = world.instances[visibility["cell_y" + layer][sel] % size, visibility["cell_x" + layer][sel] % size]
            ok = inst >= 0
            out += np.bincount(inst[ok], weights=visibility["pixels" + layer][sel][ok], minlength=n)[:n]
    return out


def render_goal_view(
    world: World, task: Task, camera: Camera, padded: np.ndarray, pad: int, look: WaterLook
) -> GoalView:
    """The goal image of an instance goal: the candidate pose (2-4 cells from any of the instance's
    cells, facing it, on free water) that shows the most of the goal instance and the least of its
    same-kind siblings; no fish or particles (a clean reference picture). Deterministic per world."""
    inst = goal_instance(world, task)
    cells = world.instance_cells(task.target)[inst]
    free = world.free()
    best: tuple[float, tuple[int, int, int], np.ndarray] | None = None
    for cx, cy in cells.tolist():
        for heading in range(4):
            fx, fy = DIR_TO_VEC[heading]
            for dist in GOAL_VIEW_DISTANCES:
                x, y = cx - fx * dist, cy - fy * dist
                if not (0 <= x < world.size and 0 <= y < world.size and free[y, x]):
                    continue
                image, vis = camera.render(padded, pad, x, y, heading, look)
                pixels = instance_pixels(world, vis, task.target)
                score = float(pixels[inst] - 2.0 * (pixels.sum() - pixels[inst]))
                if best is None or score > best[0]:
                    best = (score, (int(x), int(y), heading), image)
    if best is None:
        raise RuntimeError(f"world {world.seed}: no free pose sees the goal of {task.name}")
    return GoalView(image=best[2], pose=best[1])


def instance_distance_maps(world: World, kind: str, cell_size_m: float) -> np.ndarray:
    """(instances, H, W) float32: metres from each cell to the nearest cell of each instance of ``kind``."""
    n = world.size
    yy, xx = np.mgrid[0:n, 0:n].astype(np.float32)
    maps = [
        np.min(np.hypot(xx[None] - c[:, 0, None, None], yy[None] - c[:, 1, None, None]), axis=0) * cell_size_m
        for c in world.instance_cells(kind)
    ]
    return np.stack(maps)


def goal_cells_seen(world: World, task: Task, seen_cells: set[tuple[str, int, int]]) -> set[tuple[int, int]]:
    """The (x, y) among ``seen_cells`` ((kind, x, y) of target cells seen) that belong to the goal:
    any instance of the kind for a category goal, the goal instance only for an instance goal."""
    cells = {(x, y) for kind, x, y in seen_cells if kind == task.target}
    if not task.instance_goal:
        return cells
    goal = goal_instance(world, task)
    return {(x, y) for x, y in cells if int(world.instances[y, x]) == goal}
