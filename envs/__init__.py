"""Gymnasium environments that stand in for the underwater Unreal Engine scenarios.

Importing ``embodmem`` registers one id per task (``EmbodMem/Wreck-v0`` ...) and
``EmbodMem/Sequence-v0`` (Gymnasium 1.x has no entry-point group, so registration happens here)::

    import gymnasium as gym
    env = gym.make("embodmem:EmbodMem/Wreck-v0", world_seed=0)
"""

from __future__ import annotations

from embodmem.envs.spec import Action, SensorSpec
from embodmem.envs.tasks import SEQUENCES, TASKS, Task, get_sequence, get_task
from embodmem.envs.underwater import UnderwaterEnv

__all__ = ["Action", "SensorSpec", "SEQUENCES", "TASKS", "Task", "UnderwaterEnv", "get_sequence", "get_task"]
