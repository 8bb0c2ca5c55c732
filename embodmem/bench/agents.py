"""``--agent NAME``: a stock agent of the registry or a plug-in, as config overrides for the app.

Stock names are the app's agents (embodmem.agents.registry) and the memory agent's variants; any
other name is resolved by the registry's plug-in rules (:func:`~embodmem.agents.registry.get_agent_spec`:
an installed entry point of ``embodmem.agents`` or ``embodmem.memories``, a ``module:Class`` path, or
``variant+memory``), so a plug-in that does not load is refused in one line before any episode runs,
and its distribution's version goes into the result. An agent plug-in runs as ``agent.plugin``, a
memory plug-in as the memory agent's ``agent.memory`` (and answers the questions through the
frame-memory answerer).

Example:
    >>> choice = resolve_agent("textlog")
    >>> choice.overrides, choice.kind, choice.answerer
    (['agent.name=memory', 'agent.variant=textlog'], 'stock', 'textlog')
    >>> resolve_agent("explorer").answerer is None
    True
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from typing import Literal

from embodmem.agents.registry import get_agent_spec
from embodmem.agents.variants import VARIANTS
from embodmem.config import AgentName
from embodmem.plugins import PluginError, load_object

ANSWERER_OF: dict[str, str] = {
    "memory": "frame_memory",
    "memory_keep_all": "keep_everything",
    "textlog": "textlog",
    "vlm": "vlm",
    "oracle": "oracle",
}
"""The question answerer (embodmem.eqa) that reads the same kind of memory as each stock agent; agents
without one skip the question-answering group."""
OVERRIDE_GROUPS = ("agent.", "memory.", "embedder.")
"""What ``--set`` may change: the agent's own settings, never the tasks, worlds or sensing."""


@dataclass(frozen=True)
class AgentChoice:
    name: str
    kind: Literal["stock", "plugin"]
    version: str
    overrides: list[str]
    """Config overrides that select the agent."""
    carries_memory: bool
    privileged: bool
    answerer: str | None


def stock_names() -> tuple[str, ...]:
    """The agents ``--agent`` takes by name: the app's main agents and the memory agent's variants."""
    return (*(a.value for a in AgentName if a is not AgentName.memory), *VARIANTS)


def _version(obj: object) -> str:
    """The ``version`` a plug-in's class or factory declares (embodmem.plugins.identity), else its distribution's."""
    declared = getattr(obj, "version", None)
    return str(declared) if declared is not None else _distribution_version(obj)


def _distribution_version(obj: object) -> str:
    module = getattr(obj, "__module__", "") or ""
    top = module.split(".")[0]
    for dist in importlib.metadata.packages_distributions().get(top, []):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown"


def resolve_agent(name: str) -> AgentChoice:
    """The agent ``name`` names; an unknown name lists the stock names and the installed plug-ins."""
    from embodmem import __version__

    if name in VARIANTS:
        spec = get_agent_spec(name)
        overrides = ["agent.name=memory", f"agent.variant={name}"]
        return AgentChoice(
            name, "stock", __version__, overrides, spec.carries_memory, spec.privileged, ANSWERER_OF.get(name)
        )
    if name in stock_names():
        spec = get_agent_spec(name)
        return AgentChoice(
            name,
            "stock",
            __version__,
            [f"agent.name={name}"],
            spec.carries_memory,
            spec.privileged,
            ANSWERER_OF.get(name),
        )
    try:
        spec = get_agent_spec(name, key="--agent")
    except ValueError as err:  # PluginError: one line naming the value and every allowed name
        raise PluginError(str(err) if str(err).startswith("--agent") else f"--agent: {err}") from None
    plugin = spec.plugin
    path = plugin or (spec.variant.memory_class if spec.variant is not None else None)
    version = _version(load_object("agent", path)) if path and ":" in path else "unknown"
    if plugin is not None:
        overrides = [f"agent.plugin={name}"]
        answerer = None
    else:  # a memory design: the memory agent (or ``variant+memory``: that variant) with the plug-in memory
        variant, _, memory = name.rpartition("+")
        overrides = ["agent.name=memory", f"agent.variant={variant or 'memory'}", f"agent.memory={memory}"]
        answerer = memory  # the frame-memory answerer reads a plug-in memory by the same name
    return AgentChoice(name, "plugin", version, overrides, spec.carries_memory, spec.privileged, answerer)


def check_overrides(overrides: list[str]) -> None:
    """Refuse a ``--set`` that changes anything but the agent, its memory or its embedder."""
    for item in overrides:
        key = item.split("=", 1)[0].lstrip("+~")
        if "=" not in item or not key.startswith(OVERRIDE_GROUPS):
            raise ValueError(
                f"--set: {item!r} is not allowed; allowed: KEY=VALUE with KEY under {', '.join(g.rstrip('.') for g in OVERRIDE_GROUPS)}"
            )
