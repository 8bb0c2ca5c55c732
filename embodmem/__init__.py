"""embodmem: a fast harness for studying memory in embodied agents.

The library half of the project: the CLIP embedder, the episodic memory and topological map, metrics,
the experiment runner, recording/replay and the command-line entry points. Environments live in
``envs`` and policies in ``agents``.
"""

from __future__ import annotations

__version__ = "0.1.0"
