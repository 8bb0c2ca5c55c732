"""Same seeds give the same worlds and observations, bit for bit, across code changes.

The digests were recorded with an earlier implementation of the env: the camera,
the extra view, the ``topdown`` view (drawn through MiniGrid's tile cache), sonar, pose and the
``rgb_array`` render must not change when the code around them does.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from embodmem.envs.underwater import UnderwaterEnv

RECORDED = {
    # (world_seed, episode seed, task, image_size): (observations digest, world digest)
    (0, 0, "wreck", 64): ("5fa187f7f94a215a", "97704c3b37e4624d"),
    (1, 5, "wreck", 64): ("550cb3e00a84572e", "ddc519c34bcfded7"),
    (3, 11, "deep_barrel", 32): ("2cfc3a45d768f944", "701e4c55ed1ff951"),
}


def observation_digest(world_seed: int, seed: int, task: str, image_size: int, steps: int = 40) -> str:
    """Hash every observation of a random-action rollout, then the final ``rgb_array`` frame."""
    env = UnderwaterEnv(
        task=task,
        world_seed=world_seed,
        image_size=image_size,
        extra_views=("image_left",),
        topdown=True,
        sonar_noise_m=0.5,
        odometry_noise=0.1,
        render_mode="rgb_array",
        render_size=64,
        start_min_distance_m=0.0,  # the recorded digests predate far random starts
    )
    h = hashlib.sha256()
    obs, _ = env.reset(seed=seed, options={"start": "random"})
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        for key in sorted(obs):
            value = obs[key]
            h.update(key.encode())
            h.update(value.encode() if isinstance(value, str) else np.ascontiguousarray(value).tobytes())
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(7)))
        if terminated or truncated:
            obs, _ = env.reset(options={"start": "random"})
    frame = env.render()
    assert frame is not None
    h.update(frame.tobytes())
    assert env.world is not None
    return h.hexdigest()[:16] + " " + env.world.digest()


@pytest.mark.parametrize("case", sorted(RECORDED))
def test_observations_match_the_recorded_digests(case: tuple[int, int, str, int]) -> None:
    assert observation_digest(*case) == " ".join(RECORDED[case])


LONG_STREAMS = {
    # digests recorded with the per-pixel numpy camera (the column atlas and compiled loops must
    # reproduce it): 300 steps with resets, every observation and info
    "shallow": (dict(task="wreck", world_seed=0), 0, "18fbdb01e748"),
    "deep": (dict(task="deep_wreck", world_seed=5), 1, "026ee70c0124"),
    "drift and noisy sonar": (
        dict(
            tasks=("wreck", "barrel"),
            world_seed=11,
            odometry_drift_pct=1.0,
            odometry_noise=0.05,
            sonar_noise_m=0.3,
            sonar_dropout=0.05,
        ),
        0,
        "b36fae96d1bb",
    ),
    "extra views": (
        dict(task="pipeline", world_seed=3, image_size=32, extra_views=["image_left", "image_back"]),
        0,
        "5365020349e2",
    ),
    "instance goals": (
        dict(tasks=("image.mining_robot.yellow", "description.mining_robot.toppled", "deep_wreck"), world_seed=4),
        0,
        "a47dc7adb58c",
    ),
}


@pytest.mark.parametrize("name", sorted(LONG_STREAMS))
def test_long_streams_are_those_of_the_per_pixel_camera(name: str) -> None:
    """The column atlas and the compiled loops (envs/camera.py, envs/kernels.py) change no pixel,
    sonar range, pose or info of the per-pixel renderer they replaced."""
    settings, seed, recorded = LONG_STREAMS[name]
    env = UnderwaterEnv(**settings)
    rng = np.random.default_rng(seed)
    h = hashlib.sha256()

    def add(obs: dict, info: dict) -> None:
        for key in sorted(obs):
            value = obs[key]
            h.update(key.encode())
            h.update(value.tobytes() if isinstance(value, np.ndarray) else str(value).encode())
        h.update(repr(sorted(info.items())).encode())

    add(*env.reset(seed=seed, options={"start": "random"}))
    for i in range(300):
        moves = [0, 1, 2, 2, 2, 4, 5, 6, 3] if i % 97 == 96 else [0, 1, 2, 2, 2, 4, 5, 6]
        obs, _, terminated, truncated, info = env.step(int(rng.choice(moves)))
        add(obs, info)
        if terminated or truncated or i % 150 == 149:
            if i % 2:
                options: dict = {"start": "random"}
            else:
                options = {"next_task": len(env.tasks) > 1 and env.task_index == 0, "start": "continue"}
            add(*env.reset(seed=seed + i, options=options))
    assert h.hexdigest()[:12] == recorded
