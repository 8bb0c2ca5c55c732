"""What the attack scripts (attack_run_failures.py, attack_vlm_server.py, attack_map_files.py) and
bench_vlm_failures.py share: the repository on the import path (they read the test chat server,
``tests/agents/chat_server.py``), the CLI run as a user runs it (``python -m embodmem`` in a
subprocess, one BLAS thread, the repository on PYTHONPATH), a chat server's reply that misbehaves on
every n-th request, and the results file written and printed.

Importing this module puts the repository on ``sys.path``: import it before ``tests.agents``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from embodmem.atomic import atomic_write_text  # noqa: E402
from tests.agents.chat_server import Reply  # noqa: E402  (needs the repository on the path)

WARM_ONLY = ("experiment.baselines=[]", "experiment.conditions=[warm]", "logger.progress=false", "logger.plots=false")
"""Overrides of every attack run: the agent alone (no baselines), warm only, no progress bars or plots."""


def cli_env(drop: Sequence[str] = (), **extra: str) -> dict[str, str]:
    """The environment of a CLI run: this process's without ``drop``, the repository on PYTHONPATH,
    one BLAS thread, then ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update({"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", **extra})
    return env


def cli_command(*overrides: str, prefix: Sequence[str] = ()) -> list[str]:
    """``python -m embodmem`` with Hydra ``overrides``, behind ``prefix`` (e.g. ``setpriv ...``)."""
    return [*prefix, sys.executable, "-m", "embodmem", *overrides]


def run_cli(
    *overrides: str, timeout: float, prefix: Sequence[str] = (), env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the CLI to its end, stdout and stderr captured as text (``env``: :func:`cli_env`'s by default)."""
    return subprocess.run(
        cli_command(*overrides, prefix=prefix),
        capture_output=True,
        text=True,
        env=cli_env() if env is None else env,
        timeout=timeout,
    )


def start_cli(*overrides: str) -> subprocess.Popen[str]:
    """Start the CLI without waiting (to kill it, or to watch a server while it runs)."""
    return subprocess.Popen(
        cli_command(*overrides), env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def nonblank_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


class EveryNth:
    """A chat server's ``respond``: ``odd()`` on every ``n``-th request, ``normal(body)`` on the
    others; ``sent`` counts the odd replies (the figure the run's counters must match)."""

    def __init__(self, n: int, odd: Callable[[], Reply], normal: Callable[[dict[str, Any]], Reply]):
        self.n, self.odd, self.normal = n, odd, normal
        self.requests = 0
        self.sent = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests += 1
            odd = self.requests % self.n == 0
            self.sent += odd
        return self.odd() if odd else self.normal(body)


def write_results(path: Path, lines: list[str]) -> None:
    """Write the report's ``lines`` to ``path`` (atomically) and print them."""
    text = "\n".join(lines)
    atomic_write_text(path, text)
    print(text)
