"""The episode log: one schema, written by the runner and read by replay through the same code.

A log (``episodes/*.json`` in a run directory) holds what is needed to re-simulate an episode
exactly (world seed and digest, task, episode seed, start pose, environment settings, actions) and
what the episode produced (a digest of every observation, the agent's memory queries as
:class:`embodmem.retrieval.RetrievalEvent`, its reports as :class:`embodmem.metrics.Report`, the
metrics record as :class:`embodmem.metrics_record.EpisodeRecord`). A log is built once, by
:meth:`EpisodeLog.of` from the runner's :class:`EpisodeTrace`, the record and the environment's
:class:`~embodmem.envs.config.EnvConfig`, and checked there (every field's type and range, then the
fields against each other); :func:`write_log` turns it into JSON and seals it with ``digest``, the
sha256 of its canonical JSON; :func:`read_log` checks the digest, then reads it back through the same
type. Anything wrong is an :class:`EpisodeLogError` naming the field.

Keys this schema does not know (added by later features, e.g. the record's ``split``) are kept and
covered by the digest; the record's known measures are typed, its other keys are free.

Example:
    >>> from dataclasses import asdict
    >>> log = {"format": LOG_FORMAT, "world_seed": 1, "world_digest": "ab12", "task": "wreck",
    ...        "episode_seed": 7, "start_pose": [1, 2, 0], "start": "fixed0", "actions": [2],
    ...        "action_names": ["forward"], "obs_digests": ["0" * 16, "1" * 16], "retrievals": [],
    ...        "reports": [], "success": False, "env": asdict(EnvConfig()), "record": {"success": 0, "steps": 1}}
    >>> sealed = seal(log)
    >>> check_log(sealed).actions, check_log(sealed).env.size
    ([2], 32)
    >>> check_log({**sealed, "actions": [1]})
    Traceback (most recent call last):
    ...
    embodmem.episode_log.EpisodeLogError: field digest: the log does not match its digest (edited or corrupted after it was written)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from embodmem.atomic import atomic_write_text
from embodmem.condition import Condition
from embodmem.envs.config import EnvConfig
from embodmem.envs.spec import ACTION_NAMES
from embodmem.metrics import Report
from embodmem.metrics_record import EpisodeRecord
from embodmem.retrieval import RetrievalEvent

LOG_FORMAT: Final = "embodmem-episode/3"
"""Version 3: retrieval hits are objects with named fields (:class:`embodmem.retrieval.Retrieval`)."""
_HEX16 = r"^[0-9a-f]{16}$"


class EpisodeLogError(ValueError):
    """A log that breaks the schema; ``field`` is the dotted path of the offending field."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        super().__init__(f"field {field}: {problem}")


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)


@dataclasses.dataclass(frozen=True)
class EpisodeTrace:
    """What the runner saw of one episode (:func:`embodmem.runner.run_episode`): how to re-simulate
    it and what it produced, step by step; :meth:`EpisodeLog.of` makes it a log."""

    world_seed: int
    world_digest: str
    task: str
    episode_seed: int
    start_pose: tuple[int, int, int]
    start: str | None
    """How the start was chosen (``reset`` option ``start``; None: an explicit start pose)."""
    actions: list[int]
    obs_digests: list[str]
    """A digest of every observation, the one after ``reset`` first (none when the run writes no
    episode logs: ``episode_steps(digest_observations=False)``)."""
    retrievals: list[RetrievalEvent]
    reports: list[Report]
    success: bool
    world_changes: list[dict[str, JsonValue]] | None = None
    """A changing world's changes in this visit by the episode's end (``ChangeEvent.as_log``: which
    object, from which cells to which, at which task and step); None in a static world."""
    world_change_set: dict[str, JsonValue] | None = None
    """A changing world's change set (``world.changes``, as ``dataclasses.asdict``): what a replay
    rebuilds the world from."""
    visit_position: int | None = None
    """A changing world's position of the task in its visit (from 0): which changes had happened."""


_OPTIONAL_TRACE = ("world_changes", "world_change_set", "visit_position")
"""Trace fields a log holds only when set (a static world's log stays as it always was)."""


