"""The episode log: one schema, written by the runner and read by replay through the same code.

A log (``episodes/*.json`` in a run directory) holds what is needed to re-simulate an episode
exactly (world seed and digest, task, episode seed, start pose, environment settings, actions) and
what the episode produced (a digest of every observation, the agent's memory queries as
:class:`embodmem.retrieval.RetrievalEvent`, the metrics record). :func:`write_log` validates a log
against :class:`EpisodeLog` and seals it with ``digest``, the sha256 of its canonical JSON;
:func:`read_log` checks the digest, then every field's type and range, then the fields against each
other. Anything wrong is an :class:`EpisodeLogError` naming the field.

Keys this schema does not know (added by later features, e.g. the record's ``split``) are kept and
covered by the digest; the record's known measures are typed, its other keys are free.

Example:
    >>> log = {"format": LOG_FORMAT, "world_seed": 1, "world_digest": "ab12", "task": "wreck",
    ...        "episode_seed": 7, "start_pose": [1, 2, 0], "start": "fixed0", "actions": [2],
    ...        "action_names": ["forward"], "obs_digests": ["0" * 16, "1" * 16], "retrievals": [],
    ...        "reports": [], "success": False, "env": {}, "record": {"success": 0, "steps": 1}}
    >>> sealed = seal(log)
    >>> check_log(sealed).actions
    [2]
    >>> check_log({**sealed, "actions": [1]})
    Traceback (most recent call last):
    ...
    embodmem.episode_log.EpisodeLogError: field digest: the log does not match its digest (edited or corrupted after it was written)
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from embodmem.atomic import atomic_write_text
from embodmem.envs.spec import ACTION_NAMES
from embodmem.metrics_record import EpisodeRecord
from embodmem.retrieval import RetrievalEvent

LOG_FORMAT = "embodmem-episode/3"
"""Version 3: retrieval hits are objects with named fields (:class:`embodmem.retrieval.Retrieval`)."""
_HEX16 = r"^[0-9a-f]{16}$"


class EpisodeLogError(ValueError):
    """A log that breaks the schema; ``field`` is the dotted path of the offending field."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        super().__init__(f"field {field}: {problem}")


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)


class Report(_Strict):
    """One report of the target: the step whose frame the agent judged, where it was taken, and the
    distances to every instance from there (the reference distance score uses the best report)."""

    step: int = Field(ge=0)
    position: tuple[Annotated[int, Field(ge=0)], Annotated[int, Field(ge=0)]] | None
    instance_distances_m: list[Annotated[float, Field(ge=0)]]


class LoggedRecord(EpisodeRecord):
    """The metrics record of a logged episode (:class:`embodmem.metrics_record.EpisodeRecord`): an
    episode that ran to its end, so its success and steps are there."""

    success: int = Field(ge=0, le=1)
    steps: int = Field(ge=0)


class EpisodeLog(_Strict):
    """One episode log (see the module docstring). Unknown top-level keys are kept."""

    model_config = ConfigDict(extra="allow")

    format: Literal["embodmem-episode/3"]
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
    task_index: int | None = Field(default=None, ge=1)
    condition: str | None = None
    env: dict[str, Any]
    record: LoggedRecord
    digest: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")


def log_digest(log: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of ``log`` without its ``digest`` key."""
    body = {k: v for k, v in log.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def seal(log: dict[str, Any]) -> dict[str, Any]:
    """A JSON-normalised copy of ``log`` (tuples become lists) with its ``digest``."""
    plain = json.loads(json.dumps({k: v for k, v in log.items() if k != "digest"}))
    return {**plain, "digest": log_digest(plain)}


def _validated(log: Any) -> EpisodeLog:
    try:
        return EpisodeLog.model_validate_json(json.dumps(log))
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        loc = ".".join(str(p) for p in err["loc"]) or "log"
        got = f" (got {err['input']!r})" if err["type"] != "missing" and len(repr(err["input"])) < 80 else ""
        raise EpisodeLogError(loc, f"{err['msg']}{got}") from None
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
    parsed = _validated(log)
    _check_consistency(parsed)
    return parsed


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
    for name, want in (("success", int(log.success)), ("steps", n), ("task", log.task), ("task_index", log.task_index),
                       ("world_seed", log.world_seed), ("condition", log.condition)):  # fmt: skip
        got = getattr(rec, name)
        if got is not None and want is not None and got != want:
            raise EpisodeLogError(f"record.{name}", f"{got!r} disagrees with the log's {want!r}")


def _is_hex16(s: str) -> bool:
    return len(s) == 16 and all(c in "0123456789abcdef" for c in s)


def write_log(path: str | os.PathLike[str], log: dict[str, Any]) -> dict[str, Any]:
    """Validate ``log`` against the schema, seal it with its digest and write it atomically.

    Returns:
        The sealed log as written.
    """
    sealed = seal(log)
    check_log(sealed)
    atomic_write_text(path, json.dumps(sealed, separators=(",", ":")) + "\n")
    return sealed


def read_log(path: str | os.PathLike[str]) -> tuple[dict[str, Any], EpisodeLog]:
    """Read, verify and validate a log; returns ``(the raw dict, the typed log)``.

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
    return raw, check_log(raw)
