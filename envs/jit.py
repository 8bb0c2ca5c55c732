"""Numba kernels compiled on their first call, not at import.

Importing Numba takes about half a second of CPU (it pulls in its compiler, and coverage when that
is installed), which every process that imports the env or the geodesic paid, including a command
line refused before any work and ``--help``. :func:`njit_on_first_call` keeps the decorator's
options and defers both the import and the compilation to the first call; the compiled dispatcher
then runs every call, behind one Python call (:func:`compiled` hands a hot caller the dispatcher
itself). A kernel wrapped so cannot be called from another
Numba kernel (Numba types its globals at compile time): wrap only the entry points.

Example:
    >>> import numpy as np
    >>> @njit_on_first_call(cache=False)
    ... def total(values: np.ndarray) -> float:
    ...     s = 0.0
    ...     for v in values:
    ...         s += v
    ...     return s
    >>> total(np.arange(4.0))
    6.0
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Generic, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class LazyKernel(Generic[F]):
    """``numba.njit(**options)(function)``, built on the first call."""

    __slots__ = ("function", "options", "kernel", "__dict__")

    def __init__(self, function: F, options: dict[str, Any]) -> None:
        self.function = function
        self.options = options
        self.kernel: Any = None
        functools.update_wrapper(self, function)

    def compiled(self) -> Any:
        """The Numba dispatcher (imports Numba and compiles, or loads the cache, the first time)."""
        if self.kernel is None:
            import numba

            self.kernel = numba.njit(**self.options)(self.function)
        return self.kernel

    def __call__(self, *args: Any) -> Any:
        kernel = self.kernel
        if kernel is None:
            kernel = self.compiled()
        return kernel(*args)


def compiled(kernel: F) -> F:
    """The Numba dispatcher behind ``kernel`` (compiled now if it was wrapped by
    :func:`njit_on_first_call`): a caller that keeps it calls the compiled code with no wrapper's
    Python call in between, which a kernel run once per env step notices."""
    return kernel.compiled() if isinstance(kernel, LazyKernel) else kernel


def njit_on_first_call(**options: Any) -> Callable[[F], F]:
    """A decorator like ``numba.njit(**options)`` that imports Numba and compiles at the first call."""

    def wrap(function: F) -> F:
        return LazyKernel(function, options)  # type: ignore[return-value]

    return wrap
