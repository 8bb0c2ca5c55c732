"""Where a run's time goes: wall time per named section (env, agent, agent/embedding, ...)."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import TypedDict


class SectionTime(TypedDict):
    """One row of :meth:`Profiler.table` (also what ``profile.json`` holds)."""

    section: str
    seconds: float
    """Total wall seconds in the section."""
    us_per_step: float
    """Microseconds per agent step."""
    share: float
    """Share of the top-level sections' total."""


class RunProfile(TypedDict):
    """What a run's ``profile.json`` holds (written by :func:`embodmem.app.run`)."""

    steps: int
    """Agent steps of the run."""
    loop_s: float
    """Wall seconds of the run's loop: every episode, not model loading or the report."""
    sections: list[SectionTime]


class Profiler:
    """Wall time per named section, accumulated over a run (to know which part is slow)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def section(self, name: str) -> _Section:
        """A context manager adding its wall time to ``name`` (a plain class: an agent step enters
        about 15 sections, and a generator-based one costs twice as much)."""
        return _Section(self, name)

    def table(self, steps: int) -> list[SectionTime]:
        """Rows: section, total seconds, microseconds per step, share of the total."""
        total = sum(v for k, v in self.seconds.items() if "/" not in k) or 1e-12
        return [
            SectionTime(
                section=k,
                seconds=round(v, 3),
                us_per_step=round(1e6 * v / max(steps, 1), 1),
                share=round(v / total, 3),
            )
            for k, v in sorted(self.seconds.items(), key=lambda kv: -kv[1])
        ]


class _Section:
    """One timed stretch of :meth:`Profiler.section`."""

    __slots__ = ("profiler", "name", "start")

    def __init__(self, profiler: Profiler, name: str) -> None:
        self.profiler = profiler
        self.name = name
        self.start = 0.0

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.profiler.seconds[self.name] += time.perf_counter() - self.start
        self.profiler.calls[self.name] += 1
