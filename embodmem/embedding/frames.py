"""Labelled camera frames rendered from the environments, for training and judging the embedder.

Each frame is labelled from what is actually visible in it (the renderer's per-column visibility,
weighted by fog), never from where the camera was pointed: a barrel hidden behind a rock is not a
barrel frame. Half the poses look at a target instance from 1-7 cells away, the rest are random,
and light alternates between shallow (10 lux) and deep (1.5 lux) water.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from embodmem.envs.objects import KIND_INDEX, KINDS, LOOK_KIND, N_LOOKS, TARGET_KINDS, VARIANTS
from embodmem.envs.spec import DIR_TO_VEC
from embodmem.envs.tasks import TASKS
from embodmem.envs.underwater import VISIBLE_FRACTION, UnderwaterEnv
from embodmem.splits import SPLITS

NO_TARGET = len(TARGET_KINDS)
"""Class id of frames where no target is clearly visible."""
CLASS_NAMES: tuple[str, ...] = TARGET_KINDS + ("none",)
TRAIN_WORLDS = range(SPLITS["embedder_train"].start, SPLITS["embedder_train"].stop)
VALIDATION_WORLDS = range(SPLITS["embedder_validation"].start, SPLITS["embedder_validation"].stop)
TEST_WORLDS = range(SPLITS["embedder_test"].start, SPLITS["embedder_test"].stop)
"""World seeds (embodmem.splits): training, checkpoint selection, and held-out embedder figures."""


@dataclass
class FrameSet:
    """Frames with labels: ``label`` is the dominant visible target kind (or NO_TARGET)."""

    images: np.ndarray
    """(N, S, S, 3) uint8."""
    label: np.ndarray
    """(N,) int64 class ids into CLASS_NAMES."""
    visible: np.ndarray
    """(N, 8) bool: which target kinds are visible at all (for retrieval precision)."""
    deep: np.ndarray
    """(N,) bool: rendered in deep-water light."""
    distractor: np.ndarray
    """(N,) int64 kind id of the dominant non-target thing in view (0 = open water)."""
    variant: np.ndarray
    """(N,) int64 variant index (0-2, ``objects.KIND_VARIANTS``) of the dominant target's
    dominant look; -1 for NO_TARGET frames. Always 0 in worlds without variants."""
    visible_variants: np.ndarray
    """(N, len(VARIANTS)) bool: which variants are visible at all (retrieval precision per variant)."""

    def __len__(self) -> int:
        return len(self.label)

    @staticmethod
    def concat(parts: list[FrameSet]) -> FrameSet:
        """The frames of ``parts`` one after another."""
        return FrameSet(
            **{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in dataclasses.fields(FrameSet)}
        )


RELEVANT_FRACTION = 0.0025
"""A kind counts as visible for retrieval when its fog-weighted pixels cover 0.25% of the frame
(10 pixels at 64x64: a thin pipeline in the distance); the frame's class label needs the
environment's "in view" share (1%)."""


_VARIANT_LOOKS = np.array([v.look for v in VARIANTS])
_LOOK_VARIANT_INDEX = np.full(N_LOOKS, -1, dtype=np.int64)
_LOOK_VARIANT_INDEX[_VARIANT_LOOKS] = [v.index for v in VARIANTS]


def look_pixels(env: UnderwaterEnv) -> np.ndarray:
    """Fog-weighted visible pixels per look id in the last frame (variants apart)."""
    vis = env._visibility
    counts = np.bincount(vis["look"], weights=vis["pixels"], minlength=N_LOOKS)
    return counts + np.bincount(vis["look2"], weights=vis["pixels2"], minlength=N_LOOKS)


