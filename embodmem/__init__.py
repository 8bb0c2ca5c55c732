"""embodmem: a fast harness for studying memory in embodied agents.

The library half of the project: the CLIP embedder, the episodic memory and topological map, metrics,
the experiment runner, recording/replay and the command-line entry points. Environments live in
``embodmem.envs`` (the repo's ``envs/`` folder), policies in ``embodmem.agents`` (``agents/``) and the
Hydra config groups in ``embodmem.configs`` (``configs/``). Importing ``embodmem`` registers the
Gymnasium ids (``gymnasium.make("embodmem:EmbodMem/Wreck-v0")``).
"""

from __future__ import annotations

__version__ = "0.1.0"

from embodmem.envs.registration import register_envs

register_envs()
