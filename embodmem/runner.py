"""The experiment loop: task sequences in one persistent world, warm and cold, with metrics and logs.

Read :func:`run_episode` first: it is the whole interaction between environment and agent.
:func:`run_sequence` chains episodes over a task sequence (memory kept = warm, memory reset before
each task = cold), :func:`evaluation_row` fills a row of the GEM matrix on fresh agents, and
:func:`run_experiment` runs every sequence, world, agent and condition of an :class:`ExperimentPlan`,
writing ``metrics.jsonl`` and per-episode logs through :class:`RunWriter` as episodes end. The app
(embodmem.app) only turns the config into a plan and factories.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import sys
import tempfile
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np
from pydantic import JsonValue, ValidationError

from embodmem.agents.base import Agent, MemoryCarrier, Observation
from embodmem.atomic import append_jsonl, atomic_write_bytes, atomic_write_jsonl, sync_file
from embodmem.condition import Condition
from embodmem.envs.config import EnvConfig
from embodmem.envs.goals import goal_cells_seen
from embodmem.envs.ground_truth import GroundTruth, GroundTruthEnv, ResetOptions
from embodmem.envs.spec import Action
from embodmem.episode_log import EpisodeLog, EpisodeTrace, write_log
from embodmem.lockstep import EnvStep, Lane, Lockstep, Pause, StepOutput, run_lanes
from embodmem.memory.episodic import AgentMemory
from embodmem.memory.protocol import Memory
from embodmem.metrics import EpisodeMeasures, Measures, spl
from embodmem.metrics_record import (
    METRICS_FILE,
    AgentStats,
    EpisodeIdentity,
    EpisodeKey,
    EpisodeRecord,
    PoisonPlace,
    SequenceContext,
    Staleness,
)
from embodmem.metrics_record import TIMING_FIELDS as TIMING_FIELDS  # re-exported: defined with the record
from embodmem.poison import false_memories
from embodmem.profiling import Profiler
from embodmem.retrieval import RetrievalEvent
from embodmem.staleness import StalenessTracker

log = logging.getLogger("embodmem")


def observation_digest(obs: Observation) -> str:
    """Short hash of everything an agent sees; a replay must reproduce it exactly."""
    h = hashlib.blake2b(digest_size=8)
    for key, value in sorted(obs.items(), key=lambda item: item[0]):
        h.update(key.encode())
        h.update(value.encode() if isinstance(value, str) else np.ascontiguousarray(value).tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class StepEvent:
    """One step as the runner saw it, for a video recorder (``on_step``): after ``env.step``."""

    obs: Observation
    truth: GroundTruth
    action: int
    agent: Agent
    stale_visits: int | None = None
    """Stale-target visits so far (:class:`~embodmem.staleness.StalenessTracker`); None in a static world."""


@dataclass
class EpisodeOutcome:
    """What one episode produced (:func:`run_episode`): its measures, its trace (the log's body)
    and what the sequence learns from it; the sequence makes the record (:class:`EpisodeResult`)."""

    measures: Measures
    trace: EpisodeTrace
    wall_time_s: float
    stats: AgentStats
    """The agent's own numbers (``Agent.episode_stats``)."""
    seen_kinds: set[str] = field(default_factory=set)
    seen_target_cells: set[tuple[str, int, int]] = field(default_factory=set)
    """(kind, x, y) of every target cell the camera clearly showed during the episode."""
    visited_cells: set[tuple[int, int]] = field(default_factory=set)
    """(x, y) of every cell the robot stood on (for false memories placed on its trail)."""
    reported_kinds: set[str] = field(default_factory=set)
    """Target kinds the agent's recogniser reported during the episode (``AgentTrace.kinds_reported``)."""
    staleness: Staleness | None = None
    """A changing world's staleness measures (embodmem.staleness); None in a static world."""
    memory_bytes_peak: int = 0
    """The most bytes of vector code the agent's memory held after any action of the episode."""


@dataclass
class EpisodeResult:
    """An episode of a sequence: its record (built once, :meth:`EpisodeRecord.finished`) and what
    it produced; the video recorder adds where its video went, the writer writes both."""

    record: EpisodeRecord
    outcome: EpisodeOutcome
    video: str | None = None
    """The episode's video, relative to the run directory (set by the recorder)."""
    video_error: str | None = None
    """Why its video was not written (set by the recorder)."""

    def final_record(self) -> EpisodeRecord:
        """The record with the recorder's file fields (what the episode log holds)."""
        return self.record.with_files(video=self.video, video_error=self.video_error)


R = TypeVar("R")

Steps = Generator[Pause, StepOutput | None, R]
"""A run paused twice a step: it yields the observation its agent is about to act on (the driver
sends back nothing), then an :class:`~embodmem.lockstep.EnvStep` (the driver steps that env with
that action and sends back what ``env.step`` returned); it returns its result (an episode's outcome,
a sequence's results). The sequential runner (:func:`finish`) steps each env at once; the lockstep
driver (embodmem.lockstep) embeds many lanes' frames in one call and steps their envs in one batch."""


def finish(steps: Steps[R], profiler: Profiler | None = None) -> R:
    """Drive ``steps`` to its end without pausing (the sequential runner); its result. An error of
    the env's step is raised inside the run, at its env step (the sequence records the aborted
    episode there)."""
    profiler = profiler or Profiler()
    reply: StepOutput | None = None
    error: Exception | None = None
    while True:
        try:
            pause = steps.send(reply) if error is None else steps.throw(error)
        except StopIteration as stop:
            return stop.value
        reply, error = None, None
        if isinstance(pause, EnvStep):
            try:
                with profiler.section("env"):
                    reply = pause.env.step(pause.action)
            except Exception as raised:
                error = raised


def run_episode(
    env: GroundTruthEnv,
    agent: Agent,
    reset_options: ResetOptions,
    episode_seed: int,
    profiler: Profiler | None = None,
    on_step: Callable[[StepEvent], None] | None = None,
) -> EpisodeOutcome:
    """Run one task to its end (:func:`episode_steps`, not paused)."""
    return finish(episode_steps(env, agent, reset_options, episode_seed, profiler, on_step), profiler)


def episode_steps(
    env: GroundTruthEnv,
    agent: Agent,
    reset_options: ResetOptions,
    episode_seed: int,
    profiler: Profiler | None = None,
    on_step: Callable[[StepEvent], None] | None = None,
    digest_observations: bool = True,
) -> Steps[EpisodeOutcome]:
    """The one episode loop: one task to its end, yielding each observation before the agent acts on
    it. The agent sees observations only; the env's ground truth feeds the measures and what the
    sequence learns (what was seen, where the robot went). ``digest_observations``: hash every
    observation into the trace, for the episode log and its replay (a run that writes no logs skips
    it: about 4% of a lockstep step)."""
    profiler = profiler or Profiler()
    # The agent's section holds all of its work (set-up and task end too), so that its sections
    # (planning, memory writes, ...) lie inside it; looked up once, entered every step.
    in_agent, in_env = profiler.section("agent"), profiler.section("env")
    obs, _ = env.reset(seed=episode_seed, options=reset_options)
    truth = env.ground_truth()
    with in_agent:
        agent.reset(obs, env.sensor_spec)
    measures = EpisodeMeasures()
    measures.reset(truth)
    stale = StalenessTracker(truth) if truth.changes is not None else None
    actions: list[int] = []
    digests = [observation_digest(obs)] if digest_observations else []
    retrievals: list[RetrievalEvent] = []
    seen = {k for k, _ in truth.visible_instances}
    seen_cells = set(truth.visible_target_cells)
    visited = {truth.agent_pos}
    reported_kinds: set[str] = set()
    peak_bytes = 0
    start = time.perf_counter()
    done = False
    while not done:
        yield obs
        with in_agent:
            action = int(agent.act(obs))
        if agent.memory is not None:  # a budget is a cap at every step, not only where a task ends
            peak_bytes = max(peak_bytes, _code_bytes(agent.memory))
        acted = agent.trace
        if acted.reported:  # judged the frame of the current truth: log where it was taken
            measures.report(truth)
        if acted.kinds_reported:
            reported_kinds |= acted.kinds_reported
        stepped = yield EnvStep(env, action)
        assert stepped is not None, "the driver sends back the env's step"
        obs, _, terminated, truncated, _ = stepped
        with in_env:
            truth = env.ground_truth()
        measures.update(action, truth)
        if stale is not None:
            stale.update(truth)
        visited.add(truth.agent_pos)
        actions.append(action)
        if digest_observations:
            digests.append(observation_digest(obs))
        if truth.visible_instances:
            seen.update(k for k, _ in truth.visible_instances)
            seen_cells |= truth.visible_target_cells
        if on_step is not None:
            on_step(StepEvent(obs, truth, action, agent, stale.visits if stale is not None else None))
        acted = agent.trace
        if acted.retrievals and acted.query:
            retrievals.append(RetrievalEvent(len(actions), acted.query, acted.retrievals[:5]))
            acted.retrievals = []
        done = terminated or truncated
    with in_agent:
        agent.end_task(truth.success)
    wall_time_s = round(time.perf_counter() - start, 4)
    sx, sy, sd = truth.start_pose
    trace = EpisodeTrace(
        world_seed=truth.world_seed,
        world_digest=truth.world.digest(),
        task=truth.task.name,
        episode_seed=episode_seed,
        start_pose=(int(sx), int(sy), int(sd)),
        start=reset_options.get("start"),
        actions=actions,
        obs_digests=digests,
        retrievals=retrievals,
        reports=measures.reports.steps,
        success=truth.success,
        world_changes=[e.as_log() for e in truth.world_changes] if truth.changes is not None else None,
        world_change_set=dataclasses.asdict(truth.change_set) if truth.change_set is not None else None,
        visit_position=truth.visit_position if truth.changes is not None else None,
    )
    return EpisodeOutcome(
        measures.get(),
        trace,
        wall_time_s,
        agent.episode_stats(),
        seen,
        seen_cells,
        visited,
        reported_kinds,
        _with_memory_correction(stale.get(), agent) if stale is not None else None,
    )


def _code_bytes(memory: Memory) -> int:
    """The memory's vector-code bytes: the stock memory's cheap ``code_bytes()`` (its full ``stats()``
    walks every record's metadata), else the protocol's ``stats()["code_bytes"]``."""
    if isinstance(memory, AgentMemory):
        return memory.code_bytes()
    return int(memory.stats()["code_bytes"])


def _with_memory_correction(staleness: Staleness, agent: Agent) -> Staleness:
    """A memory agent's steps to correct are its own: from the first observation contradicting a
    place its memory sent it to, to its memory's update (``MemoryCarrier.steps_to_correct``)."""
    if not isinstance(agent, MemoryCarrier) or type(agent).steps_to_correct is MemoryCarrier.steps_to_correct:
        return staleness  # no measure of its own: the behavioural one (first to last step in a stale place)
    return dataclasses.replace(staleness, steps_to_correct=agent.steps_to_correct())


@dataclass
class SequenceSpec:
    """One task sequence run: which tasks, which world, which condition."""

    sequence: str
    tasks: tuple[str, ...]
    world_seed: int
    seed: int
    condition: Condition
    """How memory lives between the tasks (:class:`~embodmem.condition.Condition`)."""
    start: str = "random"
    """Start of each task (``GroundTruthEnv.reset``): random (drawn from the episode seed, the same for
    every agent and condition of one world and seed), fixed0, fixed1, or continue."""
    start_poses: list[tuple[int, int, int]] | None = None
    """Explicit start per task (replays); overrides ``start``."""
    split: str = "custom"
    """World split the world seed belongs to (embodmem.splits), written into every record."""
    poison_k: int = 0
    """False memories implanted before each task after the first (warm only; embodmem.poison)."""
    poison_place: PoisonPlace = "far"
    """Where they claim to have been seen: far (random free cells) or trail (cells the robot passed)."""

    def identity(self, run_id: str, agent: Agent, task_index: int) -> EpisodeIdentity:
        """Who runs task ``task_index`` (from 0) of this sequence where: the fields every record of
        the sequence shares (one definition for task and evaluation rows)."""
        return EpisodeIdentity(
            run_id=run_id,
            agent=agent.name,
            condition=self.condition,
            world_seed=self.world_seed,
            seed=self.seed,
            split=self.split,
            sequence=self.sequence,
            task_index=task_index + 1,
            task=self.tasks[task_index],
            poison_k=self.poison_k,
            poison_place=self.poison_place,
        )


class EpisodeAborted(RuntimeError):
    """An episode stopped by an error (e.g. a VLM server that no longer answers).

    ``record`` is the episode's metrics record marked ``aborted`` with the reason and the agent's
    counts so far, so the caller can keep it beside the records of the episodes that completed;
    ``completed`` holds records finished but not yet written when it stopped (an evaluation row's
    earlier episodes). A resume runs an aborted episode again and replaces its record.
    """

    def __init__(self, record: EpisodeRecord, completed: list[EpisodeRecord] | None = None) -> None:
        what = f"evaluation after task {record.eval_after}: " if record.eval_after is not None else ""
        super().__init__(
            f"{what}task {record.task_index} ({record.task}) aborted after "
            f"{record.steps_before_abort} steps: {record.abort_reason}"
        )
        self.record = record
        self.completed = list(completed or [])


def episode_seed(world_seed: int, seed: int, task_index: int) -> int:
    """The episode's RNG seed: start pose, fish, particles and sensor noise.

    Same world, seed and task position give the same seed in every agent and condition; a different
    ``seed`` (or world) gives an independent stream.

    >>> episode_seed(3, 0, 1) == episode_seed(3, 0, 1) != episode_seed(3, 1, 1)
    True
    """
    return int(np.random.SeedSequence((seed, world_seed, task_index)).generate_state(1, np.uint32)[0])


def reset_options(spec: SequenceSpec, task_index: int) -> ResetOptions:
    """``env.reset`` options of task ``task_index`` of ``spec``."""
    options = ResetOptions(task=spec.tasks[task_index], world_seed=spec.world_seed)
    options["new_visit"] = task_index == 0  # the pose error (env.odometry_carry) restarts with each run
    if spec.start_poses is not None:
        options["start_pose"] = spec.start_poses[task_index]
    else:
        options["start"] = spec.start if (spec.start != "continue" or task_index > 0) else "fixed0"
    return options


def run_sequence(
    env: GroundTruthEnv,
    agent: Agent,
    spec: SequenceSpec,
    run_id: str,
    profiler: Profiler | None = None,
    sleep_between_tasks: bool = False,
    on_episode: Callable[[EpisodeResult], None] | None = None,
    on_step: Callable[[StepEvent], None] | None = None,
) -> list[EpisodeResult]:
    """Run the tasks of ``spec`` one after another in one world (:func:`sequence_steps`, not paused)."""
    return finish(
        sequence_steps(env, agent, spec, run_id, profiler, sleep_between_tasks, on_episode, on_step), profiler
    )


def sequence_steps(
    env: GroundTruthEnv,
    agent: Agent,
    spec: SequenceSpec,
    run_id: str,
    profiler: Profiler | None = None,
    sleep_between_tasks: bool = False,
    on_episode: Callable[[EpisodeResult], None] | None = None,
    on_step: Callable[[StepEvent], None] | None = None,
    digest_observations: bool = True,
) -> Steps[list[EpisodeResult]]:
    """The tasks of ``spec`` one after another in one world, yielding before each action
    (``digest_observations`` as for :func:`episode_steps`)."""
    results: list[EpisodeResult] = []
    seen_before: set[str] = set()
    reported_before: set[str] = set()
    seen_cells_before: set[tuple[str, int, int]] = set()
    trail: set[tuple[int, int]] = set()
    carrier = agent if isinstance(agent, MemoryCarrier) else None
    for i, task in enumerate(spec.tasks):
        if carrier is not None:
            if spec.condition.resets_memory:
                carrier.reset_memory()
            carrier.set_context(run_id, task, i)
            if spec.poison_k and spec.condition.carries_memory and i > 0:
                images, poses = false_memories(
                    env,
                    task,
                    spec.poison_k,
                    episode_seed(spec.world_seed, spec.seed, 1000 + i),
                    trail if spec.poison_place == "trail" else None,
                )
                carrier.implant(images, poses)
        identity = spec.identity(run_id, agent, i)
        try:
            outcome = yield from episode_steps(
                env,
                agent,
                reset_options(spec, i),
                episode_seed(spec.world_seed, spec.seed, i),
                profiler,
                on_step,
                digest_observations,
            )
            mem_stats = agent.memory.stats() if agent.memory is not None else None
        except Exception as err:
            stopped = EpisodeRecord.stopped(err, env.step_count, _stats_of(agent), identity, None)
            raise EpisodeAborted(stopped) from err
        truth = env.ground_truth()
        context = SequenceContext(
            start_pose=outcome.trace.start_pose,
            target_seen_before=(
                truth.task.target in seen_before
                if not truth.task.instance_goal
                else bool(goal_cells_seen(truth.world, truth.task, seen_cells_before))
            ),
            target_reported_before=truth.task.target in reported_before,
            seen_place_spl_bound=seen_place_spl_bound(truth, outcome, seen_cells_before),
            memory_frames=int(mem_stats["frames_kept"]) if mem_stats is not None else 0,
            memory_bytes=int(mem_stats["code_bytes"]) if mem_stats is not None else 0,
            memory_bytes_peak=max(
                outcome.memory_bytes_peak, int(mem_stats["code_bytes"]) if mem_stats is not None else 0
            ),
        )
        staleness = outcome.staleness
        if staleness is not None and isinstance(agent.memory, AgentMemory):  # its update policy's compute so far
            updates = agent.memory.updates
            staleness = dataclasses.replace(
                staleness,
                memory_update_removed=updates.removed,
                memory_update_compared=updates.compared,
                memory_update_bytes_freed=updates.bytes_freed,
                memory_update_s=round(updates.seconds, 4),
            )
        result = EpisodeResult(
            EpisodeRecord.finished(outcome.measures, outcome.wall_time_s, outcome.stats, identity, context, staleness),
            outcome,
        )
        seen_before |= outcome.seen_kinds
        reported_before |= outcome.reported_kinds
        seen_cells_before |= outcome.seen_target_cells
        trail |= outcome.visited_cells
        results.append(result)
        if on_episode is not None:
            on_episode(result)
        if (
            sleep_between_tasks
            and agent.memory is not None
            and spec.condition.carries_memory
            and i + 1 < len(spec.tasks)
        ):
            agent.memory.sleep()
    return results


def _stats_of(agent: Agent) -> Mapping[str, float | str]:
    """The agent's own counts for the record of an episode an error stopped (none if they fail too:
    the error being recorded may be the agent's)."""
    try:
        return agent.episode_stats()
    except Exception:
        return {}


def seen_place_spl_bound(
    truth: GroundTruth, outcome: EpisodeOutcome, seen_before: set[tuple[str, int, int]]
) -> float | None:
    """SPL of an oracle told only the target cells seen in earlier tasks (None if none were seen):
    what an agent that remembers exactly where it saw the target can reach at best."""
    cells = goal_cells_seen(truth.world, truth.task, seen_before)  # an instance goal: that instance's cells only
    if not cells:
        return None
    x, y, _ = outcome.trace.start_pose
    return spl(True, outcome.measures.shortest_path, truth.path_via_cells_m((x, y), cells))


def evaluation_row(
    agent: MemoryCarrier,
    make_agent: Callable[[], Agent],
    env: GroundTruthEnv,
    spec: SequenceSpec,
    run_id: str,
    after: int,
) -> list[EpisodeRecord]:
    """Row ``after`` of the GEM matrix: every task of the sequence, each on a fresh agent.

    ``agent``'s carried state is saved once; each evaluation episode loads it into a new agent from
    ``make_agent`` and runs on ``env``, which must be a separate instance from the one the carried agent
    uses. Nothing of the evaluation reaches the agent being carried, so a run's warm and cold records
    are the same with and without evaluation rows.
    """
    records: list[EpisodeRecord] = []
    with tempfile.TemporaryDirectory(prefix="embodmem-eval-") as tmp:
        state = Path(tmp)
        agent.save_state(state)
        eval_spec = SequenceSpec(
            spec.sequence,
            spec.tasks,
            spec.world_seed,
            spec.seed,
            Condition.eval,
            spec.start,
            spec.start_poses,
            spec.split,
        )
        for j, task in enumerate(spec.tasks):
            evaluator = make_agent()
            assert isinstance(evaluator, MemoryCarrier), "make_agent must build the same kind of agent"
            evaluator.load_state(state)
            evaluator.set_context(run_id, task, j)
            options = reset_options(eval_spec, j)
            if options.get("start") == "continue":
                options["start"] = "fixed0"  # no previous episode to continue from
            identity = eval_spec.identity(run_id, evaluator, j)
            try:
                outcome = run_episode(env, evaluator, options, episode_seed(spec.world_seed, spec.seed, j))
            except Exception as err:
                stopped = EpisodeRecord.stopped(err, env.step_count, evaluator.episode_stats(), identity, after)
                raise EpisodeAborted(stopped, records) from err
            context = SequenceContext(start_pose=outcome.trace.start_pose, eval_after=after)
            records.append(
                EpisodeRecord.finished(
                    outcome.measures, outcome.wall_time_s, outcome.stats, identity, context, outcome.staleness
                )
            )
    return records


def read_metrics(path: Path, repair: bool = False) -> list[dict[str, JsonValue]]:
    """The JSON objects of a ``metrics.jsonl``. A torn last line (a crash mid-write) is dropped with a
    message and, if ``repair``, removed from the file; any other bad line is a ``ValueError`` naming it."""
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")
    records = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise ValueError("not a JSON object")
        except ValueError as err:
            if any(rest.strip() for rest in lines[i + 1 :]):
                raise ValueError(f"{path}: line {i + 1} is not a metrics record ({err}); fix or remove it") from None
            print(
                f"{path}: dropped a truncated last line ({len(line)} bytes); that episode runs again", file=sys.stderr
            )
            if repair:
                atomic_write_bytes(path, b"".join(ln + b"\n" for ln in lines[:i] if ln.strip()))
            break
        records.append(rec)
    return records


def read_records(path: Path, repair: bool = False) -> list[EpisodeRecord]:
    """:func:`read_metrics`, each line read through the one record type (what resume reads).

    Raises:
        ValueError: one line naming the file, the line and the field the schema refuses.
    """
    records = []
    for i, line in enumerate(read_metrics(path, repair)):
        try:
            records.append(EpisodeRecord.model_validate(line))
        except ValidationError as err:
            first = err.errors(include_url=False)[0]
            loc = ".".join(str(p) for p in first["loc"]) or "record"
            raise ValueError(
                f"{path}: record {i + 1} field {loc}: {first['msg']}; fix or remove that line to resume"
            ) from None
    return records


class RunWriter:
    """Writes a run's outputs as they come: metrics.jsonl (a line appended per episode, fsynced at most
    every :attr:`sync_every_s` seconds and at the run's end) and episode logs.

    An fsync per episode cost more than the episode's record (about 1.6 ms on this project's disks,
    thousands of episodes a sweep). A process that dies loses no appended line; a machine that
    dies loses at most the last seconds' lines, whose episodes ``experiment.resume=true`` runs again
    with the same records.

    The one place records and logs become JSON: each record was checked when it was built
    (:meth:`EpisodeRecord.finished`), each log when it was made (:meth:`EpisodeLog.of`).
    With ``resume``, the records already in metrics.jsonl (read through the record type) are kept
    and episodes with their :attr:`EpisodeRecord.key` are not written again, except aborted ones:
    those are run again, and the new record replaces the aborted one in the file.
    """

    def __init__(self, out_dir: Path, episode_logs: bool = True, env: EnvConfig | None = None, resume: bool = False):
        self.out_dir = Path(out_dir)
        self.env = env or EnvConfig()
        """The environment's settings, written into every episode log."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.metrics_path = self.out_dir / METRICS_FILE
        self.episode_logs = episode_logs
        self.resume = resume
        saved = read_records(self.metrics_path, repair=True) if resume else []
        self.aborted = {r.key: r for r in saved if r.aborted}
        """Aborted records in the file, by episode key: replaced when their episode is written again."""
        self.records: list[EpisodeRecord] = [r for r in saved if not r.aborted]
        self.done = {r.key for r in self.records}
        self.sync_every_s = 1.0
        self._synced_at = time.monotonic()
        self.on_record: list[Callable[[int, EpisodeRecord], None]] = []
        """Called with (episode index in the run, record) after each finished episode is appended
        (the experiment trackers, :mod:`embodmem.tracking`)."""

    def write(self, result: EpisodeResult) -> None:
        record = result.final_record()
        if record.key in self.done:
            return
        if self.episode_logs:
            path = self.out_dir / "episodes" / f"{record.name}.json"
            write_log(path, EpisodeLog.of(result.outcome.trace, record, self.env))
            record = record.with_files(episode_log=str(path.relative_to(self.out_dir)))
        self._append([record])

    def write_records(self, records: list[EpisodeRecord]) -> None:
        self._append([r for r in records if r.key not in self.done])

    def _append(self, records: list[EpisodeRecord]) -> None:
        """Append ``records``; when one replaces an aborted record, rewrite the file without that one."""
        replaced = {r.key for r in records} & set(self.aborted)
        lines = [r.plain() for r in records]
        if replaced:
            kept = [
                r
                for r in read_metrics(self.metrics_path)
                if not (r.get("aborted") and EpisodeRecord.model_validate(r).key in replaced)
            ]
            atomic_write_jsonl(self.metrics_path, [*kept, *lines])
            for key in replaced:
                del self.aborted[key]
        elif records:
            now = time.monotonic()
            sync = now - self._synced_at >= self.sync_every_s
            append_jsonl(self.metrics_path, lines, sync=sync)
            if sync:
                self._synced_at = now
        for record in records:
            if record.aborted:
                self.aborted[record.key] = record
            else:
                self.records.append(record)
                self.done.add(record.key)
                for listener in self.on_record:
                    listener(len(self.records) - 1, record)

    def sync(self) -> None:
        """Make every appended line durable (the run's end, or its failure)."""
        sync_file(self.metrics_path)
        self._synced_at = time.monotonic()


@dataclass
class ExperimentPlan:
    """Everything :func:`run_experiment` runs, already checked (the app builds it from the config)."""

    run_id: str
    sequences: list[tuple[str, tuple[str, ...]]]
    """(name, tasks) of each task sequence."""
    world_seeds: list[int]
    seed: int
    split: str
    start: str
    runs: list[tuple[str, Condition]]
    """(agent name, condition) pairs, each run over every sequence and world."""
    sleep_between_tasks: bool = False
    gem_eval: bool = False
    save_memory_dir: Path | None = None
    load_memory: Path | None = None
    poison_k: int = 0
    poison_place: PoisonPlace = "far"
    lanes: int = 0
    """Runs advanced together (``experiment.lanes``; 0: one after another)."""
    plugins: frozenset[str] = frozenset()
    """Agent names of the runs that are plug-ins (embodmem.plugins): an error inside one stops only
    that run in that world, recorded as its failure; the other runs go on."""

    def sequence_spec(
        self, sequence: str, tasks: tuple[str, ...], world_seed: int, condition: Condition
    ) -> SequenceSpec:
        """How one (sequence, world, condition) of the plan runs (the runner and replay both use it)."""
        return SequenceSpec(
            sequence,
            tasks,
            world_seed,
            self.seed,
            condition,
            self.start,
            split=self.split,
            poison_k=self.poison_k,
            poison_place=self.poison_place,
        )


def sequential_order(plan: ExperimentPlan, records: list[EpisodeRecord]) -> list[EpisodeRecord]:
    """``records`` in the order the sequential runner writes them (sequence, world, run, task, GEM rows
    after their task). Lanes write as their episodes end; the report's bootstrap intervals follow the
    order of the records, so a lockstep run reports in this order to print the sequential run's CIs."""
    sequences = {name: i for i, (name, _) in enumerate(plan.sequences)}
    worlds = {w: i for i, w in enumerate(plan.world_seeds)}
    runs: dict[tuple[str | None, Condition | None], int] = {}
    for i, (name, condition) in enumerate(plan.runs):
        runs.setdefault((name, condition), i)
        if condition.carries_memory:  # its GEM rows are written by its lane
            runs.setdefault((name, Condition.eval), i)
    end = len(plan.runs) + len(plan.world_seeds) + len(plan.sequences)

    def key(r: EpisodeRecord) -> tuple[int, ...]:
        lane = (
            sequences.get(r.sequence or "", end),
            worlds.get(r.world_seed if r.world_seed is not None else -1, end),
            runs.get((r.agent, r.condition), end),
        )
        task = r.task_index or 0
        return (*lane, task, 0, 0) if r.eval_after is None else (*lane, r.eval_after, 1, task)

    return sorted(records, key=key)


def world_done(writer: RunWriter, plan: ExperimentPlan, sequence: str, tasks: tuple[str, ...], world_seed: int) -> bool:
    """Whether metrics.jsonl already holds every episode of this world (then resume skips it).

    A partly done world is run again from its first task (warm memory must be rebuilt exactly), and
    only its missing episodes are written.
    """
    if not writer.done:
        return False
    keys = [
        EpisodeKey(sequence, world_seed, plan.seed, plan.split, a, c, i + 1, None)
        for a, c in plan.runs
        for i in range(len(tasks))
    ]
    if plan.gem_eval:
        keys += [
            EpisodeKey(sequence, world_seed, plan.seed, plan.split, a, Condition.eval, j + 1, after)
            for a, c in plan.runs if c.carries_memory for after in range(len(tasks) + 1) for j in range(len(tasks))
        ]  # fmt: skip
    return all(k in writer.done for k in keys)


EnvT = TypeVar("EnvT", bound=GroundTruthEnv)
"""The run's environment type: what ``make_env`` builds is what ``make_agent`` receives."""


class EpisodeRecorder(Protocol):
    """What the runner needs of a video recorder (embodmem.video)."""

    def bind(self, env: GroundTruthEnv, agent: Agent, /) -> None: ...
    def step(self, event: StepEvent, /) -> None: ...
    def finish(self, result: EpisodeResult, /) -> object: ...


def run_experiment(
    plan: ExperimentPlan,
    make_env: Callable[[tuple[str, ...], int], EnvT],
    make_agent: Callable[[str, EnvT], Agent],
    writer: RunWriter,
    profiler: Profiler | None = None,
    recorder: EpisodeRecorder | None = None,
    on_progress: Callable[[], object] | None = None,
    lockstep: Lockstep | None = None,
) -> list[EpisodeRecord]:
    """Every (sequence, world, agent, condition) of ``plan``; records are written as episodes end.

    Each agent starts fresh per world; memory carriers may start from ``plan.load_memory`` (warm) and
    save their state to ``plan.save_memory_dir``. GEM rows run on a second environment instance with
    fresh agents (see :func:`evaluation_row`). Each (sequence, world, agent, condition) is a lane:
    without ``lockstep`` the lanes run one after another, a world's lanes on one env; with it they
    advance together (:func:`embodmem.lockstep.run_lanes`), each on its own env.
    """
    if lockstep is not None and recorder is not None:
        raise ValueError("videos are recorded by the sequential runner only (lockstep=None)")
    profiler = profiler or Profiler()

    def lane(
        sequence: str,
        tasks: tuple[str, ...],
        world_seed: int,
        name: str,
        condition: Condition,
        env: EnvT,
        eval_env: EnvT | None,
    ) -> Steps[None]:
        agent = make_agent(name, env)
        agent.profiler = profiler
        spec = plan.sequence_spec(sequence, tasks, world_seed, condition)
        carrier = agent if isinstance(agent, MemoryCarrier) else None
        if carrier is not None and condition.carries_memory and plan.load_memory is not None:
            carrier.load_state(plan.load_memory)
        evaluate = carrier is not None and eval_env is not None and condition.carries_memory

        def write_eval_row(after: int) -> None:
            assert carrier is not None and eval_env is not None
            writer.write_records(
                evaluation_row(carrier, lambda: make_agent(name, eval_env), eval_env, spec, plan.run_id, after)
            )

        def on_episode(result: EpisodeResult) -> None:
            if recorder is not None:
                recorder.finish(result)
            writer.write(result)
            if on_progress is not None:
                on_progress()
            if evaluate:
                assert result.record.task_index is not None
                write_eval_row(result.record.task_index)

        if recorder is not None:
            recorder.bind(env, agent)
        try:
            if evaluate:
                write_eval_row(0)
            yield from sequence_steps(
                env,
                agent,
                spec,
                plan.run_id,
                profiler,
                plan.sleep_between_tasks and condition.carries_memory,
                on_episode,
                recorder.step if recorder is not None else None,
                digest_observations=writer.episode_logs,
            )
        except EpisodeAborted as aborted:  # keep the failing episode's record beside the completed ones
            writer.write_records([*aborted.completed, aborted.record])
            if name not in plan.plugins:
                raise
            record = aborted.record
            log.warning(
                "plug-in %r failed in world %s, task %s (%s), step %s: %s; its other episodes there are skipped",
                name, world_seed, record.task_index, record.task, record.steps_before_abort, record.abort_reason,
            )  # fmt: skip
            return
        if carrier is not None and condition.carries_memory and plan.save_memory_dir is not None:
            carrier.save_state(
                plan.save_memory_dir / f"world{world_seed}"
                if len(plan.sequences) == 1
                else plan.save_memory_dir / f"{sequence}-world{world_seed}"
            )

    def lanes() -> Iterator[Lane]:
        for sequence, tasks in plan.sequences:
            for world_seed in plan.world_seeds:
                if world_done(writer, plan, sequence, tasks, world_seed):
                    continue  # resume: every episode of this world is already in metrics.jsonl
                envs: tuple[EnvT, EnvT | None] | None = None
                for name, condition in plan.runs:
                    if envs is None or lockstep is not None:  # lanes that run together need their own envs
                        envs = (make_env(tasks, world_seed), make_env(tasks, world_seed) if plan.gem_eval else None)
                    steps = lane(sequence, tasks, world_seed, name, condition, *envs)
                    yield Lane(steps, embeds=lockstep is not None and name in lockstep.embeds)

    try:
        if lockstep is None:
            for each in lanes():
                finish(each.steps, profiler)
        else:
            run_lanes(lanes(), lockstep, profiler)
    finally:
        writer.sync()
    return writer.records


STOP = int(Action.STOP)
