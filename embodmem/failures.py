"""Failures inside a run: one line and a distinct exit code per kind, no traceback unless asked.

Why: a user whose disk filled up, whose saved memory is corrupt or whose VLM server went away needs
to know which of these happened and where the records so far are, not 30 lines of Hydra traceback;
a script driving sweeps needs an exit code it can branch on. Exit 2 stays "bad input, nothing ran"
(:mod:`embodmem.preflight`, :mod:`embodmem.config`); the kinds below start at 3. ``EMBODMEM_DEBUG=1``
(or ``hydra.verbose=true``) prints the traceback before the line. Errors of no listed kind are bugs
and keep their traceback.

Example:
    >>> import errno
    >>> classify(OSError(errno.ENOSPC, "No space left on device")).code
    7
    >>> classify(KeyError("x")) is None
    True
"""

from __future__ import annotations

import errno
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from embodmem.agents.vlm.errors import VLMError
from embodmem.episode_log import EpisodeLogError
from embodmem.memory.persistence import MemoryLoadError, MemoryLockError

DEBUG_ENV = "EMBODMEM_DEBUG"
"""Set to 1 to see the traceback of a failure inside a run."""


@dataclass(frozen=True)
class FailureKind:
    """One kind of failure inside a run: its exit code, its name in the message, and how to spot it."""

    code: int
    name: str
    matches: Callable[[BaseException], bool]


def _os_error(*codes: int) -> Callable[[BaseException], bool]:
    return lambda err: isinstance(err, OSError) and err.errno in codes


FAILURE_KINDS: tuple[FailureKind, ...] = (
    FailureKind(3, "the VLM server failed", lambda err: isinstance(err, VLMError)),
    FailureKind(4, "a saved memory cannot be loaded", lambda err: isinstance(err, MemoryLoadError)),
    FailureKind(5, "the memory directory has another writer", lambda err: isinstance(err, MemoryLockError)),
    FailureKind(6, "an episode log cannot be written", lambda err: isinstance(err, EpisodeLogError)),
    FailureKind(7, "the disk is full", _os_error(errno.ENOSPC, errno.EDQUOT)),
    FailureKind(8, "permission denied", lambda err: isinstance(err, PermissionError) or _os_error(errno.EROFS)(err)),
    FailureKind(9, "a file could not be written or read", lambda err: isinstance(err, OSError)),
    FailureKind(10, "out of memory", lambda err: isinstance(err, MemoryError)),
)
"""Checked in order on the error and then on its causes (an aborted episode carries its cause)."""


@dataclass(frozen=True)
class Failure:
    kind: FailureKind
    error: BaseException
    """The error of that kind (the cause, when the raised error wraps it)."""

    @property
    def code(self) -> int:
        return self.kind.code


def classify(err: BaseException) -> Failure | None:
    """The kind of ``err`` (looking through ``__cause__``/``__context__``), or ``None`` for a bug."""
    chain: list[BaseException] = []
    current: BaseException | None = err
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    for kind in FAILURE_KINDS:
        for item in chain:
            if kind.matches(item):
                return Failure(kind, item)
    return None


def debug_requested(hydra_verbose: object = False) -> bool:
    """Whether to show tracebacks: ``EMBODMEM_DEBUG`` set to anything but 0/empty, or Hydra's verbose."""
    return os.environ.get(DEBUG_ENV, "") not in ("", "0") or bool(hydra_verbose)


def report(err: BaseException, failure: Failure, where: str, debug: bool) -> None:
    """Print the one line (after the traceback when ``debug``) to stderr."""
    if debug:
        traceback.print_exception(err)
    shown = err if not isinstance(failure.error, OSError) or err is failure.error else failure.error
    text = " ".join(str(shown).split()) or type(shown).__name__
    if isinstance(failure.error, OSError) and failure.error.filename and str(failure.error.filename) not in text:
        text += f" ({failure.error.filename})"
    hint = "" if debug else f"; {DEBUG_ENV}=1 shows the traceback"
    print(f"embodmem-run: error: {failure.kind.name} (exit {failure.code}): {text}; {where}{hint}", file=sys.stderr)
