"""How each agent of :data:`~embodmem.agents.registry.AGENTS` is built from a run's context.

Each function takes the run's :class:`~embodmem.agents.registry.BuildContext` and the agent's spec;
the registry imports this module only when an agent is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from embodmem.agents.base import AGENT_ATTRIBUTES, AGENT_METHODS, Agent, RecognitionEmbedder
from embodmem.agents.config import ExplorerConfig, MemoryAgentConfig
from embodmem.agents.registry import AgentSpec, BuildContext
from embodmem.agents.variants import VARIANTS
from embodmem.plugins import PluginError, load_object


def _embedder(ctx: BuildContext, spec: AgentSpec) -> RecognitionEmbedder:
    if ctx.embedder is None:
        raise ValueError(f"agent {spec.name!r} needs an embedder")
    return ctx.embedder


def random(ctx: BuildContext, spec: AgentSpec) -> Agent:
    from embodmem.agents.random_agent import RandomAgent

    return RandomAgent(seed=ctx.seed)


def oracle(ctx: BuildContext, spec: AgentSpec) -> Agent:
    from embodmem.agents.oracle import OracleAgent

    return OracleAgent(ctx.env)


def explorer(ctx: BuildContext, spec: AgentSpec) -> Agent:
    from embodmem.agents.explorer import FrontierExplorer

    return FrontierExplorer(_embedder(ctx, spec), ctx.settings(ExplorerConfig))


def mapped(ctx: BuildContext, spec: AgentSpec) -> Agent:
    from embodmem.agents.mapped_agent import MappedAgent
    from embodmem.memory import AgentMemory

    embedder = _embedder(ctx, spec)
    memory = ctx.memory(VARIANTS["memory"])
    assert isinstance(memory, AgentMemory)  # the stock variant's: the control reads its map
    return MappedAgent(embedder, memory, ctx.settings(MemoryAgentConfig), ctx.env)


def vlm(ctx: BuildContext, spec: AgentSpec) -> Agent:
    from embodmem.agents.memory_agent import MemoryAgent
    from embodmem.agents.vlm_agent import VLMAgent

    navigator = ctx.build(ctx.memory_design)  # it executes the VLM's plans
    assert isinstance(navigator, MemoryAgent)
    return VLMAgent(ctx.vlm_config(), navigator, _embedder(ctx, spec))


def variant(ctx: BuildContext, spec: AgentSpec) -> Agent:
    """The memory agent, the text log or naive retrieval, with the variant's settings."""
    assert spec.variant is not None
    v = spec.variant
    embedder = _embedder(ctx, spec)
    settings = ctx.settings(MemoryAgentConfig, v.agent)
    if v.textlog:
        from embodmem.agents.textlog_agent import TextLogAgent

        return TextLogAgent(embedder, settings)
    from embodmem.agents.memory_agent import MemoryAgent
    from embodmem.agents.naive_agent import NaiveRetrievalAgent

    kind = NaiveRetrievalAgent if v.naive else MemoryAgent
    agent = kind(embedder, ctx.memory(v), settings)
    agent.name = spec.name
    return agent


def plugin(ctx: BuildContext, spec: AgentSpec) -> Agent:
    """A plug-in agent: its class or factory called with the build context, checked against
    :class:`~embodmem.agents.base.Policy` (one line naming what it lacks), named after the plug-in."""
    assert spec.plugin is not None
    made = cast(Callable[[BuildContext], object], load_object("agent", spec.plugin, key=spec.name))(ctx)
    missing = [m for m in AGENT_METHODS if not callable(getattr(made, m, None))]
    missing += [a for a in AGENT_ATTRIBUTES if not hasattr(made, a)]
    if missing:
        raise PluginError(
            f"agent {spec.name!r}: {spec.plugin} returned a {type(made).__name__}, not an agent: it lacks "
            f"{', '.join(missing)} (embodmem.api.Policy)"
        )
    agent = cast(Agent, made)
    agent.name = spec.name
    return agent
