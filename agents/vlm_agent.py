"""The VLM policy wired into the harness: memory agent as navigator and memory writer.

The memory agent does what a VLM should not have to: it maps the sonar, embeds every frame and
writes it to memory, and runs the "go to node N" / "explore" skills. The VLM only decides.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from embodmem.agents.base import Embedder, MemoryCarrier, Observation
from embodmem.agents.mapping import OccupancyGrid
from embodmem.agents.memory_agent import MemoryAgent
from embodmem.agents.vlm.config import VLMConfig
from embodmem.agents.vlm.policy import VLMPolicy
from embodmem.envs.spec import SensorSpec


class VLMAgent(VLMPolicy, MemoryCarrier):
    """A :class:`VLMPolicy` whose navigator is a :class:`MemoryAgent` (reset and labelled with it)."""

    name = "vlm"

    def __init__(self, config: VLMConfig, navigator: MemoryAgent, embedder: Embedder, **kwargs: Any):
        super().__init__(config, navigator=navigator, memory=navigator.memory, embedder=embedder, **kwargs)
        self.navigator: MemoryAgent
        self.memory = navigator.memory

    def reset(self, observation: Observation, spec: SensorSpec) -> None:
        self.navigator.reset(observation, spec)
        super().reset(observation, spec)

    def act(self, observation: Observation) -> int:
        self.navigator.steps += 1  # the navigator labels memory frames with the step
        return super().act(observation)

    def set_context(self, run_id: str, task: str, episode: int) -> None:
        self.navigator.set_context(run_id, task, episode)

    def reset_memory(self) -> None:
        self.navigator.reset_memory()

    def save_state(self, directory: Path) -> None:
        self.navigator.save_state(directory)

    def load_state(self, directory: Path) -> None:
        self.navigator.load_state(directory)
        self.memory = self.recall = self.navigator.memory

    def implant(self, images: np.ndarray, poses: list[tuple[int, int, int]]) -> None:
        self.navigator.implant(images, poses)

    def end_task(self, success: bool) -> None:
        self.navigator.end_task(success)

    @property
    def grid(self) -> OccupancyGrid | None:
        """The navigator's occupancy grid."""
        return self.navigator.grid


def check_vlm_endpoint(config: VLMConfig) -> None:
    """Before any work: the server answers its models list, accepts the key and serves the model.

    Raises:
        VLMError: one line saying what is wrong (unreachable, refused key, unknown model).
    """
    if not config.check_endpoint:
        return
    from embodmem.agents.vlm.client import ChatClient

    client = ChatClient(config)
    try:
        client.check_endpoint()
    finally:
        client.close()
