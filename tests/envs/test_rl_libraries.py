"""The envs plug into RL libraries through the shipped wrappers, with no user code.

Stable-Baselines3's ``check_env`` and PPO (``DummyVecEnv`` and ``SubprocVecEnv``) and Gymnasium's
``AsyncVectorEnv(shared_memory=True)`` all need numeric observations: ``MissionToIndex`` encodes the
mission, ``DropMission`` removes it; the registered ids do the same with ``mission_encoding=``. Small cameras and few steps keep this light.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from embodmem.envs.tasks import MISSIONS
from embodmem.envs.wrappers import DropMission, MissionToIndex, TextMissionError

ROOT = Path(__file__).resolve().parents[2]

SMALL = {"image_size": 36, "size": 24, "world_seed": 1, "max_steps": 48}
"""36 px is the smallest image SB3's NatureCNN takes."""


@pytest.mark.parametrize("wrapper", [MissionToIndex, DropMission])
def test_sb3_check_env_passes_without_warnings(wrapper: type[gym.Wrapper]) -> None:
    env = wrapper(gym.make("EmbodMem/Sequence-v0", **SMALL))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env)


def test_mission_index_follows_the_task() -> None:
    env = MissionToIndex(gym.make("EmbodMem/Sequence-v0", **SMALL))
    obs, info = env.reset(seed=0)
    assert MISSIONS[int(obs["mission"])] == info["mission"] == "find a sunken ship"
    obs, info = env.reset(seed=0, options={"next_task": True})
    assert MISSIONS[int(obs["mission"])] == info["mission"] == "find oil drums"
    assert env.observation_space.contains(obs)
    assert "mission" not in DropMission(gym.make("EmbodMem/Wreck-v0", **SMALL)).reset(seed=0)[0]


def test_wrappers_refuse_an_env_without_a_mission() -> None:
    with pytest.raises(ValueError, match="MissionToIndex: .* no 'mission' key"):
        MissionToIndex(gym.make("CartPole-v1"))


@pytest.mark.parametrize("vec_env_cls", [DummyVecEnv, SubprocVecEnv])
def test_ppo_trains_a_few_hundred_steps(vec_env_cls: type) -> None:
    venv = make_vec_env(
        "EmbodMem/Wreck-v0", n_envs=2, seed=0, env_kwargs=SMALL, wrapper_class=MissionToIndex, vec_env_cls=vec_env_cls
    )
    try:
        model = PPO("MultiInputPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
        model.learn(total_timesteps=256)
        assert model.num_timesteps == 256
        actions, _ = model.predict(venv.reset(), deterministic=True)
        assert actions.shape == (2,) and all(0 <= a < 7 for a in actions)
    finally:
        venv.close()


def test_async_vector_env_with_shared_memory() -> None:
    envs = gym.make_vec(
        "EmbodMem/Sequence-v0",
        num_envs=2,
        vectorization_mode="async",
        vector_kwargs={"shared_memory": True},
        wrappers=[MissionToIndex],
        **SMALL,
    )
    try:
        obs, _ = envs.reset(seed=0)
        for _ in range(3):
            obs, reward, terminated, truncated, _ = envs.step(np.array([2, 1]))
        assert obs["image"].shape == (2, 36, 36, 3) and obs["image"].dtype == np.uint8
        assert obs["mission"].tolist() == [MISSIONS.index("find a sunken ship")] * 2
        assert envs.observation_space.contains(obs)
    finally:
        envs.close()


# --------------------------------------------------------------------------- raw ids: mission_encoding


def test_raw_id_with_mission_encoding_index_plugs_into_sb3_and_shared_memory() -> None:
    env = gym.make("embodmem:EmbodMem/Sequence-v0", mission_encoding="index", **SMALL)
    obs, _ = env.reset(seed=0)
    assert MISSIONS[int(obs["mission"])] == "find a sunken ship" and env.observation_space.contains(obs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env)
    envs = gym.make_vec(
        "embodmem:EmbodMem/Wreck-v0",
        num_envs=2,
        vectorization_mode="async",
        vector_kwargs={"shared_memory": True},
        mission_encoding="index",
        **SMALL,
    )
    try:
        obs, _ = envs.reset(seed=0)
        assert obs["mission"].tolist() == [MISSIONS.index("find a sunken ship")] * 2
    finally:
        envs.close()
    assert "mission" not in gym.make("embodmem:EmbodMem/Wreck-v0", mission_encoding="none", **SMALL).reset(seed=0)[0]
    assert isinstance(gym.make("embodmem:EmbodMem/Wreck-v0", **SMALL).reset(seed=0)[0]["mission"], str)


def test_a_text_mission_given_to_a_batching_library_names_the_fix() -> None:
    """Without the keyword, SB3 and shared-memory vector envs fail with one error that says what to do
    (instead of SB3's ``'NoneType' object is not iterable`` or Gymnasium's missing shared-memory function)."""
    fix = r"cannot batch the env's text observation 'mission': make the env with mission_encoding='index'"
    with pytest.raises(TextMissionError, match="Stable-Baselines3 " + fix):
        PPO("MultiInputPolicy", gym.make("embodmem:EmbodMem/Wreck-v0", **SMALL), device="cpu")
    with pytest.raises(TextMissionError, match="shared-memory vector env " + fix):
        gym.make_vec("embodmem:EmbodMem/Wreck-v0", num_envs=2, vectorization_mode="async", **SMALL)
    with pytest.raises(ValueError, match=r"mission_encoding='onehot' is not allowed; allowed: text, index, none"):
        gym.make("embodmem:EmbodMem/Wreck-v0", mission_encoding="onehot")


def test_the_example_trains_ppo_and_recurrent_ppo_for_2048_steps() -> None:
    """examples/train_sb3.py as a user runs it (36 px camera so it fits CI; the default is 64 px)."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "train_sb3.py"), "--image-size", "36"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["PPO", "RecurrentPPO"], proc.stdout
    assert all(" 2048 steps in " in line for line in lines), proc.stdout
