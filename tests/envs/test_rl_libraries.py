"""The envs plug into RL libraries through the shipped wrappers, with no user code.

Stable-Baselines3's ``check_env`` and PPO (``DummyVecEnv`` and ``SubprocVecEnv``) and Gymnasium's
``AsyncVectorEnv(shared_memory=True)`` all need numeric observations: ``MissionToIndex`` encodes the
mission, ``DropMission`` removes it. Small cameras and few steps keep this light.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from embodmem.envs.tasks import MISSIONS
from embodmem.envs.wrappers import DropMission, MissionToIndex

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
