"""The metrics record: one line of ``metrics.jsonl`` per episode, its fields defined once.

A record is built once, by :meth:`EpisodeRecord.finished` (an episode's typed measures, who ran it
where, what its sequence knew before it) or :meth:`EpisodeRecord.stopped` (an episode an error
stopped), and validated there; it becomes a dict only in the writer (:meth:`EpisodeRecord.plain`,
:class:`embodmem.runner.RunWriter`). The episode log carries it (:mod:`embodmem.episode_log`); the
report and resume read every line back through it (:mod:`embodmem.report.load`,
:func:`embodmem.runner.read_records`). Agents' own statistics (``Agent.episode_stats``, e.g.
``vlm_calls``) are extra keys, kept as they are.

Example:
    >>> EpisodeRecord.model_validate({"agent": "memory", "condition": "warm", "task_index": 1, "spl": 0.5}).spl
    0.5
    >>> from pydantic import ValidationError
    >>> try:
    ...     EpisodeRecord.model_validate({"condition": "lukewarm"})
    ... except ValidationError as e:
    ...     print(e.errors()[0]["loc"], e.errors()[0]["msg"])
    ('condition',) Input should be 'warm', 'cold', 'eval' or 'single'
    >>> episode_name({"sequence": "wreck_then_barrel", "world_seed": 3, "seed": 0, "task_index": 1,
    ...               "agent": "memory", "condition": "warm"})
    'seq=wreck_then_barrel-world=3-seed=0-task=1-agent=memory-cond=warm'
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from embodmem.condition import Condition
from embodmem.metrics import Measures

PoisonPlace = Literal["far", "trail"]
AgentStats = Mapping[str, "int | float | str"]
"""An agent's own per-episode numbers (``Agent.episode_stats``): extra keys of the record."""
CONDITIONS: tuple[str, ...] = tuple(c.value for c in Condition)
"""The values of :class:`~embodmem.condition.Condition` (what each does: its docstring)."""


@dataclasses.dataclass(frozen=True)
class EpisodeIdentity:
    """Who ran an episode where: the fields every record of one sequence shares (task and
    evaluation rows alike; :meth:`embodmem.runner.SequenceSpec.identity` makes it)."""

    run_id: str
    agent: str
    condition: Condition
    world_seed: int
    seed: int
    split: str
    sequence: str
    task_index: int
    """Position of the task in its sequence, from 1."""
    task: str
    poison_k: int
    poison_place: PoisonPlace


@dataclasses.dataclass(frozen=True)
class SequenceContext:
    """What the sequence knew before an episode, and what memory held after it (see the fields of
    :class:`EpisodeRecord` of the same names)."""

    start_pose: tuple[int, int, int]
    target_seen_before: bool | None = None
    target_reported_before: bool | None = None
    seen_place_spl_bound: float | None = None
    eval_after: int | None = None
    memory_frames: int = 0
    memory_bytes: int = 0
    memory_bytes_peak: int = 0


@dataclasses.dataclass(frozen=True)
class Staleness:
    """A changing-world episode's staleness measures (:class:`embodmem.staleness.StalenessTracker`;
    see the fields of :class:`EpisodeRecord` of the same names)."""

    world_changes: str
    changes_so_far: int
    goal_changed: bool
    stale_target_visits: int
    steps_to_correct: int | None
    memory_update_removed: int | None = None
    memory_update_compared: int | None = None
    memory_update_bytes_freed: int | None = None
    memory_update_s: float | None = None


class EpisodeKey(NamedTuple):
    """The fields that identify an episode within a run directory (what ``resume`` matches on)."""

    sequence: str | None
    world_seed: int | None
    seed: int | None
    split: str | None
    agent: str | None
    condition: Condition | None
    task_index: int | None
    eval_after: int | None


