"""Every agent the app can run, by name: how to build it and how the runner treats it.

One :class:`AgentSpec` per agent, read by the config checks (which names are allowed), the app (how
to build one, which run warm and cold, whether the embedder is loaded) and the re-runner. The shipped
agents are :data:`AGENTS`; the memory agent's variants (:mod:`embodmem.agents.variants`) join as one
spec each. Plug-ins join by name without any edit here (:func:`get_agent_spec`, :mod:`embodmem.plugins`):

- a memory class (:class:`embodmem.api.Memory`) named by ``module:Class`` or registered under the
  ``embodmem.memories`` entry-point group runs as a memory design: the memory agent with that memory;
  ``<variant>+<memory>`` (e.g. ``memory_no_recall+recency``) puts it into a variant;
- an agent class or factory (:class:`embodmem.api.Policy`) named by ``module:factory`` or registered
  under ``embodmem.agents`` runs as an agent; it is called with the :class:`BuildContext`.

Example:
    >>> AGENTS["explorer"].carries_memory, AGENTS["memory"].carries_memory, AGENTS["oracle"].needs_embedder
    (False, True, False)
    >>> sorted(baseline_names())[:3]
    ['explorer', 'mapped', 'oracle']
    >>> spec = get_agent_spec("memory_no_recall+embodmem.memory:AgentMemory")
    >>> spec.carries_memory, spec.variant.agent, spec.variant.memory_class
    (True, {'recall': False}, 'embodmem.memory:AgentMemory')
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

from embodmem.agents.variants import VARIANTS, Variant
from embodmem.plugins import PluginError, describe, installed, is_import_path, load_object

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from embodmem.agents.base import Agent, RecognitionEmbedder
    from embodmem.agents.vlm.config import VLMConfig
    from embodmem.envs.underwater import UnderwaterEnv
    from embodmem.memory.protocol import Memory

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

    def memory(self, variant: Variant) -> Memory:
        """A fresh memory from the ``memory`` group with ``variant``'s changes (of its plug-in class, if any)."""
        ...

    @property
    def memory_design(self) -> str:
        """The run's main memory design (``memory``, or ``agent.memory``'s plug-in): the VLM's navigator."""
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
    plugin: str | None = None
    """For a plug-in agent: the ``module:attribute`` of its class or factory."""

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


_PLUGIN_SPECS: dict[str, AgentSpec] = {}
"""Plug-in specs resolved so far, by name (a name is imported and checked once per process)."""

Wanted = Literal["agent", "memory", "any"]


def get_agent_spec(name: str, key: str = "agent", wanted: Wanted = "any") -> AgentSpec:
    """The spec of ``name``: a shipped agent or variant, else a plug-in (see the module's docstring).

    Args:
        name: the agent's name, a plug-in's entry-point name or a ``module:attribute`` path.
        key: the config key that named it (for messages).
        wanted: ``"memory"`` for a key that names memories only (``agent.memory``), ``"agent"`` for
            agents only; a path is otherwise a memory if it is a class without ``act``.

    Raises:
        PluginError: one line naming ``key``, the value and what is wrong: an unknown name (listing
            every allowed one), a module that does not import, a missing attribute, a class that
            lacks a protocol method (named).
    """
    if name in AGENTS and wanted != "memory":
        return AGENTS[name]
    cache_key = f"{wanted}|{name}"
    if cache_key not in _PLUGIN_SPECS:
        _PLUGIN_SPECS[cache_key] = _plugin_spec(name, key, wanted)
    return _PLUGIN_SPECS[cache_key]


def unknown_agent_message(key: str, name: str) -> str:
    """One line: ``name`` is no agent; every name that would be."""
    agents = ", ".join(sorted(installed("agent"))) or "none"
    memories = ", ".join(sorted(installed("memory"))) or "none"
    return (
        f"{key} {name!r} is unknown; allowed: {', '.join(AGENTS)}; installed plug-ins: agents: {agents}, "
        f"memories: {memories}; or a 'module:Class' path (a memory class or an agent factory; "
        "embodmem-run --list-plugins lists them)"
    )


def _plugin_spec(name: str, key: str, wanted: Wanted) -> AgentSpec:
    # The protocols (numpy, pydantic) only for plug-ins: the config checks read the table above alone.
    from embodmem.agents.base import AGENT_METHODS, MemoryCarrier
    from embodmem.memory.protocol import missing_memory_members

    if "+" in name and wanted != "agent":
        base, _, memory = name.partition("+")
        if base not in VARIANTS or VARIANTS[base].textlog:
            frame_variants = ", ".join(v for v, spec in VARIANTS.items() if not spec.textlog)
            raise PluginError(f"{key}={name!r}: {base!r} is not a frame-memory variant; allowed: {frame_variants}")
        inner = get_agent_spec(memory, key, "memory")
        assert inner.variant is not None and inner.variant.memory_class is not None
        variant = dataclasses.replace(VARIANTS[base], name=name, memory_class=inner.variant.memory_class)
        return dataclasses.replace(
            inner, name=name, description=f"{base} with {inner.variant.memory_class}", variant=variant
        )
    agents, memories = installed("agent"), installed("memory")
    if is_import_path(name):
        path, target = name, load_object("memory" if wanted == "memory" else "agent", name, key=key)
        is_memory = wanted == "memory" or (
            wanted == "any" and inspect.isclass(target) and not callable(getattr(target, "act", None))
        )
    elif name in agents and wanted != "memory":
        path, target, is_memory = agents[name].value, load_object("agent", name, key=key), False
    elif name in memories and wanted != "agent":
        path, target, is_memory = memories[name].value, load_object("memory", name, key=key), True
    else:
        raise PluginError(unknown_agent_message(key, name))
    if not callable(target):
        what = "a memory class" if is_memory else "an agent class or factory"
        raise PluginError(f"{key}={name!r}: {path} is a {type(target).__name__}, not {what}")
    missing: list[str] = []
    if is_memory:
        missing = missing_memory_members(target) if inspect.isclass(target) else []
        if missing:
            raise PluginError(
                f"{key}={name!r}: class {describe(target)} lacks the memory method(s) {', '.join(missing)} "
                "(embodmem.api.Memory)"
            )
        variant = Variant(name, f"the memory agent with the plug-in memory {path}", memory_class=path)
        return AgentSpec(name, variant.description, f"{BUILDERS}:variant", carries_memory=True, variant=variant)
    if inspect.isclass(target):
        missing = [m for m in AGENT_METHODS if not callable(getattr(target, m, None))]
    if missing:
        raise PluginError(
            f"{key}={name!r}: class {describe(target)} lacks the agent method(s) {', '.join(missing)} "
            "(embodmem.api.Policy)"
        )
    carries = getattr(target, "carries_memory", None)
    if carries is None:
        carries = inspect.isclass(target) and issubclass(target, MemoryCarrier)
    return AgentSpec(
        name,
        f"plug-in agent {path}",
        f"{BUILDERS}:plugin",
        needs_embedder=bool(getattr(target, "needs_embedder", True)),
        carries_memory=bool(carries),
        plugin=path,
    )


def baseline_names() -> tuple[str, ...]:
    """Agents that run once beside the main agent (``experiment.baselines``)."""
    return tuple(name for name, spec in AGENTS.items() if not spec.carries_memory)


def memory_carriers() -> tuple[str, ...]:
    """Agents run warm and cold."""
    return tuple(name for name, spec in AGENTS.items() if spec.carries_memory)
