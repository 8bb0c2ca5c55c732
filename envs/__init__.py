"""Gymnasium environments that stand in for the underwater Unreal Engine scenarios.

Importing ``embodmem`` registers one id per task (``EmbodMem/Wreck-v0`` ...) and
``EmbodMem/Sequence-v0`` (Gymnasium 1.x has no entry-point group, so registration happens here)::

    import gymnasium as gym
    env = gym.make("embodmem:EmbodMem/Wreck-v0", world_seed=0)
"""

from __future__ import annotations

from embodmem.lazy import lazy_attributes

_HOMES = {
    "Action": "embodmem.envs.spec",
    "SensorSpec": "embodmem.envs.spec",
    "SEQUENCES": "embodmem.envs.tasks",
    "TASKS": "embodmem.envs.tasks",
    "Task": "embodmem.envs.tasks",
    "get_sequence": "embodmem.envs.tasks",
    "get_task": "embodmem.envs.tasks",
    "UnderwaterEnv": "embodmem.envs.underwater",
}
"""Where each name lives: imported when first asked for, so that ``import embodmem`` (which
registers the ids) and a command line refused before any work do not import the renderer (numba)."""

__all__ = list(_HOMES)

__getattr__ = lazy_attributes(__name__, _HOMES)
