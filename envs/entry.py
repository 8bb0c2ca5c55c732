"""The Gymnasium entry point of the registered ids: the underwater env, its ``mission`` as text or as
an index, so that RL libraries take a raw registered id as it is.

``mission_encoding`` is a keyword of ``gymnasium.make`` (and ``make_vec``):

- ``"text"`` (default): MiniGrid's ``MissionSpace``, e.g. ``"find a sunken ship"``; what MiniGrid code
  and the project's agents read;
- ``"index"``: the mission's index in :data:`~embodmem.envs.tasks.MISSIONS`, a ``Discrete(12)``
  (:class:`~embodmem.envs.wrappers.MissionToIndex`), which Stable-Baselines3, sb3-contrib and
  Gymnasium's shared-memory vector envs batch;
- ``"none"``: no ``mission`` key (:class:`~embodmem.envs.wrappers.DropMission`; single-task training).

    >>> import gymnasium as gym, embodmem
    >>> env = gym.make("embodmem:EmbodMem/Barrel-v0", mission_encoding="index", image_size=16)
    >>> obs, _ = env.reset(seed=0)
    >>> int(obs["mission"]), env.observation_space["mission"]
    (2, Discrete(12))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from embodmem.envs.changes import WorldChanges
from embodmem.envs.config import EnvConfig
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.envs.wrappers import DropMission, MissionToIndex

MISSION_ENCODINGS: tuple[str, ...] = ("text", "index", "none")
"""The values of ``mission_encoding``."""


def make_underwater(mission_encoding: str = "text", **kwargs: Any) -> gym.Env:
    """Build :class:`UnderwaterEnv` from ``kwargs``, with the ``mission`` encoded as asked."""
    if mission_encoding not in MISSION_ENCODINGS:
        raise ValueError(
            f"mission_encoding={mission_encoding!r} is not allowed; allowed: {', '.join(MISSION_ENCODINGS)}"
        )
    env: gym.Env = UnderwaterEnv(**kwargs)
    if mission_encoding == "index":
        env = MissionToIndex(env)
    elif mission_encoding == "none":
        env = DropMission(env)
    return env


def make_env(
    config: EnvConfig, tasks: Sequence[str], world_seed: int, changes: WorldChanges | None = None
) -> UnderwaterEnv:
    """The harness's one way to build its environment (the app, the GEM rows, replay and rerun):
    ``config`` is the run's settings, as the episode log keeps them; ``changes``: the world's
    changes over the sequence (``world.changes``; None: a static world)."""
    return UnderwaterEnv(tasks=tuple(tasks), world_seed=world_seed, config=config, changes=changes)


make_underwater.metadata = UnderwaterEnv.metadata  # type: ignore[attr-defined]  # gymnasium.make reads the render modes here
