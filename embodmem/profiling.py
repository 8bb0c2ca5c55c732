"""Where a run's time goes: wall time per named section (env, agent, agent/embedding, ...)."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
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


class Profiler:
    """Wall time per named section, accumulated over a run (to know which part is slow)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    @contextmanager
    def section(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - start
            self.calls[name] += 1

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
