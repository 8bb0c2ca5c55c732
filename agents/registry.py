"""Every agent the app can run, by name: how to build it and how the runner treats it.

One :class:`AgentSpec` per agent, read by the config checks (which names are allowed), the app (how
to build one, which run warm and cold, whether the embedder is loaded) and the re-runner. A new
baseline is its own module (the agent and a ``build(ctx, spec)`` function) plus one line in
:data:`AGENTS`; ``experiment.baselines=[name]`` then runs
it beside the main agent. The memory agent's variants (:mod:`embodmem.agents.variants`) join as one
spec each.

Example:
    >>> AGENTS["explorer"].carries_memory, AGENTS["memory"].carries_memory, AGENTS["oracle"].needs_embedder
    (False, True, False)
    >>> sorted(baseline_names())[:3]
    ['explorer', 'mapped', 'oracle']
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from embodmem.agents.variants import VARIANTS, Variant

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from embodmem.agents.base import Agent, RecognitionEmbedder
    from embodmem.agents.vlm.config import VLMConfig
    from embodmem.envs.underwater import UnderwaterEnv
    from embodmem.memory import AgentMemory

S = TypeVar("S", bound="DataclassInstance")


class BuildContext(Protocol):
    """What a builder may ask of the run (the app implements it from the composed config)."""

    embedder: RecognitionEmbedder | None
    env: UnderwaterEnv
    """The environment: only privileged controls (oracle, mapped) may keep it."""
    seed: int

    def settings(self, config_class: type[S], changes: dict[str, object] | None = None) -> S:
        """``config_class`` filled from the ``agent`` group, then ``changes``."""
        ...

    def memory(self, variant: Variant) -> AgentMemory:
        """A fresh memory from the ``memory`` group with ``variant``'s changes."""
        ...

    def vlm_config(self) -> VLMConfig:
        """The ``agent.vlm`` group."""
        ...

    def build(self, name: str) -> Agent:
        """Another agent of the registry (the VLM agent's navigator)."""
        ...


@dataclass(frozen=True)
class AgentSpec:
    """How the app builds an agent and how the runner treats it."""

    name: str
    description: str
    builder: str
    """``"module:function"`` taking ``(BuildContext, AgentSpec)`` and returning the agent; imported
    only when the agent is built, so the config checks that read this table stay light."""
    needs_embedder: bool = True
    """Load the CLIP for it (every agent that looks at frames)."""
    carries_memory: bool = False
    """It keeps what it saw between tasks: run in the requested conditions, warm and cold
    (otherwise once, :attr:`~embodmem.condition.Condition.single`)."""
    privileged: bool = False
    """It is handed the environment (a control, not a competitor)."""
    variant: Variant | None = None
    """For the memory agent's variants: the settings that make this one."""

    def build(self, ctx: BuildContext) -> Agent:
        """A fresh agent for one run."""
        module, _, function = self.builder.partition(":")
        make: Callable[[BuildContext, AgentSpec], Agent] = getattr(importlib.import_module(module), function)
        return make(ctx, self)


BUILDERS = "embodmem.agents.builders"

AGENTS: dict[str, AgentSpec] = {
    spec.name: spec
    for spec in (
        AgentSpec("random", "uniformly random actions", f"{BUILDERS}:random", needs_embedder=False),
        AgentSpec(
            "oracle", "shortest path to the nearest target (privileged)", f"{BUILDERS}:oracle",
            needs_embedder=False, privileged=True,
        ),
        AgentSpec("explorer", "frontier exploration with the recogniser, no memory", f"{BUILDERS}:explorer"),
        AgentSpec(
            "mapped", "the memory agent handed the object map (a control)", f"{BUILDERS}:mapped", privileged=True
        ),
        AgentSpec("vlm", "a VLM plans, the memory agent navigates", f"{BUILDERS}:vlm", carries_memory=True),
        *(
            AgentSpec(v.name, v.description, f"{BUILDERS}:variant", carries_memory=True, variant=v)
            for v in VARIANTS.values()
        ),
    )
}  # fmt: skip
"""Every agent by name."""


def get_agent_spec(name: str) -> AgentSpec:
    """The spec of ``name``; an unknown name lists the allowed ones."""
    if name not in AGENTS:
        raise ValueError(f"agent {name!r} is unknown; allowed: {', '.join(AGENTS)}")
    return AGENTS[name]


def baseline_names() -> tuple[str, ...]:
    """Agents that run once beside the main agent (``experiment.baselines``)."""
    return tuple(name for name, spec in AGENTS.items() if not spec.carries_memory)


def memory_carriers() -> tuple[str, ...]:
    """Agents run warm and cold."""
    return tuple(name for name, spec in AGENTS.items() if spec.carries_memory)
