"""Wrappers that make the underwater envs fit RL libraries, and what fits from MiniGrid's own.

The env's ``mission`` is text (MiniGrid's ``MissionSpace``), which Stable-Baselines3 and Gymnasium's
shared-memory vector envs cannot batch (given it, they raise :class:`TextMissionError`, which names
the fix). :class:`MissionToIndex` turns it into the mission's index in
:data:`~embodmem.envs.tasks.MISSIONS` (a ``Discrete``), so a multi-task policy still knows what to
find; :class:`DropMission` removes it. The registered ids do the same with a keyword
(:mod:`embodmem.envs.entry`)::

    import gymnasium as gym
    envs = gym.make_vec("embodmem:EmbodMem/Wreck-v0", num_envs=4, vectorization_mode="async",
                        mission_encoding="index")

MiniGrid wrappers that work on the env as it is: ``ImgObsWrapper``, ``RGBImgObsWrapper``,
``RGBImgPartialObsWrapper``, ``FullyObsWrapper``, ``ViewSizeWrapper``, ``SymbolicObsWrapper``,
``PositionBonus``, ``ActionBonus``, ``ReseedWrapper``, ``NoDeath`` and ``StochasticActionWrapper``.
The others are listed in :data:`UNSUPPORTED` with the reason and what to use instead; wrapping the
env in one of them raises :class:`UnsupportedWrapperError` at once (see :class:`ObservationSpace`),
instead of MiniGrid's own error at the first observation::

    >>> import minigrid.wrappers
    >>> from embodmem.envs.underwater import UnderwaterEnv
    >>> minigrid.wrappers.FlatObsWrapper(UnderwaterEnv(task="wreck", image_size=16))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    embodmem.envs.wrappers.UnsupportedWrapperError: FlatObsWrapper does not fit the underwater env: it encodes ...
"""

from __future__ import annotations

import os
import sys
from types import CodeType
from typing import Any

import gymnasium as gym
import minigrid.wrappers
import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import FilterObservation
from minigrid.core.mission import MissionSpace

from embodmem.envs.tasks import MISSIONS

MISSION_INDEX: dict[str, int] = {mission: i for i, mission in enumerate(MISSIONS)}
"""Mission text -> its index in ``MISSIONS``."""

UNSUPPORTED: dict[str, str] = {
    "OneHotPartialObsWrapper": (
        "reads obs['image'] as MiniGrid's symbolic 7x7 view, but here it is the RGB camera; "
        "use ViewSizeWrapper or FullyObsWrapper for the symbolic grid, or the camera as it is"
    ),
    "DictObservationSpaceWrapper": (
        "declares only image/direction/mission and knows only MiniGrid's words ('sunken' is not one); "
        "use embodmem.envs.wrappers.MissionToIndex"
    ),
    "FlatObsWrapper": (
        "encodes only a-z, space and comma, so 'find an H-marked landing platform' fails, and drops "
        "sonar and pose; use MissionToIndex, then gymnasium.wrappers.FlattenObservation"
    ),
    "DirectionObsWrapper": (
        "needs a MiniGrid Goal tile; targets here are found by sight, and their direction is "
        "privileged (info['geodesic_m'] and info['distance_m'] are there for oracles and metrics)"
    ),
}
"""MiniGrid wrappers that do not fit the underwater envs: name -> why (a verb phrase: "it ..."), and
what to use instead."""

_REFUSED: dict[CodeType, str] = {getattr(minigrid.wrappers, name).__init__.__code__: name for name in UNSUPPORTED}
"""The constructors of the unsupported wrappers (MiniGrid's own functions, read, not changed) -> name."""


_TEXT_BATCHERS: dict[str, str] = {
    f"{os.sep}stable_baselines3{os.sep}": "Stable-Baselines3",
    f"{os.sep}sb3_contrib{os.sep}": "sb3-contrib",
    f"{os.sep}gymnasium{os.sep}vector{os.sep}utils{os.sep}shared_memory.py": "Gymnasium's shared-memory vector env",
}
"""Code (a path fragment of its file) that reads the observation space to batch it in arrays, which a
text ``mission`` cannot be -> the library's name, for the error that names the fix."""