class EpisodeRecord(BaseModel):
    """One episode's record, in the order the runner writes the fields. Every field is optional
    here (a record of an aborted episode has no measures); each reader states what it needs."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    # -- the measures (embodmem.metrics.EpisodeMeasures; docs/metrics.md) ---------------------------
    success: int | None = Field(default=None, ge=0, le=1)
    """1 if the robot stopped within ``env.success_distance_m`` of a target instance."""
    spl: float | None = Field(default=None, ge=0, le=1)
    """Success weighted by (shortest path / path taken), as in Habitat."""
    soft_spl: float | None = Field(default=None, ge=0, le=1)
    """SPL with progress towards the target in place of success."""
    distance_score: float | None = None
    """The reference benchmark's score: the better of the final and the best reported position."""
    distance_score_final: float | None = None
    """The same score from the final position only."""
    reports: int | None = Field(default=None, ge=0)
    """Steps at which the agent reported the target."""
    steps: int | None = Field(default=None, ge=0)
    """Actions taken."""
    path_length: float | None = Field(default=None, ge=0)
    """Metres travelled."""
    shortest_path: float | None = Field(default=None, ge=0)
    """Geodesic metres from the start to the nearest success cell."""
    collisions: int | None = Field(default=None, ge=0)
    final_distance_m: float | None = Field(default=None, ge=0)
    """Metres from the final position to the nearest target instance."""
    target_seen: bool | None = None
    """Whether the target was in view at any step."""
    wrong_instance: int | None = Field(default=None, ge=0, le=1)
    """1 if the robot stopped within range of another instance of the goal's kind than the one a
    description or image goal named (always 0 for category goals)."""
    wall_time_s: float | None = Field(default=None, ge=0)
    """Seconds the episode took (a timing: differs between runs, see :data:`TIMING_FIELDS`)."""
    # -- the memory agent's statistics (MemoryAgent.episode_stats) --------------------------------
    memory_queries: int | None = Field(default=None, ge=0)
    memory_nodes: int | None = Field(default=None, ge=0)
    memory_query_ms: float | None = Field(default=None, ge=0)
    """Median milliseconds of one memory query (a timing)."""
    relocalisations: int | None = Field(default=None, ge=0)
    """Times the explorer moved its pose estimate to fit the sonar to its carried map (drift)."""
    # -- who ran it where (EpisodeIdentity: embodmem.runner.SequenceSpec.identity) --------------
    run_id: str | None = Field(default=None, min_length=1)
    agent: str | None = None
    """The agent or memory-agent variant (memory, memory_no_recall, ..., textlog, explorer, vlm, ...)."""
    condition: Annotated[Condition, Field(strict=False)] | None = None
    """:class:`~embodmem.condition.Condition` (read from its string in a file)."""
    world_seed: int | None = Field(default=None, ge=0)
    seed: int | None = Field(default=None, ge=0)
    """The run's seed (start poses, fish, particles, noise)."""
    split: str | None = None
    """World split of ``world_seed`` (embodmem.splits)."""
    sequence: str | None = None
    task_index: int | None = Field(default=None, ge=1)
    """Position of the task in its sequence, from 1."""
    task: str | None = None
    poison_k: int | None = Field(default=None, ge=0)
    """False memories implanted before the task (embodmem.poison)."""
    poison_place: Literal["far", "trail"] | None = None
    """Where they claimed to have been seen: random far cells, or cells of the robot's own trail."""
    # -- what the sequence knew before the task (SequenceContext, embodmem.runner.run_sequence) ---
    start_pose: list[int] | None = Field(default=None, min_length=3, max_length=3)
    """[x, y, heading] in cells."""
    target_seen_before: bool | None = None
    """Whether the task's target was in view during an earlier task of the sequence (None: eval rows):
    pixel-based, from the camera frames of this run's own path (the env's visible pixels), whether or
    not the agent recognised it; for a description or image goal, the goal instance itself (a sibling
    of its kind does not count)."""
    target_reported_before: bool | None = None
    """Whether the agent's recogniser reported the task's target kind in an earlier task of the
    sequence (detection-based; always False for an agent that does not label its frames)."""
    seen_place_spl_bound: float | None = None
    """SPL of an oracle told only the target cells seen in earlier tasks (None: none seen)."""
    eval_after: int | None = Field(default=None, ge=0)
    """For eval records: the number of tasks the evaluated state had experienced (GEM row)."""
    memory_frames: int | None = Field(default=None, ge=0)
    """Frames kept in memory at the end of the episode."""
    memory_bytes: int | None = Field(default=None, ge=0)
    """Bytes of long-term vector code at the end of the episode."""
    memory_bytes_peak: int | None = Field(default=None, ge=0)
    """The most bytes of long-term vector code held after any action of the episode (budgets cap this)."""
    # -- a changing world only (embodmem.staleness; absent from a static world's records) ---------
    world_changes: str | None = None
    """The world's change set (``world.changes.name``; ``<name>_fresh``: the fresh-memory control)."""
    changes_so_far: int | None = Field(default=None, ge=0)
    """Changes of the world applied in this visit by the end of the episode."""
    goal_changed: bool | None = None
    """An instance of the goal's kind was moved, removed, re-dressed or drifted after the sequence began."""
    stale_target_visits: int | None = Field(default=None, ge=0)
    """Times the robot entered a place where a goal instance stood before a change and none stands now."""
    steps_to_correct: int | None = Field(default=None, ge=1)
    """A memory agent's: steps from the first observation that contradicted a place its memory sent
    it to, to its memory's update (None: none, or never updated); other agents': from the first
    step in a stale place to the last (None: never in one)."""
    memory_update_removed: int | None = Field(default=None, ge=0)
    """Records the memory's update policy has removed as contradicted so far (embodmem.memory.updates;
    None: an agent without the stock memory)."""
    memory_update_compared: int | None = Field(default=None, ge=0)
    """Pairs of records its checks have compared so far (no embedding is recomputed)."""
    memory_update_bytes_freed: int | None = Field(default=None, ge=0)
    """Vector-code bytes the removed records held."""
    memory_update_s: float | None = Field(default=None, ge=0)
    """Seconds its checks have taken so far (a timing)."""
    # -- files (embodmem.runner.RunWriter, embodmem.video) ----------------------------------------
    episode_log: str | None = None
    """The episode log, relative to the run directory."""
    video: str | None = None
    video_error: str | None = None
    # -- an episode stopped by an error (embodmem.runner.EpisodeAborted) --------------------------
    aborted: bool | None = None
    abort_reason: str | None = None
    steps_before_abort: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _eval_rows_say_after_what(self) -> EpisodeRecord:
        if self.condition is Condition.eval and self.eval_after is None:
            raise ValueError("an 'eval' record needs 'eval_after' (the number of tasks experienced)")
        return self

    @classmethod
    def finished(
        cls,
        measures: Measures,
        wall_time_s: float,
        stats: AgentStats,
        identity: EpisodeIdentity,
        context: SequenceContext,
        staleness: Staleness | None = None,
    ) -> EpisodeRecord:
        """The record of an episode that ran to its end: the one place its fields are put together
        (validated here, once). ``staleness``: a changing world's measures (a static world's record
        has none of those fields)."""
        return cls.model_validate(
            {
                **dataclasses.asdict(measures),
                "wall_time_s": wall_time_s,
                **stats,
                **dataclasses.asdict(identity),
                **dataclasses.asdict(context),
                "start_pose": list(context.start_pose),
                **(dataclasses.asdict(staleness) if staleness is not None else {}),
            }
        )

    @classmethod
    def stopped(
        cls, err: BaseException, steps: int, stats: AgentStats, identity: EpisodeIdentity, eval_after: int | None
    ) -> EpisodeRecord:
        """The record of an episode that ``err`` stopped: the reason, the steps taken, the agent's counts."""
        return cls.model_validate(
            {
                "aborted": True,
                "abort_reason": " ".join(f"{type(err).__name__}: {err}".split()),
                "steps_before_abort": steps,
                **stats,
                **dataclasses.asdict(identity),
                "eval_after": eval_after,
            }
        )

    @property
    def key(self) -> EpisodeKey:
        """The episode's identity within a run directory (:class:`EpisodeKey`)."""
        return EpisodeKey(*(getattr(self, k) for k in EpisodeKey._fields))

    @property
    def name(self) -> str:
        """The episode's file-name stem (:func:`episode_name`)."""
        return episode_name(self.plain())

    def stat(self, name: str) -> Any:
        """A field or an agent's extra statistic by name (None when the record lacks it)."""
        return getattr(self, name, None)

    def plain(self) -> dict[str, JsonValue]:
        """The record as the line of ``metrics.jsonl`` holds it: the fields it was built with, agent
        statistics included (what the writer and the log write)."""
        return self.model_dump(exclude_unset=True)

    def with_files(self, **files: str | None) -> EpisodeRecord:
        """This record with file fields (``video``, ``video_error``, ``episode_log``) set: where the
        writer and the recorder put the episode's files."""
        unknown = set(files) - {"video", "video_error", "episode_log"}
        if unknown:
            raise ValueError(f"not a file field of the record: {sorted(unknown)}")
        return self.model_copy(update={k: v for k, v in files.items() if v is not None})


