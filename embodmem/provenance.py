"""Where a figure came from: the command, the commit, the date and the machine that produced it.

Every results file (a benchmark's markdown table, a benchmark result JSON) starts from one
:class:`Provenance`, so a reader can re-run the exact command on the exact code and compare machines.

Example:
    >>> facts = Provenance.collect(["python", "benchmarks/floor.py", "--worlds", "4"])
    >>> facts.command
    'python benchmarks/floor.py --worlds 4'
    >>> facts.cpus >= 1
    True
"""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from embodmem.atomic import atomic_write_text

REPO_ROOT = Path(__file__).resolve().parent.parent
"""The source checkout an editable install points at (its git commit is recorded when there is one)."""


def git_commit(root: Path = REPO_ROOT) -> str:
    """The checkout's commit, with ``+dirty`` when tracked files differ from it; ``unknown`` outside git."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{commit}+dirty" if dirty else commit


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float:
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0.0
    return round(pages * page_size / 2**30, 1)


@dataclass(frozen=True)
class Provenance:
    """The facts a results file carries about how it was made."""

    command: str
    commit: str
    date: str
    """UTC, ISO 8601 to the second."""
    python: str
    platform: str
    cpu: str
    cpus: int
    """Cores this process may use."""
    memory_gib: float

    @classmethod
    def collect(cls, argv: Sequence[str] | None = None) -> Provenance:
        """The facts of this process (``argv`` defaults to how it was started)."""
        words = list(argv) if argv is not None else ["python", *sys.argv]
        return cls(
            command=shlex.join(words),
            commit=git_commit(),
            date=datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
            python=platform.python_version(),
            platform=platform.platform(terse=True),
            cpu=_cpu_model(),
            cpus=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
            memory_gib=_memory_gib(),
        )

    def as_dict(self) -> dict[str, object]:
        """The facts as JSON-ready values."""
        return asdict(self)

    def markdown(self) -> str:
        """The facts as the lines under a results file's title."""
        return (
            f"Command: `{self.command}`  \n"
            f"Commit: `{self.commit}`, {self.date}  \n"
            f"Machine: {self.cpu}, {self.cpus} CPUs, {self.memory_gib} GiB, {self.platform}, Python {self.python}"
        )


def write_results_markdown(path: str | os.PathLike[str], title: str, body: str, facts: Provenance) -> Path:
    """Atomically write a benchmark's results file: a title, its provenance, then ``body`` (markdown)."""
    text = f"# {title}\n\n{facts.markdown()}\n\n{body.rstrip()}\n"
    return atomic_write_text(path, text)
