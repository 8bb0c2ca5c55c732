"""The torch ray casts (envs/torch_kernels.py) are the Numba loops bit for bit, run here on the CPU:
the same code runs on a GPU when ``EMBODMEM_RAY_DEVICE`` names CUDA (or ``auto`` finds one)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from embodmem.envs import torch_kernels
from embodmem.envs.torch_kernels import RAY_DEVICE_VARIABLE, ray_device
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.envs.vector import UnderwaterVectorEnv

pytest.importorskip("torch")


def rollout(settings: dict[str, Any], steps: int = 60) -> list[Any]:
    """Observations, rewards and ground truths' visible cells of 6 worlds stepped in one batch."""
    envs = UnderwaterVectorEnv(6, **settings)
    obs, _ = envs.reset(seed=[11, 12, 13, 14, 15, 16])
    rng = np.random.default_rng(0)
    out = [obs]
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = envs.step(
            rng.choice(7, size=6, p=[0.15, 0.15, 0.4, 0.02, 0.1, 0.09, 0.09])
        )
        out.append((obs, reward, terminated, truncated))
    envs.close()
    return out


def assert_same(a: Any, b: Any) -> None:
    if isinstance(a, dict):
        assert set(a) == set(b)
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    else:
        assert a == b


@pytest.mark.parametrize(
    "settings",
    [
        dict(task="wreck", image_size=32, max_steps=30),
        dict(task="deep_wreck", image_size=48, max_steps=30, sonar_noise_m=0.3, sonar_dropout=0.05),
    ],
)
def test_torch_rays_on_the_cpu_are_the_numba_rays_bit_for_bit(
    settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RAY_DEVICE_VARIABLE, "numba")
    compiled = rollout(settings)
    monkeypatch.setenv(RAY_DEVICE_VARIABLE, "cpu")
    calls = []
    original = torch_kernels.paint_frames_torch
    monkeypatch.setattr("embodmem.envs.camera.paint_frames_torch", lambda *a, **k: calls.append(1) or original(*a, **k))
    batched = rollout(settings)
    assert calls, "the torch path ran"
    assert_same(compiled, batched)


def test_single_env_ground_truth_is_the_same_through_the_torch_rays(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the measures read (visible instances and target cells) comes from the same cast."""
    truths = []
    for device in ("numba", "cpu"):
        monkeypatch.setenv(RAY_DEVICE_VARIABLE, device)
        env = UnderwaterEnv(task="barrel", image_size=32, world_seed=7)
        obs, _ = env.reset(seed=3)
        seen = [(obs["image"].copy(), obs["sonar"].copy())]
        for action in [2, 2, 1, 2, 0, 2, 2]:
            obs, *_ = env.step(action)
            truth = env.ground_truth()
            seen.append((obs["image"].copy(), sorted(truth.visible_instances), sorted(truth.visible_target_cells)))
        truths.append(seen)
    assert_same(truths[0], truths[1])


def test_a_ray_device_not_known_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RAY_DEVICE_VARIABLE, "tpu")
    with pytest.raises(ValueError, match="EMBODMEM_RAY_DEVICE='tpu' is not allowed; allowed: auto, numba"):
        ray_device()
