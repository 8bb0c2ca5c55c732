"""Gymnasium ids of the project's environments (Gymnasium 1.x has no entry-point group).

Entry points are strings, so registering imports no environment code. Every id takes
``mission_encoding="text"|"index"|"none"`` (:mod:`embodmem.envs.entry`): with ``"index"`` the raw id
plugs into Stable-Baselines3, sb3-contrib and shared-memory vector envs.
"""

from __future__ import annotations

import gymnasium

from embodmem.envs.tasks import SEQUENCES, TASKS

ENTRY_POINT = "embodmem.envs.entry:make_underwater"
VECTOR_ENTRY_POINT = "embodmem.envs.vector:make_underwater_vector"
"""``gymnasium.make_vec(id, num_envs)`` builds the batched env (envs/vector.py); ``vectorization_mode=
"sync"`` or ``"async"`` still builds Gymnasium's own vector envs around single envs."""


def register_envs() -> None:
    """Register ``EmbodMem/<Task>-v0`` for each task and ``EmbodMem/Sequence-v0`` (idempotent)."""
    for task in TASKS.values():
        if task.env_id not in gymnasium.registry:
            gymnasium.register(
                task.env_id, entry_point=ENTRY_POINT, vector_entry_point=VECTOR_ENTRY_POINT, kwargs={"task": task.name}
            )
    if "EmbodMem/Sequence-v0" not in gymnasium.registry:
        gymnasium.register(
            "EmbodMem/Sequence-v0",
            entry_point=ENTRY_POINT,
            vector_entry_point=VECTOR_ENTRY_POINT,
            kwargs={"tasks": SEQUENCES["wreck_then_barrel"]},
        )
