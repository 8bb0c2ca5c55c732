"""Gymnasium environments that stand in for the underwater Unreal Engine scenarios.

Importing this package registers one id per task (``EmbodMem/Wreck-v0`` ...) and
``EmbodMem/Sequence-v0`` (Gymnasium 1.x has no entry-point group, so registration happens here)::

    import gymnasium as gym
    env = gym.make("envs:EmbodMem/Wreck-v0", world_seed=0)
"""

from __future__ import annotations

import gymnasium

from envs.spec import Action, SensorSpec
from envs.tasks import SEQUENCES, TASKS, Task, get_sequence, get_task
from envs.underwater import UnderwaterEnv

__all__ = ["Action", "SensorSpec", "SEQUENCES", "TASKS", "Task", "UnderwaterEnv", "get_sequence", "get_task"]


def _register() -> None:
    for task in TASKS.values():
        if task.env_id not in gymnasium.registry:
            gymnasium.register(task.env_id, entry_point="envs.underwater:UnderwaterEnv", kwargs={"task": task.name})
    if "EmbodMem/Sequence-v0" not in gymnasium.registry:
        gymnasium.register(
            "EmbodMem/Sequence-v0",
            entry_point="envs.underwater:UnderwaterEnv",
            kwargs={"tasks": SEQUENCES["wreck_then_barrel"]},
        )


_register()
