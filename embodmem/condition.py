"""The condition an agent runs a task sequence in, and what each one does with memory.

One type for the runner (what to reset, carry, poison, sleep, save and evaluate), the app and the
registry (which agents run in which), the config check (which a user may ask for), the record and
the re-runner. It compares, prints and serialises as its plain string, so records stay as written.

    >>> Condition.cold.resets_memory, Condition.warm.carries_memory, f"{Condition.eval}", Condition("single")
    (True, True, 'eval', <Condition.single: 'single'>)
    >>> [c.value for c in REQUESTABLE]
    ['warm', 'cold']
"""

from __future__ import annotations

from enum import Enum


class Condition(str, Enum):
    """warm: memory carried between tasks; cold: memory reset before each task; single: an agent
    without memory, run once; eval: a GEM evaluation episode on a fresh agent holding the state a
    warm run carried."""

    warm = "warm"
    cold = "cold"
    eval = "eval"
    single = "single"

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @property
    def carries_memory(self) -> bool:
        """Memory lives on between the tasks of the sequence: loaded from a snapshot at the start,
        poisoned and slept on between tasks, saved at the end, evaluated by GEM rows."""
        return self is Condition.warm

    @property
    def resets_memory(self) -> bool:
        """Memory is forgotten before each task."""
        return self is Condition.cold

    @property
    def is_evaluation(self) -> bool:
        """A GEM row: its record says after how many tasks (``eval_after``)."""
        return self is Condition.eval


REQUESTABLE: tuple[Condition, ...] = (Condition.warm, Condition.cold)
"""The conditions ``experiment.conditions`` may name for memory carriers (the others follow)."""
