"""Allowed ranges of numeric settings, and the one-line error every settings dataclass raises.

A leaf module (it imports nothing of the project), so the environment's and the agents' configs can
check their own fields where they are defined, and the Hydra layer (:mod:`embodmem.config`) only
renames the class in the message to the config key (``EnvConfig.size`` -> ``env.size``).

Example:
    >>> Range(24, 512, integer=True).describe()
    'an integer in [24, 512]'
    >>> check_ranges("EnvConfig", {"size": 8}, {"size": Range(24, 512, integer=True)})
    Traceback (most recent call last):
    ...
    ValueError: EnvConfig.size: 8 is not allowed; allowed: an integer in [24, 512]
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Range:
    """Allowed numbers: ``low``/``high`` inclusive unless ``low_open``; ``integer`` refuses floats.

    >>> Range(0, low_open=True).allows(0.0)
    False
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    integer: bool = False

    def allows(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or value <= self.high

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        if self.low is not None and self.high is not None:
            return f"{kind} in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}]"
        if self.low is not None:
            return f"{kind} {'>' if self.low_open else '>='} {self.low:g}"
        return f"{kind} <= {self.high:g}" if self.high is not None else kind


def not_allowed(key: str, value: Any, allowed: str) -> str:
    """The one-line message for a refused value.

    >>> not_allowed("env.size", 8, "an integer in [24, 512]")
    'env.size: 8 is not allowed; allowed: an integer in [24, 512]'
    """
    return f"{key}: {value!r} is not allowed; allowed: {allowed}"


def items(value: Any) -> list[Any]:
    """A list setting's items, or a single value as a one-item list (ranges apply to every item)."""
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else [value]


_KINDS: dict[Any, tuple[str, Callable[[Any], bool]]] = {
    bool: ("true or false", lambda v: isinstance(v, bool)),
    int: ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    float: ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    str: ("a string", lambda v: isinstance(v, str)),
}


_HINTS: dict[type, dict[str, Any]] = {}


def _type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, evaluated once per class: every env and agent built checks its
    config, and evaluating the annotations' strings each time cost several per cent of a suite run."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def check_types(obj: Any) -> None:
    """Refuse a dataclass field whose value does not have its declared type (``bool``, ``int``, ``float``,
    ``str``, ``Optional`` of those, or ``list`` of them), naming ``Class.field`` (``ValueError``).

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class C:
    ...     n: int = 1
    >>> check_types(C(n=None))
    Traceback (most recent call last):
    ...
    ValueError: C.n: None is not allowed; allowed: an integer
    """
    hints = _type_hints(type(obj))
    for f in dataclasses.fields(obj):
        hint, value = hints[f.name], getattr(obj, f.name)
        args = typing.get_args(hint)
        optional = type(None) in args
        if optional:
            hint = next(a for a in args if a is not type(None))
        if value is None and optional:
            continue
        if typing.get_origin(hint) is list:
            what, ok = _KINDS[typing.get_args(hint)[0]]
            if not (isinstance(value, list) and all(ok(v) for v in value)):
                raise ValueError(not_allowed(f"{type(obj).__name__}.{f.name}", value, f"a list of {what}s"))
        elif hint in _KINDS and not _KINDS[hint][1](value):
            what = _KINDS[hint][0] + (" or null" if optional else "")
            raise ValueError(not_allowed(f"{type(obj).__name__}.{f.name}", value, what))


def check_ranges(owner: str, values: Mapping[str, Any], limits: Mapping[str, Range]) -> None:
    """Raise ``ValueError`` (:func:`not_allowed`, keys named ``owner.field``) at the first value of
    ``values`` outside its range in ``limits``; ``None`` values (optional settings) pass."""
    for name, rng in limits.items():
        value = values.get(name)
        if value is not None and not rng.allows(value):
            raise ValueError(not_allowed(f"{owner}.{name}", value, rng.describe()))
