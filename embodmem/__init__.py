"""embodmem: a fast harness for studying memory in embodied agents.

The library half of the project: the CLIP embedder, the episodic memory and topological map, metrics,
the experiment runner, recording/replay and the command-line entry points. Environments live in
``embodmem.envs`` (the repo's ``envs/`` folder), policies in ``embodmem.agents`` (``agents/``) and the
Hydra config groups in ``embodmem.configs`` (``configs/``). Importing ``embodmem`` registers the
Gymnasium ids (``gymnasium.make("embodmem:EmbodMem/Wreck-v0")``). ``embodmem.compose(overrides)`` is
the config ``embodmem-run`` would run, checked as it checks it (:func:`embodmem.preflight.compose`).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

from embodmem.envs.registration import register_envs

register_envs()


def __getattr__(name: str) -> Any:
    """``embodmem.compose``, imported when first used (it brings Hydra; ``import embodmem`` stays light)."""
    if name == "compose":
        from embodmem.preflight import compose

        return compose
    raise AttributeError(f"module 'embodmem' has no attribute {name!r}")