def _label(env: UnderwaterEnv, threshold: float) -> tuple[int, np.ndarray, int, int, np.ndarray]:
    pixels = env.visible_pixels()
    target_px = np.array([pixels.get(k, 0.0) for k in TARGET_KINDS])
    relevant = RELEVANT_FRACTION * env.camera.size**2
    visible = target_px >= relevant
    label = int(np.argmax(target_px)) if target_px.max() >= threshold else NO_TARGET
    others = {k: v for k, v in pixels.items() if k not in TARGET_KINDS and v >= threshold}
    distractor = KIND_INDEX[max(others, key=lambda k: others[k])] if others else 0
    looks = look_pixels(env)
    variant = -1
    if label != NO_TARGET:
        of_kind = np.where(KIND_INDEX[TARGET_KINDS[label]] == LOOK_KIND, looks, -1.0)
        variant = int(_LOOK_VARIANT_INDEX[int(np.argmax(of_kind))])
    return label, visible, distractor, variant, looks[_VARIANT_LOOKS] >= relevant


def render_frames(
    world_seeds: range | list[int],
    frames_per_world: int = 200,
    image_size: int = 64,
    world_size: int = 32,
    seed: int = 0,
    progress: bool = True,
    variants: bool = False,
) -> FrameSet:
    """Render ``frames_per_world`` labelled frames in each world (deterministic in all arguments).

    ``variants=True`` renders the instance-goal worlds (three instances per kind, each its own
    appearance variant) instead of the category worlds of the same seeds."""
    rng = np.random.default_rng(seed)
    threshold = VISIBLE_FRACTION * image_size**2
    images, labels, visibles, deeps, distractors, variant_ids, visible_variants = [], [], [], [], [], [], []
    shallow_task, deep_task = TASKS["wreck"], TASKS["deep_wreck"]
    iterator = tqdm(list(world_seeds), desc="rendering frames", disable=not progress, unit="world")
    for world_seed in iterator:
        env = UnderwaterEnv(world_seed=int(world_seed), size=world_size, image_size=image_size, instance_goals=variants)
        env.reset(seed=int(rng.integers(2**31)))
        free = env.world.free()
        free_y, free_x = np.nonzero(free)
        instances = [(k, cells) for k in TARGET_KINDS for cells in env.world.instance_cells(k)]
        for _i in range(frames_per_world):
            env.task = deep_task if rng.random() < 0.5 else shallow_task
            pose = None
            if rng.random() < 0.6:
                _, cells = instances[int(rng.integers(len(instances)))]
                tx, ty = cells[int(rng.integers(len(cells)))]
                d = int(rng.integers(4))
                dist = int(rng.integers(1, 8))
                lateral = int(rng.integers(-(dist // 2), dist // 2 + 1))
                fx, fy = DIR_TO_VEC[d]
                x, y = tx - fx * dist - fy * lateral, ty - fy * dist + fx * lateral
                if 0 <= x < free.shape[1] and 0 <= y < free.shape[0] and free[y, x]:
                    pose = (int(x), int(y), d)
            if pose is None:
                j = int(rng.integers(len(free_x)))
                pose = (int(free_x[j]), int(free_y[j]), int(rng.integers(4)))
            env.agent_pos, env.agent_dir = pose[:2], pose[2]
            env._move_fish()
            obs = env.gen_obs()
            label, visible, distractor, variant, seen_variants = _label(env, threshold)
            images.append(obs["image"])
            labels.append(label)
            visibles.append(visible)
            deeps.append(env.task.deep)
            distractors.append(distractor)
            variant_ids.append(variant)
            visible_variants.append(seen_variants)
    return FrameSet(
        images=np.stack(images),
        label=np.array(labels, dtype=np.int64),
        visible=np.stack(visibles),
        deep=np.array(deeps),
        distractor=np.array(distractors, dtype=np.int64),
        variant=np.array(variant_ids, dtype=np.int64),
        visible_variants=np.stack(visible_variants),
    )


def kind_phrase(class_id: int) -> str:
    """Mission phrase of a target class ("a sunken ship")."""
    return KINDS[KIND_INDEX[CLASS_NAMES[class_id]]].phrase
