"""How each agent of :data:`~embodmem.agents.registry.AGENTS` is built from a run's context.

Each function takes the run's :class:`~embodmem.agents.registry.BuildContext` and the agent's spec;
the registry imports this module only when an agent is built.
"""

from __future__ import annotations

from embodmem.agents.base import Agent, RecognitionEmbedder
from embodmem.agents.config import ExplorerConfig, MemoryAgentConfig
from embodmem.agents.registry import AgentSpec, BuildContext
from embodmem.agents.variants import VARIANTS


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

    embedder = _embedder(ctx, spec)
    return MappedAgent(embedder, ctx.memory(VARIANTS["memory"]), ctx.settings(MemoryAgentConfig), ctx.env)


def vlm(ctx: BuildContext, spec: AgentSpec) -> Agent:
    from embodmem.agents.memory_agent import MemoryAgent
    from embodmem.agents.vlm_agent import VLMAgent

    navigator = ctx.build("memory")  # it executes the VLM's plans
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