class EpisodeLog(_Strict):
    """One episode log (see the module docstring). Unknown top-level keys are kept."""

    model_config = ConfigDict(extra="allow")

    format: Literal["embodmem-episode/3"] = LOG_FORMAT
    world_seed: int = Field(ge=0, lt=2**32)
    world_digest: str = Field(pattern=r"^[0-9a-f]{1,64}$")
    task: str
    episode_seed: int = Field(ge=0, lt=2**63)
    start_pose: tuple[int, int, int]
    start: str | None = None
    actions: list[int]
    action_names: list[str]
    obs_digests: list[str] = Field(min_length=1)
    retrievals: list[RetrievalEvent]
    """Every memory query of the episode, in step order (:class:`embodmem.retrieval.RetrievalEvent`)."""
    reports: list[Report]
    """Steps at which the agent reported the target (replay re-measures each)."""
    success: bool
    world_changes: list[dict[str, JsonValue]] | None = None
    """Every change of a changing world by the episode's end (absent in a static world)."""
    world_change_set: dict[str, JsonValue] | None = None
    """A changing world's change set, to rebuild it (absent in a static world)."""
    visit_position: int | None = Field(default=None, ge=0)
    """A changing world's position of the task in its visit, from 0 (absent in a static world)."""
    task_index: int | None = Field(default=None, ge=1)
    condition: Annotated[Condition, Field(strict=False)] | None = None
    env: EnvConfig
    """The environment's settings (replay builds the same world from them)."""
    record: EpisodeRecord
    """The episode's metrics record (an episode that ran to its end: its success and steps are there)."""
    digest: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")

    @classmethod
    def of(cls, trace: EpisodeTrace, record: EpisodeRecord, env: EnvConfig) -> EpisodeLog:
        """The log of an episode: the one place a log is put together, checked here once.

        Raises:
            EpisodeLogError: naming the field that is wrong (a bug in the runner).
        """
        try:
            log = cls(
                format=LOG_FORMAT,
                **{
                    f.name: getattr(trace, f.name)
                    for f in dataclasses.fields(trace)
                    if not (f.name in _OPTIONAL_TRACE and getattr(trace, f.name) is None)
                },
                action_names=[ACTION_NAMES[a] for a in trace.actions],
                task_index=record.task_index,
                condition=record.condition,
                env=env,
                record=record,
            )
        except ValidationError as e:
            raise _log_error(e) from None
        _check_consistency(log)
        return log

    def plain(self) -> dict[str, JsonValue]:
        """The log as its JSON holds it (without the digest: :func:`seal` adds it)."""
        body = self.model_dump(exclude_unset=True, exclude={"digest", "record", "env"})
        return {**body, "env": dataclasses.asdict(self.env), "record": self.record.plain()}


