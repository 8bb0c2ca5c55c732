"""Plug-ins found by name: an installed package's entry point or a ``module:attribute`` path.

Memories, agents, EQA answerers and loggers can come from outside the package, the way pytest and Hydra
find theirs. A name given in the config is resolved in this order:

1. ``"my_pkg.mem:MyMemory"`` (a colon): imported from that module, attribute path after the colon;
2. a name registered by an installed package under the kind's entry-point group, e.g. in its
   ``pyproject.toml``::

       [project.entry-points."embodmem.memories"]
       recency = "my_memory.memory:RecencyMemory"

3. anything else is left to the caller's own registry (the stock names); an unknown name gets one line
   that lists the stock names, the installed plug-ins and the ``module:Class`` form.

Every failure is a :class:`PluginError` whose message is one line naming the config key, the value and
what went wrong, so the app can refuse it before any episode runs.

Example:
    >>> from embodmem.plugins import load_object
    >>> load_object("memory", "collections:OrderedDict").__name__
    'OrderedDict'
    >>> try:
    ...     load_object("memory", "collections:NoSuchThing")
    ... except PluginError as error:
    ...     print(error)
    agent.memory='collections:NoSuchThing': module 'collections' has no attribute 'NoSuchThing'
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points


@dataclass(frozen=True)
class PluginKind:
    """One kind of plug-in: where the config names it and where installed packages register it."""

    key: str
    """The config key that names it (for messages), e.g. ``agent.memory``."""
    group: str
    """The entry-point group installed packages register it under."""


KINDS: dict[str, PluginKind] = {
    "memory": PluginKind("agent.memory", "embodmem.memories"),
    "agent": PluginKind("agent", "embodmem.agents"),
    "answerer": PluginKind("experiment.eqa.answerers", "embodmem.answerers"),
    "logger": PluginKind("logger.backends", "embodmem.loggers"),
}
"""The plug-in kinds by short name."""


class PluginError(ValueError):
    """A plug-in that cannot be used; the message is one line naming the key, the value and the cause."""


def is_import_path(name: str) -> bool:
    """True for a ``module:attribute`` path (rather than a registered name)."""
    return ":" in name


def installed(kind: str) -> dict[str, EntryPoint]:
    """The entry points installed packages registered for ``kind``, by name."""
    return {ep.name: ep for ep in entry_points(group=KINDS[kind].group)}


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


def _import_attribute(kind: str, name: str, key: str | None = None) -> object:
    key = key or KINDS[kind].key
    module_name, _, attribute = name.partition(":")
    if not module_name or not attribute:
        raise PluginError(f"{key}={name!r}: a plug-in path is 'module:attribute' (e.g. 'my_pkg.mem:MyMemory')")
    try:
        found: object = importlib.import_module(module_name)
    except Exception as error:  # any error while importing the user's module is theirs to see, in one line
        raise PluginError(f"{key}={name!r}: module {module_name!r} does not import ({_one_line(error)})") from None
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise PluginError(f"{key}={name!r}: module {module_name!r} has no attribute {attribute!r}")
        found = getattr(found, part)
    return found


def load_object(kind: str, name: str, stock: Iterable[str] = (), key: str | None = None) -> object:
    """The object ``name`` refers to: a ``module:attribute`` path or an installed entry point's target.

    ``stock`` lists the caller's own names, only for the message of an unknown name (a stock name is the
    caller's to resolve; this raises for it like for any other unknown name). ``key`` names the config
    key in messages when it is not the kind's usual one (e.g. ``experiment.variants``).
    """
    if is_import_path(name):
        return _import_attribute(kind, name, key)
    entries = installed(kind)
    if name in entries:
        target = entries[name].value
        try:
            return entries[name].load()
        except Exception as error:
            raise PluginError(
                f"{key or KINDS[kind].key}={name!r}: the installed plug-in {target!r} does not load "
                f"({_one_line(error)})"
            ) from None
    raise PluginError(unknown_name_message(kind, name, stock))


def unknown_name_message(kind: str, name: str, stock: Iterable[str]) -> str:
    """One line: ``name`` is unknown, with every name that would be allowed."""
    stock_names = ", ".join(stock) or "none"
    plugins = ", ".join(sorted(installed(kind))) or "none"
    return (
        f"{KINDS[kind].key}={name!r} is unknown; allowed: {stock_names}; installed plug-ins: {plugins}; "
        "or a 'module:Class' path"
    )


def listing(stock: dict[str, Iterable[str]]) -> str:
    """Every name each kind accepts: ``stock`` (the caller's own names, by kind) and the installed
    plug-ins with their targets (``embodmem-run --list-plugins`` prints it).

    Example:
        >>> print(listing({"memory": ["memory"]}).splitlines()[0])
        memory (agent.memory, group embodmem.memories): stock: memory
    """
    lines = []
    for kind, spec in KINDS.items():
        if kind not in stock:
            continue
        lines.append(f"{kind} ({spec.key}, group {spec.group}): stock: {', '.join(stock[kind]) or 'none'}")
        entries = installed(kind)
        lines += [f"  {name} = {entries[name].value}" for name in sorted(entries)] or ["  (no installed plug-ins)"]
    lines.append("any of them also as a 'module:attribute' path, e.g. agent.memory=my_pkg.mem:MyMemory")
    return "\n".join(lines)


def missing_members(candidate: object, members: Iterable[str]) -> list[str]:
    """The names in ``members`` that ``candidate`` (a class or an instance) lacks."""
    return [member for member in members if not hasattr(candidate, member)]


def describe(obj: object) -> str:
    """``module:qualname`` of a class or function (or of an instance's class), as a config would name it."""
    target = obj if inspect.isclass(obj) or inspect.isfunction(obj) else type(obj)
    return f"{target.__module__}:{target.__qualname__}"


def identity(obj: object) -> str:
    """:func:`describe`, and the ``version`` the class or factory declares (if any): what a plug-in
    name resolved to, to compare across runs.

    Example:
        >>> identity(PluginKind)
        'embodmem.plugins:PluginKind'
    """
    version = getattr(obj, "version", None)
    return describe(obj) + ("" if version is None else f" version {version}")
