"""The lockstep driver: many lanes advance one step per round, their frames embedded in one call and
their worlds stepped in one batch.

A *lane* is one (sequence, world, agent, condition) run of the experiment, paused twice a step
(:data:`embodmem.runner.Steps`): at the observation its agent is about to act on, and at its env's
step (an :class:`EnvStep`). Each round, the driver embeds the camera frames of every lane whose
agent embeds frames in one batched ``cache_frames`` call on the shared embedder, which keeps them in
its content cache; resumes each lane, whose agent acts (its own one-frame call finds its frame in
the cache) and pauses at its env step; then steps every lane's world in one batch
(:func:`embodmem.envs.vector.step_together`: one ray cast renders every camera, one cast scans
every sonar) and sends each lane its result. Envs, agents, memories and maps stay per lane.

Why not bit-identical to the sequential runner: a batch of frames goes through the network in one
pass, whose matrix products may round the last bits differently from a one-frame pass (docs/experiments/speed.md,
"Lockstep runs"). The batched env step is bit-identical to each world's own step. Two runs with the same
lane count batch the same frames together, so they write the same records.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol, SupportsFloat

import numpy as np

from embodmem.agents.base import Observation
from embodmem.envs.ground_truth import GroundTruthEnv
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.envs.vector import SubEnvError, batch_key, step_together
from embodmem.profiling import Profiler

ACTIONS_DIR_VARIABLE = "EMBODMEM_LANE_ACTIONS"
"""Environment variable naming a directory: when set, :func:`run_lanes` writes every lane's actions
there (:class:`LaneActions`), so that ``benchmarks/floor.py`` can step the same worlds through the
same steps in the same batches without the agents."""

StepOutput = tuple[Observation, SupportsFloat, bool, bool, object]
"""What ``env.step`` returns (Gymnasium): observation, reward, terminated, truncated, info (None from
the lockstep driver's batched worlds: the runner reads the ground truth, not the info)."""


class EnvStep(NamedTuple):
    """A lane paused for its env's step: the driver steps ``env`` with ``action`` and sends back the
    :data:`StepOutput`. A named tuple: made at every step of every lane, it costs two thirds of a
    frozen dataclass."""

    env: GroundTruthEnv
    action: int


Pause = Observation | EnvStep
"""Where a lane waits: at the observation its agent is about to act on, or at its env's step."""


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
    """One run of the experiment, paused twice a step."""

    steps: Generator[Pause, StepOutput | None, object]
    """A :data:`embodmem.runner.Steps`: yields the observation its agent acts on, then its env step."""
    embeds: bool
    """Its agent embeds each observation's frame (then the round's batch holds it)."""


@dataclass
class LaneActions:
    """The actions of each lane of one :func:`run_lanes` call, in the order the lanes started: what a
    replay of the run's env steps needs (each lane's world and tasks come from the run's plan)."""

    lanes: int
    """``Lockstep.lanes`` of the run."""
    world_seeds: list[int] = field(default_factory=list)
    """Each lane's world (its env's ``world_seed``, 0 for another env), to check a replay's order."""
    embeds: list[bool] = field(default_factory=list)
    """Each lane's :attr:`Lane.embeds`."""
    actions: list[list[int]] = field(default_factory=list)
    """Each lane's actions, every episode's one after another."""

    def write(self, directory: Path) -> Path:
        """Into ``directory``, under a name no other job of a multirun takes; the path."""
        first = self.world_seeds[0] if self.world_seeds else 0
        path = directory / f"lanes-{first}-{os.getpid()}.json"
        path.write_text(
            json.dumps(
                {"lanes": self.lanes, "world_seeds": self.world_seeds, "embeds": self.embeds, "actions": self.actions}
            )
        )
        return path

    @classmethod
    def read(cls, path: Path) -> LaneActions:
        """What :meth:`write` wrote."""
        data = json.loads(path.read_text())
        return cls(int(data["lanes"]), list(data["world_seeds"]), list(data["embeds"]), list(data["actions"]))


def run_lanes(lanes: Iterable[Lane], lockstep: Lockstep, profiler: Profiler | None = None) -> None:
    """Run every lane to its end, ``lockstep.lanes`` at a time, one step per lane per round.

    Lanes start in the order given, each when a place is free, and a round resumes them in that
    order, so a run is the same every time. An error in a lane (its agent's or its world's) is
    raised inside that lane, as the sequential runner raises it there, and stops the whole run;
    episodes already written stay written.
    """
    if lockstep.lanes < 1:
        raise ValueError(f"lanes={lockstep.lanes} must be >= 1")
    profiler = profiler or Profiler()
    queue = iter(lanes)
    waiting: list[tuple[Lane, Pause]] = []  # each started lane and where it waits
    exhausted = False
    record_dir = os.environ.get(ACTIONS_DIR_VARIABLE)
    record = LaneActions(lockstep.lanes) if record_dir else None
    started: dict[int, int] = {}  # id(lane) -> its place in record
    while True:
        while not exhausted and len(waiting) < lockstep.lanes:
            lane = next(queue, None)
            if lane is None:
                exhausted = True
            else:
                _advance(lane, None, waiting)
                if record is not None:
                    started[id(lane)] = len(record.actions)
                    record.embeds.append(lane.embeds)
                    record.actions.append([])
                    record.world_seeds.append(-1)
        if not waiting:
            if record is not None and record_dir:
                record.write(Path(record_dir))
            return
        frames = [pause["image"] for lane, pause in waiting if lane.embeds and not isinstance(pause, EnvStep)]
        if lockstep.embedder is not None and frames:
            with profiler.section("lockstep embedding"):
                lockstep.embedder.cache_frames(np.stack(frames))
        acted: list[tuple[Lane, Pause]] = []
        for lane, pause in waiting:
            if isinstance(pause, EnvStep):
                acted.append((lane, pause))
            else:
                _advance(lane, None, acted)  # its agent acts; it pauses at its env step
        stepping = [(lane, pause) for lane, pause in acted if isinstance(pause, EnvStep)]
        waiting = [(lane, pause) for lane, pause in acted if not isinstance(pause, EnvStep)]
        if record is not None:
            for lane, pause in stepping:
                place = started[id(lane)]
                record.actions[place].append(pause.action)
                record.world_seeds[place] = int(getattr(pause.env, "world_seed", 0))
        with profiler.section("env"):
            outputs = step_envs([pause for _, pause in stepping], [lane for lane, _ in stepping])
        for (lane, _), output in zip(stepping, outputs):
            _advance(lane, output, waiting)


def step_envs(pending: Sequence[EnvStep], lanes: Sequence[Lane]) -> list[StepOutput]:
    """Each pending env step: underwater worlds that share a :func:`~embodmem.envs.vector.batch_key`
    in one batch, any other env alone. An error in a world is raised inside its lane. A batched
    world's info is None: a lane reads its env's ``ground_truth()``, never the info."""
    outputs: list[StepOutput | None] = [None] * len(pending)
    groups: dict[tuple[object, ...], list[tuple[int, UnderwaterEnv]]] = {}
    for i, step in enumerate(pending):
        if isinstance(step.env, UnderwaterEnv):
            groups.setdefault(batch_key(step.env), []).append((i, step.env))
        else:
            try:
                outputs[i] = step.env.step(step.action)
            except Exception as error:
                _raise_in(lanes[i], error)
    for members in groups.values():
        try:
            results = step_together([env for _, env in members], [pending[i].action for i, _ in members], infos=False)
        except SubEnvError as error:
            cause = error.__cause__ if isinstance(error.__cause__, Exception) else error
            _raise_in(lanes[members[error.index][0]], cause)
        for (i, _), result in zip(members, results):
            outputs[i] = result
    assert all(output is not None for output in outputs)
    return outputs  # type: ignore[return-value]


def _advance(lane: Lane, reply: StepOutput | None, waiting: list[tuple[Lane, Pause]]) -> None:
    """Resume ``lane`` with ``reply`` to its next pause and queue it there (a lane that ended is dropped)."""
    try:
        pause = lane.steps.send(reply)
    except StopIteration:
        return
    waiting.append((lane, pause))


def _raise_in(lane: Lane, error: Exception) -> None:
    """Raise ``error`` inside ``lane`` at its env step, where the sequential runner would have raised
    it (the lane records the aborted episode), and let what the lane raises stop the run."""
    lane.steps.throw(error)
    raise error  # the lane caught it and went on: the run still stops
