"""The underwater envs are good MiniGrid citizens: no global table changes, MiniGrid's wrappers fit."""

from __future__ import annotations

import doctest
import importlib
import inspect
import pickle
import pkgutil
import re
import subprocess
import sys
from typing import Any

import gymnasium as gym
import minigrid.wrappers
import numpy as np
import pytest
from minigrid.core import constants as mg_constants

import embodmem.envs.wrappers as wrappers_module
from embodmem.envs.objects import KIND_SYMBOLS, KINDS
from embodmem.envs.seabed_object import SeabedObject
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.envs.wrappers import UNSUPPORTED, ObservationSpace, UnsupportedWrapperError

ALL_MINIGRID_WRAPPERS = sorted(
    name
    for name, cls in inspect.getmembers(minigrid.wrappers, inspect.isclass)
    if issubclass(cls, gym.Wrapper) and cls.__module__ == minigrid.wrappers.__name__
)
WRAPPER_ARGS: dict[str, dict[str, Any]] = {
    "NoDeath": {"no_death_types": ("lava",)},
    "ViewSizeWrapper": {"agent_view_size": 5},
    "ReseedWrapper": {"seeds": (3, 4)},
    "StochasticActionWrapper": {"prob": 0.5},
    "RGBImgObsWrapper": {"tile_size": 2},
    "RGBImgPartialObsWrapper": {"tile_size": 2},
}

TABLES = ("OBJECT_TO_IDX", "IDX_TO_OBJECT", "COLOR_TO_IDX", "IDX_TO_COLOR", "COLORS", "COLOR_NAMES", "STATE_TO_IDX")

PACKAGES = ("embodmem", "embodmem.embedding", "embodmem.envs", "embodmem.agents", "embodmem.configs")
"""Every package of the project (``embodmem.embedding`` has no ``__init__``, so it is walked itself)."""

PRISTINE_SCRIPT = f"""
from minigrid.core import constants as C
for name in {TABLES!r}:
    print(name, repr(getattr(C, name)))
"""


def _tables_now() -> str:
    return "".join(f"{name} {getattr(mg_constants, name)!r}\n" for name in TABLES)


