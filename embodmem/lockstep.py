"""The lockstep driver: many lanes advance one step per round, their frames embedded in one call.

A *lane* is one (sequence, world, agent, condition) run of the experiment, paused before each action
(:data:`embodmem.runner.Steps`): it yields the observation its agent is about to act on. Each round,
the driver embeds the camera frames of every waiting lane whose agent embeds frames in one batched
``embed_images`` call on the shared embedder, which keeps them in its content cache; then it resumes
each lane for one step, and the agent's own one-frame call finds its frame in the cache. Envs, agents,
memories and maps stay per lane: only the embedder's forward pass is shared.

Why not bit-identical to the sequential runner: a batch goes through the network in one pass, whose
matrix products may round the last bits differently from a one-frame pass (README, "Lockstep").
Two runs with the same lane count batch the same frames together, so they write the same records.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from embodmem.agents.base import Observation
from embodmem.profiling import Profiler


class FrameEmbedder(Protocol):
    """The embedder the lanes' agents share (:class:`~embodmem.embedding.embedder.ClipEmbedder`)."""

    def cache_frames(self, images: np.ndarray, /) -> None: ...


@dataclass(frozen=True)
class Lockstep:
    """How the runner interleaves its lanes (``experiment.lanes``)."""

    lanes: int
    """Lanes advanced together (>= 1); more wait and start as others end."""
    embedder: FrameEmbedder | None = None
    """The embedder every embedding agent of the run holds; None: no batched embedding."""
    embeds: frozenset[str] = frozenset()
    """Agents (by name) that embed the observation's frame at every step."""


@dataclass
class Lane:
    """One run of the experiment, paused before each action."""

    steps: Iterator[Observation]
    """Yields the observation its agent is about to act on (a :data:`embodmem.runner.Steps`)."""
    embeds: bool
    """Its agent embeds each observation's frame (then the round's batch holds it)."""


def run_lanes(lanes: Iterable[Lane], lockstep: Lockstep, profiler: Profiler | None = None) -> None:
    """Run every lane to its end, ``lockstep.lanes`` at a time, one step per lane per round.

    Lanes start in the order given, each when a place is free, and a round resumes them in that
    order, so a run is the same every time. An error in a lane stops the whole run (as it stops the
    sequential runner); episodes already written stay written.
    """
    if lockstep.lanes < 1:
        raise ValueError(f"lanes={lockstep.lanes} must be >= 1")
    profiler = profiler or Profiler()
    queue = iter(lanes)
    waiting: list[tuple[Lane, Observation]] = []  # each started lane and the observation it waits at
    exhausted = False
    while True:
        while not exhausted and len(waiting) < lockstep.lanes:
            lane = next(queue, None)
            if lane is None:
                exhausted = True
            else:
                _advance(lane, waiting)
        if not waiting:
            return
        frames = [obs["image"] for lane, obs in waiting if lane.embeds]
        if lockstep.embedder is not None and frames:
            with profiler.section("lockstep embedding"):
                lockstep.embedder.cache_frames(np.stack(frames))
        resumed, waiting = waiting, []
        for lane, _ in resumed:
            _advance(lane, waiting)


def _advance(lane: Lane, waiting: list[tuple[Lane, Observation]]) -> None:
    """Run ``lane`` to its next pause and queue it there (a lane that ended is dropped)."""
    obs = next(lane.steps, None)
    if obs is not None:
        waiting.append((lane, obs))