def log_digest(log: Mapping[str, JsonValue]) -> str:
    """sha256 of the canonical JSON of ``log`` without its ``digest`` key."""
    body = {k: v for k, v in log.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def seal(log: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """A JSON-normalised copy of ``log`` (tuples become lists) with its ``digest``."""
    plain = json.loads(json.dumps({k: v for k, v in log.items() if k != "digest"}))
    return {**plain, "digest": log_digest(plain)}


def _log_error(e: ValidationError) -> EpisodeLogError:
    err = e.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in err["loc"]) or "log"
    if err["loc"][:1] == ("env",) and err["type"] == "value_error":  # EnvConfig's own check, one line
        reason = str(err["ctx"]["error"]) if "ctx" in err else err["msg"]
        return EpisodeLogError("env", f"cannot build the environment from the log's settings: {reason}")
    got = f" (got {err['input']!r})" if err["type"] != "missing" and len(repr(err["input"])) < 80 else ""
    return EpisodeLogError(loc, f"{err['msg']}{got}")


def _validated(log: Any) -> EpisodeLog:
    try:
        return EpisodeLog.model_validate_json(json.dumps(log))
    except ValidationError as e:
        raise _log_error(e) from None
    except (RecursionError, ValueError) as e:
        raise EpisodeLogError("log", f"not serialisable as JSON ({e})") from None


def check_log(log: Any, *, require_digest: bool = True) -> EpisodeLog:
    """Validate a parsed log: digest, every field, then the fields against each other.

    Raises:
        EpisodeLogError: naming the first field that is wrong.
    """
    if not isinstance(log, dict):
        raise EpisodeLogError("log", f"not an episode log (the JSON is a {type(log).__name__}, not an object)")
    if "format" not in log:
        raise EpisodeLogError("format", f"missing: not an embodmem episode log (expected {LOG_FORMAT!r})")
    if log["format"] != LOG_FORMAT:
        raise EpisodeLogError(
            "format", f"{log['format']!r} is not {LOG_FORMAT!r} (a foreign file, or one written by another version)"
        )
    if require_digest and log.get("digest") != log_digest(log):
        raise EpisodeLogError("digest", "the log does not match its digest (edited or corrupted after it was written)")
    _check_env_keys(log.get("env"))
    parsed = _validated(log)
    _check_consistency(parsed)
    return parsed


_ENV_FIELDS = tuple(f.name for f in dataclasses.fields(EnvConfig))


def _check_env_keys(env: Any) -> None:
    """A log holds every environment setting, and only those (none is filled from today's defaults)."""
    if not isinstance(env, dict):
        return  # the schema names it
    missing = next((k for k in _ENV_FIELDS if k not in env), None)
    if missing is not None:
        raise EpisodeLogError(f"env.{missing}", "Field required (a log holds every environment setting)")
    extra = next((k for k in env if k not in _ENV_FIELDS), None)
    if extra is not None:
        raise EpisodeLogError(f"env.{extra}", f"not a setting of EnvConfig (its settings: {', '.join(_ENV_FIELDS)})")


def _check_consistency(log: EpisodeLog) -> None:
    n = len(log.actions)
    bad = next((i for i, a in enumerate(log.actions) if a not in ACTION_NAMES), None)
    if bad is not None:
        raise EpisodeLogError(f"actions.{bad}", f"{log.actions[bad]!r} is not one of {sorted(ACTION_NAMES)}")
    if len(log.action_names) != n:
        raise EpisodeLogError("action_names", f"{len(log.action_names)} names for {n} actions")
    bad = next((i for i, (a, name) in enumerate(zip(log.actions, log.action_names)) if ACTION_NAMES[a] != name), None)
    if bad is not None:
        raise EpisodeLogError(
            f"action_names.{bad}",
            f"{log.action_names[bad]!r} does not name action {log.actions[bad]} ({ACTION_NAMES[log.actions[bad]]!r})",
        )
    if len(log.obs_digests) != n + 1:
        raise EpisodeLogError(
            "obs_digests",
            f"{len(log.obs_digests)} observation digests for {n} actions (expected {n + 1}); truncated or inconsistent",
        )
    bad = next((i for i, d in enumerate(log.obs_digests) if not _is_hex16(d)), None)
    if bad is not None:
        raise EpisodeLogError(f"obs_digests.{bad}", f"{log.obs_digests[bad]!r} is not a 16-hex-digit digest")
    if not 0 <= log.start_pose[2] <= 3 or min(log.start_pose[:2]) < 0:
        raise EpisodeLogError("start_pose", f"{list(log.start_pose)} is not [x >= 0, y >= 0, heading 0..3]")
    last = 0
    for i, event in enumerate(log.retrievals):
        if not last < event.step <= n:
            raise EpisodeLogError(
                f"retrievals.{i}.step", f"{event.step} is not after step {last} and within the {n} steps"
            )
        last = event.step
    last = -1
    for i, report in enumerate(log.reports):
        if not last < report.step < n:
            raise EpisodeLogError(
                f"reports.{i}.step", f"{report.step} is not after step {last} and before the last of {n} steps"
            )
        last = report.step
    rec = log.record
    for name in ("success", "steps"):
        if getattr(rec, name) is None:
            raise EpisodeLogError(f"record.{name}", "Field required (a logged episode ran to its end)")
    for name, want in (("success", int(log.success)), ("steps", n), ("task", log.task), ("task_index", log.task_index),
                       ("world_seed", log.world_seed), ("condition", log.condition)):  # fmt: skip
        got = getattr(rec, name)
        if got is not None and want is not None and got != want:
            raise EpisodeLogError(f"record.{name}", f"{got!r} disagrees with the log's {want!r}")


def _is_hex16(s: str) -> bool:
    return len(s) == 16 and all(c in "0123456789abcdef" for c in s)


def write_log(path: str | os.PathLike[str], log: EpisodeLog) -> None:
    """Seal ``log`` (checked when it was made, :meth:`EpisodeLog.of`) with its digest and write it atomically."""
    atomic_write_text(path, json.dumps(seal(log.plain()), separators=(",", ":")) + "\n")


def read_log(path: str | os.PathLike[str]) -> EpisodeLog:
    """Read, verify and validate a log.

    Raises:
        EpisodeLogError: naming the field that is wrong (``log`` when the file is not JSON).
        OSError: when the file cannot be read.
    """
    text = Path(path).read_text(encoding="utf-8")
    if not text.strip():
        raise EpisodeLogError("log", "the file is empty (truncated log?)")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise EpisodeLogError(
            "log",
            f"not valid JSON ({err.msg} at line {err.lineno} column {err.colno}); the log is corrupted or truncated",
        ) from None
    except RecursionError:
        raise EpisodeLogError("log", "JSON nested too deeply; not an episode log") from None
    return check_log(raw)
