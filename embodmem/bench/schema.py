"""The result file of ``embodmem-bench run``: its fields defined once, shipped as a JSON Schema.

:class:`BenchResult` is the one definition; ``result.schema.json`` beside this module is generated
from it (:func:`result_schema`; a test checks the shipped file is current), so anyone can check a
result file with any JSON Schema validator, and ``embodmem-bench verify`` checks it with
``jsonschema`` before reading a field. Intervals are ``null`` where they are undefined (fewer than two
worlds), never NaN, so every result is plain JSON.

Example:
    >>> Interval.of(0.5, (0.25, 0.75), 4).model_dump()
    {'mean': 0.5, 'lo': 0.25, 'hi': 0.75, 'n': 4}
    >>> Interval.of(float("nan"), (float("nan"), float("nan")), 1).lo is None
    True
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from embodmem.bench.spec import TrackSpec

SCHEMA_PATH = Path(__file__).resolve().parent / "result.schema.json"
RESULT_FORMAT: Literal["embodmem-bench-result"] = "embodmem-bench-result"
RESULT_FORMAT_VERSION: Literal[1] = 1
RESULT_FILE = "result.json"
RECORDS_FILE = "records.jsonl"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _defined(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


class Interval(_Model):
    """A mean (or ratio) with its 95% interval; ``n`` is how many values it was taken over."""

    mean: float | None
    lo: float | None
    hi: float | None
    n: int = Field(ge=0)

    @classmethod
    def of(cls, mean: float, ci: tuple[float, float], n: int) -> Interval:
        return cls(mean=_defined(mean), lo=_defined(ci[0]), hi=_defined(ci[1]), n=n)


class StalenessScore(_Model):
    """A changing-world sequence's staleness figures, over its revisits in the scored condition (a
    revisit: a task whose goal the sequence asked for before, in the same world)."""

    changed_spl: Interval
    """SPL of revisits whose goal was moved, removed, re-dressed or drifted since (``goal_changed``)."""
    unchanged_spl: Interval
    """SPL of revisits whose goal stayed where it was."""
    stale_target_visits: Interval
    """Entries into a place where the goal stood before a change and no longer stands, per changed-goal revisit."""
    steps_to_correct: Interval
    """Steps from the first to the last step in a stale place, over the episodes with such a step."""


class SequenceScore(_Model):
    """One sequence's figures over the run's worlds (later tasks: the second task onwards)."""

    sequence: str
    condition: str
    """The condition scored: warm (agents that carry memory) or single."""
    worlds: int
    episodes: int
    aborted: int
    """Episodes an error stopped: scored as failures (success 0, SPL 0)."""
    later_spl: Interval
    later_success: Interval
    later_steps: Interval
    all_spl: Interval
    warm_minus_cold_spl: Interval | None
    """Later tasks, paired by world and task; None for agents without memory."""
    steps_cold_over_warm: Interval | None
    staleness: StalenessScore | None = None
    """A changing world's figures (None: a static world)."""


class GroupScore(_Model):
    """A group's score: the mean over its sequences of their later tasks' SPL, per world, then over worlds."""

    group: str
    score: Interval
    sequences: list[SequenceScore]


class EQAScore(_Model):
    answerer: str
    questions: int
    tours: int
    accuracy: Interval
    """Share of questions answered right (a "where" within two cells), tours resampled whole."""
    by_type: dict[str, Interval]


class Usage(_Model):
    """What the run used, against the track's budgets (maxima per episode unless said otherwise)."""

    episodes: int
    steps_total: int
    steps_max_episode: int
    memory_code_bytes_max: int
    """Bytes of vector code held after any action of any task (the record's ``memory_bytes_peak``;
    ``memory_bytes``, the end of a task, for records made before the runner measured the peak)."""
    carried_state_bytes_max: int
    """Bytes of the state a warm run carries at the end of a sequence (its saved snapshot, every file)."""
    vlm_calls_max_episode: int
    vlm_tokens_max_episode: int


class Budget(_Model):
    within: bool
    violations: list[str]
    """One line per budget exceeded: what, how much, the limit."""


class SpecRef(_Model):
    benchmark: str
    version: int
    sha256: str


class PackageRef(_Model):
    name: str
    version: str
    commit: str


class AgentRef(_Model):
    name: str
    """As given to ``--agent``: a stock name or a plug-in name / ``module:Class`` path."""
    kind: Literal["stock", "plugin"]
    version: str
    """The stock agents: the package version; a plug-in: its distribution's version (or "unknown")."""
    privileged: bool
    """A control handed the world (the oracle): listed on the board, never ranked."""
    overrides: list[str]
    """Config overrides of the agent, memory and embedder groups the run used."""
    sets: list[str] = Field(default_factory=list)
    """Of those, the ones given with ``--set`` (the rest select the agent)."""
    config_sha256: str
    """SHA-256 of the resolved agent, memory and embedder config."""
    config: dict[str, JsonValue] | None = None
    """That config itself (what ``verify --rerun`` compares, key by key, when the hash differs)."""


class TrackRef(TrackSpec):
    name: str


class RecordsRef(_Model):
    file: str
    sha256: str
    """SHA-256 of the records file's bytes."""
    count: int


class Machine(_Model):
    """embodmem.provenance.Provenance's facts."""

    command: str
    commit: str
    date: str
    python: str
    platform: str
    cpu: str
    cpus: int
    memory_gib: float


class BenchResult(_Model):
    """One ``embodmem-bench run``: everything needed to rank it and to check it."""

    format: Literal["embodmem-bench-result"]
    format_version: Literal[1]
    spec: SpecRef
    package: PackageRef
    agent: AgentRef
    track: TrackRef
    split: str
    worlds: list[int]
    complete: bool
    """True when the run covered every world of the split and every group of the spec."""
    groups: list[str]
    status: Literal["scored", "over_budget"]
    """over_budget: a budget of the track was exceeded; the scores stand but are never ranked."""
    scores: list[GroupScore]
    eqa: EQAScore | None
    usage: Usage
    budget: Budget
    wall_time_s: float
    machine: Machine
    records: RecordsRef


def result_schema() -> dict[str, object]:
    """The JSON Schema of a result file (what ``result.schema.json`` holds)."""
    schema = BenchResult.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://embodmem.invalid/bench/result-1.schema.json"
    return schema


def schema_text() -> str:
    return json.dumps(result_schema(), indent=2, sort_keys=True) + "\n"


def shipped_schema() -> dict[str, object]:
    loaded: dict[str, object] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


def schema_problem(data: object) -> str | None:
    """The first place ``data`` breaks the shipped schema (``field: message``), or None."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(shipped_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path) or "result"
    return f"field {where}: {' '.join(error.message.split())[:200]}"
