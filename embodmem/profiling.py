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
        self._seconds: dict[str, float] = defaultdict(float)
        self._calls: dict[str, int] = defaultdict(int)
        self._sections: dict[str, _Section] = {}
        self._open_parts: list[_Section] = []
        """The parts (sections named ``whole/part``) entered and not yet left, innermost last."""

    @property
    def seconds(self) -> dict[str, float]:
        """Total wall seconds per section name (the sections' own counts folded in when read: read it
        through the profiler, not through a dictionary kept from before)."""
        self._fold()
        return self._seconds

    @property
    def calls(self) -> dict[str, int]:
        """Entries per section name."""
        self._fold()
        return self._calls

    def _fold(self) -> None:
        """Move what each section counted on itself into :attr:`seconds` and :attr:`calls`: a
        section's exit adds to its own two numbers, not to two dictionaries (about ten exits a step)."""
        for name, section in self._sections.items():
            if section.calls:
                self._seconds[name] += section.seconds
                self._calls[name] += section.calls
                section.seconds, section.calls = 0.0, 0

    def section(self, name: str) -> _Section:
        """A context manager adding its wall time to ``name``: one plain object per name, made once
        (a step enters about ten sections; a new object, or a generator-based one, per entry costs
        more). A section entered again inside itself is timed once, from its outer entry.

        A part (a name with a ``/``, as ``agent/planning``) is timed on its own: a part entered inside
        another stops the outer one's clock until it is left, so a plan that queries memory counts
        the query under ``agent/memory_query`` only, and the parts add up to at most their whole."""
        section = self._sections.get(name)
        if section is None:
            section = self._sections[name] = _Section(name, self._open_parts if "/" in name else None)
        return section

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
    """The timed stretches of one name of :meth:`Profiler.section`."""

    __slots__ = ("name", "start", "depth", "seconds", "calls", "open_parts")

    def __init__(self, name: str, open_parts: list[_Section] | None = None) -> None:
        self.name = name
        self.start = 0.0
        self.depth = 0
        """Entries not yet left (more than one: entered again inside itself)."""
        self.seconds = 0.0
        """Wall seconds not yet folded into the profiler's (:meth:`Profiler._fold`)."""
        self.calls = 0
        self.open_parts = open_parts
        """The profiler's open parts, for a part (None for a whole)."""

    def __enter__(self) -> None:
        if not self.depth:
            now = self.start = time.perf_counter()
            parts = self.open_parts
            if parts is not None:
                if parts:  # the enclosing part's clock stops while this one runs
                    outer = parts[-1]
                    outer.seconds += now - outer.start
                parts.append(self)
        self.depth += 1

    def __exit__(self, *exc: object) -> None:
        self.depth -= 1
        if not self.depth:
            now = time.perf_counter()
            self.seconds += now - self.start
            parts = self.open_parts
            if parts is not None:
                parts.pop()
                if parts:
                    parts[-1].start = now
        self.calls += 1