TEXT_MISSION_FIX = (
    "make the env with mission_encoding='index' "
    "(gymnasium.make('embodmem:EmbodMem/Wreck-v0', mission_encoding='index')), "
    "or wrap it in embodmem.envs.wrappers.MissionToIndex"
)


class UnsupportedWrapperError(TypeError):
    """A MiniGrid wrapper that cannot fit the underwater env was put around it."""


class TextMissionError(TypeError):
    """A library that batches observations in arrays was given the env's text ``mission``."""


class ObservationSpace(spaces.Dict):
    """The underwater env's observation space: a ``gymnasium.spaces.Dict`` in every respect, which
    also refuses the :data:`UNSUPPORTED` MiniGrid wrappers while they are built.

    Those wrappers read the env's space in their constructor (``space["image"]``, or
    ``space.spaces``), then fail only at the first observation, with an error about a character or
    an index. This space looks at who reads it: when the reader is the constructor of one of them
    (the very function MiniGrid defines, subclasses included), it raises
    :class:`UnsupportedWrapperError` naming the wrapper, why it does not fit, and what to use
    instead. Nothing of MiniGrid is changed. Wrappers that build a new space first (e.g.
    ``ImgObsWrapper``) hand the next wrapper a plain ``Dict``, so an unsupported wrapper put around
    them fails as MiniGrid makes it fail.
    """

    def __getitem__(self, key: str) -> gym.Space[Any]:
        _refuse(sys._getframe(1).f_code)
        return super().__getitem__(key)

    @property
    def spaces(self) -> dict[str, gym.Space[Any]]:
        """The sub-spaces (``Dict.spaces``), refused to an unsupported wrapper's constructor, and to a
        library that batches them in arrays while ``mission`` is text (:class:`TextMissionError`,
        instead of the library's own ``'NoneType' object is not iterable``)."""
        reader = sys._getframe(1).f_code
        _refuse(reader)
        subspaces: dict[str, gym.Space[Any]] = self.__dict__["spaces"]
        if isinstance(subspaces.get("mission"), MissionSpace):
            _refuse_text_batching(reader)
        return subspaces

    @spaces.setter
    def spaces(self, value: dict[str, gym.Space[Any]]) -> None:
        self.__dict__["spaces"] = value


def _refuse(reader: CodeType) -> None:
    name = _REFUSED.get(reader)
    if name is not None:
        raise UnsupportedWrapperError(f"{name} does not fit the underwater env: it {UNSUPPORTED[name]}")


def _refuse_text_batching(reader: CodeType) -> None:
    for fragment, library in _TEXT_BATCHERS.items():
        if fragment in reader.co_filename:
            raise TextMissionError(f"{library} cannot batch the env's text observation 'mission': {TEXT_MISSION_FIX}")


def _mission_space_check(env: gym.Env, wrapper: str) -> dict[str, spaces.Space]:
    space = env.observation_space
    if not isinstance(space, spaces.Dict) or "mission" not in space.spaces:
        raise ValueError(f"{wrapper}: the env's observation space {space} has no 'mission' key")
    return dict(space.spaces)


class MissionToIndex(gym.ObservationWrapper):
    """Replace ``mission`` text by its index in :data:`MISSIONS` (``Discrete(len(MISSIONS))``).

    >>> import embodmem.envs.underwater as uw
    >>> env = MissionToIndex(uw.UnderwaterEnv(task="barrel", image_size=16))
    >>> obs, _ = env.reset(seed=0)
    >>> int(obs["mission"]), MISSIONS[int(obs["mission"])], env.observation_space["mission"]
    (2, 'find oil drums', Discrete(12))
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        obs_spaces = _mission_space_check(env, "MissionToIndex")
        obs_spaces["mission"] = spaces.Discrete(len(MISSIONS))
        self.observation_space = spaces.Dict(obs_spaces)

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        mission = observation["mission"]
        index = MISSION_INDEX.get(mission)
        if index is None:
            raise ValueError(f"MissionToIndex: mission {mission!r} is not one of {list(MISSIONS)}")
        return {**observation, "mission": np.int64(index)}


class DropMission(FilterObservation):
    """Remove ``mission`` from the observation (single-task training: the env id says the target)."""

    def __init__(self, env: gym.Env):
        keys = [key for key in _mission_space_check(env, "DropMission") if key != "mission"]
        super().__init__(env, filter_keys=keys)