METRICS_FILE = "metrics.jsonl"
"""A run directory's records, one JSON line per episode: what the runner appends, resume reads and
a new run must not land among."""

TIMING_FIELDS: tuple[str, ...] = ("wall_time_s", "memory_query_ms", "memory_update_s")
"""Record fields that are measured times: they differ from run to run (everything else repeats
bit for bit for the same seeds), so resume, replay and tests leave them out of comparisons."""

EPISODE_KEYS: tuple[str, ...] = EpisodeKey._fields
"""The fields that identify an episode within a run directory (what ``resume`` matches on)."""

_NAME_FIELDS = (
    ("seq", "sequence"),
    ("world", "world_seed"),
    ("seed", "seed"),
    ("task", "task_index"),
    ("agent", "agent"),
    ("cond", "condition"),
)


def episode_key(record: EpisodeRecord) -> EpisodeKey:
    """Stable identity of an episode in a run directory (:data:`EPISODE_KEYS`)."""
    return record.key


def episode_name(record: Mapping[str, Any]) -> str:
    """The episode's file-name stem, shared by its log (``episodes/<name>.json``) and its video, so
    the two sort side by side; fields the record lacks are left out."""
    stem = "-".join(f"{short}={record[key]}" for short, key in _NAME_FIELDS if record.get(key) is not None)
    return re.sub(r"[^A-Za-z0-9_.=+,-]", "_", stem or "episode")