def test_importing_every_embodmem_module_and_stepping_changes_no_minigrid_table() -> None:
    """MiniGrid's tables as a fresh interpreter has them (nothing of ours imported) equal this
    process's after importing every embodmem module, building, wrapping and stepping an env."""
    run = subprocess.run([sys.executable, "-c", PRISTINE_SCRIPT], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "OBJECT_TO_IDX {'unseen': 0" in run.stdout
    for package in PACKAGES:
        path = importlib.import_module(package).__path__
        for module in pkgutil.walk_packages(path, package + "."):
            if not module.name.endswith("__main__"):  # that one runs the command line
                importlib.import_module(module.name)
    env = minigrid.wrappers.RGBImgObsWrapper(
        minigrid.wrappers.FullyObsWrapper(gym.make("EmbodMem/Sequence-v0", topdown=True, size=24, image_size=16)),
        tile_size=4,
    )
    env.reset(seed=0)
    for action in (2, 1, 2, 0, 3):
        env.step(action)
    env.unwrapped.pprint_grid()
    assert _tables_now() == run.stdout


def test_stock_minigrid_env_is_untouched_by_ours() -> None:
    """A stock env under OneHotPartialObsWrapper keeps its (7, 7, 20) encoding,
    and its rendered tiles (MiniGrid caches them process-wide by ``encode()``) are its own."""
    stock = minigrid.wrappers.OneHotPartialObsWrapper(gym.make("MiniGrid-Empty-8x8-v0"))
    stock_rgb = minigrid.wrappers.RGBImgObsWrapper(gym.make("MiniGrid-Empty-8x8-v0"), tile_size=8)
    first, _ = stock_rgb.reset(seed=0)
    ours = minigrid.wrappers.RGBImgObsWrapper(
        UnderwaterEnv(world_seed=0, size=24, image_size=16, topdown=True), tile_size=8
    )
    ours.reset(seed=0)
    ours.step(2)
    obs, _ = stock.reset(seed=0)
    assert obs["image"].shape == (7, 7, 20) == stock.observation_space["image"].shape
    again, _ = stock_rgb.reset(seed=0)
    np.testing.assert_array_equal(first["image"], again["image"])
    encodings = {SeabedObject(k.name).encode() for k in KINDS[1:]}
    assert len(encodings) == len(KINDS) - 1  # one tile per kind in the cache
    assert all(color >= len(mg_constants.COLOR_TO_IDX) for _, color, _ in encodings)


def _rollout(env: gym.Env, steps: int = 12) -> list[Any]:
    observations = []
    obs, _ = env.reset(seed=1)
    observations.append(obs)
    for action in [2, 1, 2, 2, 0, 5, 2, 4, 6, 2, 1, 2][:steps]:
        obs, reward, terminated, truncated, _ = env.step(action)
        assert np.isfinite(reward)
        observations.append(obs)
        if terminated or truncated:
            obs, _ = env.reset()
            observations.append(obs)
    return observations


def test_every_minigrid_wrapper_is_classified() -> None:
    assert set(UNSUPPORTED) <= set(ALL_MINIGRID_WRAPPERS)
    assert len(ALL_MINIGRID_WRAPPERS) >= 15  # MiniGrid's wrappers
    for name, why in UNSUPPORTED.items():
        assert "use" in why or "info[" in why, f"{name}: no alternative named"


@pytest.mark.parametrize("name", ALL_MINIGRID_WRAPPERS)
def test_minigrid_wrapper_fits_or_is_refused_at_wrap_time(name: str) -> None:
    """Each wrapper either works, every observation inside its declared space, or refuses the env
    as it is built: one line naming the wrapper, why, and what to use instead."""
    cls = getattr(minigrid.wrappers, name)
    env = UnderwaterEnv(task="wreck", world_seed=2, size=24, image_size=16)
    if name in UNSUPPORTED:
        expected = f"{name} does not fit the underwater env: it {UNSUPPORTED[name]}"
        with pytest.raises(UnsupportedWrapperError, match=f"^{re.escape(expected)}$"):
            cls(env, **WRAPPER_ARGS.get(name, {}))
        assert "\n" not in expected, "one line"
        with pytest.raises(UnsupportedWrapperError, match=f"^{re.escape(name)} does not fit"):
            cls(gym.make("EmbodMem/Wreck-v0", world_seed=2, size=24, image_size=16))  # behind gym.make's wrappers
        return
    wrapped = cls(env, **WRAPPER_ARGS.get(name, {}))
    observations = _rollout(wrapped)
    for obs in observations:
        assert wrapped.observation_space.contains(obs), f"{name}: observation outside {wrapped.observation_space}"
    if isinstance(wrapped.observation_space, gym.spaces.Dict):
        assert observations[0]["image"].shape == wrapped.observation_space["image"].shape


def test_the_refusing_space_is_a_plain_dict_space_to_everyone_else() -> None:
    """The env's space pickles (async vector envs), compares, samples and flattens like the
    ``gymnasium.spaces.Dict`` it is; a subclass of a refused wrapper is refused too; the same
    wrappers on a stock MiniGrid env are untouched."""
    env = UnderwaterEnv(task="wreck", world_seed=2, size=24, image_size=16)
    space = env.observation_space
    assert isinstance(space, ObservationSpace) and isinstance(space, gym.spaces.Dict)
    plain = gym.spaces.Dict(dict(space.spaces))
    assert space == plain and pickle.loads(pickle.dumps(space)) == space
    assert isinstance(pickle.loads(pickle.dumps(space)), ObservationSpace)
    obs, _ = env.reset(seed=0)
    assert space.contains(obs) and space.contains(space.sample())
    numeric = gym.spaces.Dict({k: v for k, v in space.items() if k != "mission"})
    assert gym.spaces.flatten_space(numeric).shape == (16 * 16 * 3 + 3 + len(obs["sonar"]),)

    class MyFlat(minigrid.wrappers.FlatObsWrapper):
        pass

    with pytest.raises(UnsupportedWrapperError, match="^FlatObsWrapper does not fit"):
        MyFlat(env)
    stock = minigrid.wrappers.FlatObsWrapper(gym.make("MiniGrid-Empty-8x8-v0"))
    flat, _ = stock.reset(seed=0)
    assert stock.observation_space.contains(flat)
    direction = minigrid.wrappers.DirectionObsWrapper(gym.make("MiniGrid-Empty-8x8-v0"))
    assert "goal_direction" in direction.reset(seed=0)[0]


def test_wrappers_doctests() -> None:
    assert doctest.testmod(wrappers_module).failed == 0


def test_minigrid_grid_views_carry_the_kinds() -> None:
    env = minigrid.wrappers.FullyObsWrapper(UnderwaterEnv(world_seed=2, size=24, image_size=16))
    obs, _ = env.reset(seed=0)
    world = env.unwrapped.world
    grid = obs["image"]  # (x, y, 3)
    colours = grid[:, :, 1].T  # -> (y, x)
    solid = world.kinds > 0
    np.testing.assert_array_equal(colours[solid], world.kinds[solid] + 5)
    ax, ay = env.unwrapped.agent_pos
    assert tuple(grid[ax, ay]) == (mg_constants.OBJECT_TO_IDX["agent"], 0, env.unwrapped.agent_dir)
    symbolic = minigrid.wrappers.SymbolicObsWrapper(UnderwaterEnv(world_seed=2, size=24, image_size=16))
    sym, _ = symbolic.reset(seed=0)
    is_target = np.array([k.is_target for k in KINDS])[world.kinds]
    types = sym["image"][:, :, 2].T
    assert (types[is_target] == mg_constants.OBJECT_TO_IDX["box"]).all()
    assert (types[solid & ~is_target] == mg_constants.OBJECT_TO_IDX["wall"]).all()


def test_rgb_partial_view_is_the_camera_enlarged() -> None:
    env = minigrid.wrappers.RGBImgPartialObsWrapper(UnderwaterEnv(world_seed=0, size=24, image_size=16), tile_size=3)
    obs, _ = env.reset(seed=0)
    camera = env.unwrapped.gen_obs()["image"]
    assert obs["image"].shape == (48, 48, 3)
    np.testing.assert_array_equal(obs["image"][::3, ::3], camera)


def test_pprint_grid_shows_kinds_and_the_robot() -> None:
    env = UnderwaterEnv(world_seed=2, size=24, image_size=16)
    with pytest.raises(ValueError, match="reset"):
        UnderwaterEnv(world_seed=2, size=24, image_size=16).pprint_grid()
    env.reset(seed=0, options={"start_pose": (*env.world.fixed_starts[0][:2], 1)})
    rows = env.pprint_grid().split("\n")
    assert len(rows) == 24 and all(len(r) == 48 for r in rows)
    x, y = env.agent_pos
    assert rows[y][2 * x : 2 * x + 2] == "VV"
    assert rows[0] == KIND_SYMBOLS[1] * 24  # the border is rock
    assert len(set(KIND_SYMBOLS)) == len(KINDS) and all(len(s) == 2 for s in KIND_SYMBOLS)
    wy, wx = np.argwhere(env.world.kinds == 6)[0]  # a sunken ship
    assert rows[wy][2 * wx : 2 * wx + 2] == KIND_SYMBOLS[6]
