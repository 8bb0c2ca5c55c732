"""What a process imports, and when: package attributes imported when first used (PEP 562), so that
importing a package for one light name (a config class, a settings check) does not import what its
other names need (FAISS, pydantic, the renderer), and imports kept out of a library's start-up.
``embodmem-run --help`` and a refused command line stay under a second that way.

Example:
    >>> __getattr__ = lazy_attributes("pkg", {"sqrt": "math"})
    >>> __getattr__("sqrt")(9.0)
    3.0
    >>> __getattr__("cbrt")
    Traceback (most recent call last):
    ...
    AttributeError: module 'pkg' has no attribute 'cbrt'
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any


def lazy_attributes(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports each name of ``homes`` (name -> the
    module defining it) on first use."""

    def __getattr__(name: str) -> Any:
        if name in homes:
            return getattr(importlib.import_module(homes[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


@contextmanager
def import_refused(name: str) -> Iterator[None]:
    """Within the block, ``import name`` raises ImportError (unless it is imported already), as if
    the package were not installed; afterwards it imports as usual. For a library that imports an
    optional package at start-up only to offer it later: timm imports wandb (seconds) in case its
    training summaries are sent there, which open_clip never asks for.

    >>> with import_refused("json.tool"):
    ...     import json.tool
    Traceback (most recent call last):
    ...
    ModuleNotFoundError: import of json.tool halted; None in sys.modules
    >>> import json.tool
    """
    if name in sys.modules:
        yield
        return
    sys.modules[name] = None  # type: ignore[assignment]  # Python's own marker of a refused import
    try:
        yield
    finally:
        if name in sys.modules and sys.modules[name] is None:
            del sys.modules[name]
