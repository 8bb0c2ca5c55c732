"""False memories for the poisoning experiments (``experiment.poison_k``, ``experiment.poison_place``).

Before each task after the first, the harness implants K frames that really show the task's target
kind, rendered in other worlds (the ``memory_bench`` split), as if the robot had seen them at cells of
this world far from every instance of that kind: random free cells (``far``), or cells the robot really
passed in earlier tasks of the run (``trail``), so that a check of the frame's provenance against the
robot's own trail cannot tell them apart. A careful agent checks before it trusts, so false memories
should cost it no more than having no memory.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from embodmem.envs.ground_truth import GroundTruthEnv
from embodmem.envs.objects import TARGET_KINDS
from embodmem.envs.tasks import get_task
from embodmem.splits import get_split

SOURCE_WORLDS = 8
"""Worlds of the memory_bench split the false frames are rendered in."""
MIN_DISTANCE_CELLS = 8.0
"""False memories are placed at least this far from every instance of the target."""


@lru_cache(maxsize=4)
def _target_frames(image_size: int) -> tuple[np.ndarray, np.ndarray]:
    from embodmem.embedding.frames import render_frames

    frames = render_frames(
        get_split("memory_bench").worlds(SOURCE_WORLDS), 150, image_size=image_size, seed=7, progress=False
    )
    return frames.images, frames.label


def false_memories(
    env: GroundTruthEnv, task: str, k: int, seed: int, trail: set[tuple[int, int]] | None = None
) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """``k`` frames of ``task``'s target from other worlds, and far poses in ``env``'s world (among the
    ``trail`` cells when given; all free cells when none of those is far enough)."""
    target = get_task(task).target
    rng = np.random.default_rng(seed)
    images, labels = _target_frames(env.sensor_spec.image_size)
    pool = np.nonzero(labels == TARGET_KINDS.index(target))[0]
    if len(pool) == 0:
        raise ValueError(f"no rendered frame shows {target!r}; raise SOURCE_WORLDS")
    chosen = images[rng.choice(pool, size=k, replace=len(pool) < k)]
    world = env.ground_truth().world
    cells = np.concatenate(world.instance_cells(target))

    def far_cells(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ys, xs = np.nonzero(mask)
        dist = np.min(np.hypot(xs[:, None] - cells[None, :, 0], ys[:, None] - cells[None, :, 1]), axis=1)
        keep = dist >= MIN_DISTANCE_CELLS
        return xs[keep], ys[keep]

    free = world.free()
    xs, ys = far_cells(free)
    if trail:
        on_trail = np.zeros_like(free)
        for x, y in trail:
            on_trail[y, x] = True
        txs, tys = far_cells(free & on_trail)
        if len(txs):
            xs, ys = txs, tys
    pick = rng.choice(len(xs), size=k, replace=len(xs) < k)
    poses = [(int(xs[i]), int(ys[i]), int(rng.integers(4))) for i in pick]
    return chosen, poses
