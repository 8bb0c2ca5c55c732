"""Tours: a recorded walk through one world, its replay, and what the camera really showed on it.

A tour is data (world seed, episode seed, task light, the action string), so every answerer watches
exactly the same observations and another harness can replay it. It is walked once by
:class:`TourGuide`, a frontier explorer that only explores (it reads observations only). The ground
truth (:class:`TourTruth`) comes from the environment's privileged per-frame visibility, the same one
the runner uses for its ``target_in_view`` measure: which target instances covered at least
``VISIBLE_FRACTION`` of the image, frame by frame. Only the question generator and the oracle read it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from embodmem.agents.base import Observation, RecognitionEmbedder
from embodmem.agents.explorer import FrontierExplorer
from embodmem.envs.config import EnvConfig
from embodmem.envs.objects import KINDS, TARGET_KINDS
from embodmem.envs.spec import Action, SensorSpec
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.eqa.files import Tour

TOUR_TASK = "wreck"
"""The task whose light the tour is walked in (shallow water); its mission plays no part."""


@dataclass
class InstanceTruth:
    """One target instance the camera showed: when, how often, and where it lies (privileged)."""

    kind: str
    instance: int
    first_step: int
    frames: int
    cells: list[tuple[int, int]]


@dataclass
class TourTruth:
    """What entered the camera on a tour, from the environment's privileged visibility."""

    world_size: int
    cell_size_m: float
    seen: dict[tuple[str, int], InstanceTruth] = field(default_factory=dict)
    """Target instances clearly visible (``VISIBLE_FRACTION`` of the image) in at least one frame."""
    glimpsed_kinds: set[str] = field(default_factory=set)
    """Target kinds with any pixel on screen in any frame (seen clearly or not)."""
    instance_count: dict[str, int] = field(default_factory=dict)
    """Instances of each target kind in the world."""
    variants: dict[tuple[str, int], str] = field(default_factory=dict)
    """The appearance variant (its words, ``Variant.phrase``) of each seen instance, when the world
    has variants (``EnvConfig.instance_goals``); empty otherwise."""

    def seen_instances(self, kind: str, min_frames: int = 1) -> list[InstanceTruth]:
        return sorted(
            (t for t in self.seen.values() if t.kind == kind and t.frames >= min_frames), key=lambda t: t.first_step
        )

    def borderline(self, kind: str, min_frames: int) -> bool:
        """Some instance of ``kind`` was seen, but in fewer than ``min_frames`` frames."""
        return any(t.kind == kind and 0 < t.frames < min_frames for t in self.seen.values())


def make_env(env: EnvConfig, world_seed: int) -> UnderwaterEnv:
    return UnderwaterEnv(tasks=(TOUR_TASK,), world_seed=world_seed, config=env)


class TourGuide(FrontierExplorer):
    """A frontier explorer that never stops to approach anything: it looks around the world."""

    name = "tour_guide"

    def decide(self, observation: Observation) -> int:
        action = self.frontier_action()
        return int(Action.TURN_RIGHT) if action is None else action


def _record(env: UnderwaterEnv, truth: TourTruth, step: int) -> None:
    """Fold the last frame's privileged visibility into ``truth``."""
    truth.glimpsed_kinds.update(k for k in env.visible_pixels() if k in TARGET_KINDS)
    for kind, inst in env.visible_instances():
        t = truth.seen.get((kind, inst))
        if t is None:
            cells = env.world.instance_cells(kind)[inst]
            truth.seen[(kind, inst)] = InstanceTruth(kind, inst, step, 1, [(int(x), int(y)) for x, y in cells])
        else:
            t.frames += 1


def walk_tour(
    env_config: EnvConfig,
    world_seed: int,
    seed: int,
    steps: int,
    embedder: RecognitionEmbedder,
) -> tuple[Tour, TourTruth]:
    """Walk ``steps`` steps with :class:`TourGuide` from the world's first fixed start; the tour and
    its ground truth (with each seen instance's variant, read from the world, when it has variants)."""
    env = make_env(env_config, world_seed)
    guide = TourGuide(embedder)
    obs, _ = env.reset(seed=seed)
    guide.reset(obs, env.sensor_spec)
    truth = new_truth(env)
    _record(env, truth, 0)
    actions = []
    for step in range(1, steps + 1):
        action = guide.act(obs)
        actions.append(str(action))
        obs, _, terminated, truncated, _ = env.step(action)
        _record(env, truth, step)
        if terminated or truncated:
            break
    world = env.world
    if world is not None and world.has_variants:
        truth.variants = {key: world.variant_of(*key).phrase for key in truth.seen}
    end = (int(env.agent_pos[0]), int(env.agent_pos[1]), int(env.agent_dir))
    return Tour(world_seed, seed, "".join(actions), end), truth


def new_truth(env: UnderwaterEnv) -> TourTruth:
    counts = {k.name: k.instances for k in KINDS if k.is_target}
    return TourTruth(world_size=env.width, cell_size_m=env.cell_size_m, instance_count=counts)


class TourMismatchError(ValueError):
    """A replayed tour did not end where it was recorded to (other env settings or code)."""


def replay_tour(env_config: EnvConfig, tour: Tour) -> Iterator[tuple[int, Observation, SensorSpec]]:
    """The tour's observations, step by step (step 0 is the start); checks the end pose."""
    env = make_env(env_config, tour.world_seed)
    obs, _ = env.reset(seed=tour.seed)
    yield 0, obs, env.sensor_spec
    for step, a in enumerate(tour.actions, start=1):
        obs, _, _, _, _ = env.step(int(a))
        yield step, obs, env.sensor_spec
    end = (int(env.agent_pos[0]), int(env.agent_pos[1]), int(env.agent_dir))
    if end != tour.end_pose:
        raise TourMismatchError(
            f"tour {tour.key}: the replay ended at {end}, the file says {tour.end_pose}; "
            "the question file was made with other env settings or another version of the env"
        )


def cell_distance(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> float:
    """Smallest distance in cells between two sets of cells."""
    pa = np.asarray(a, dtype=float)
    pb = np.asarray(b, dtype=float)
    return float(np.min(np.hypot(pa[:, None, 0] - pb[None, :, 0], pa[:, None, 1] - pb[None, :, 1])))
