"""Agent replay: re-run the agent of a logged episode from its run's config and compare what it recomputes.

The environment replay (:mod:`embodmem.replay`) proves that the logged actions give the logged
observations and measures; it cannot say whether the agent chose those actions or retrieved those
frames. This module can: it reads the run's ``config.yaml`` (the resolved Hydra config the app writes
beside ``episodes/``), checks that the log belongs to that run (sequence, world, seed, agent and
condition among the config's runs; the same environment settings), rebuilds the agent with the app's
own factories, and runs the sequence's episodes up to and including the logged one with the runner's
own :func:`embodmem.runner.run_sequence` (same episode seeds, starts, poisoning, sleep and memory
loading as the run). Runs are bit-for-bit deterministic on one machine, so the re-run must write the
very log the run wrote: the comparison walks it in step order (the report judged before each action,
the action, the observation digest after it, the retrieval at that step) and then the outcome and the
metrics record, and stops at the first difference with one line naming the episode, the step and the
field. Only what nothing can recompute is left out: measured times (``TIMING_FIELDS``), the video
paths the recorder adds, and ``run_id`` when the config leaves it to the output directory's name.

Cost: one episode per task up to the logged one (task k of a warm or cold run re-runs k episodes), plus
building the embedder; re-runs are memoised per process, so checking every log of one run re-runs each
sequence once. GEM evaluation rows are not logged (``RunWriter.write_records``), so there is nothing
of theirs to re-run; the runner guarantees (and a test checks) that they never change the run.

Example:
    >>> from embodmem.rerun import find_config, verify_agent
    >>> check = verify_agent(log, find_config(log_path))  # doctest: +SKIP
    >>> check.episodes, check.retrievals  # doctest: +SKIP
    (2, 1)
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from embodmem.condition import Condition
from embodmem.envs.spec import ACTION_NAMES
from embodmem.episode_log import EpisodeLog
from embodmem.runner import TIMING_FIELDS, EpisodeResult, StepEvent

if TYPE_CHECKING:
    from embodmem.runner import ExperimentPlan

CONFIG_NAME = "config.yaml"
"""The resolved config a run writes into its output directory (embodmem.app.run)."""
RECORDER_FIELDS = ("video", "video_error")
"""Record fields the video recorder adds (a path, an encoding error): labels, not recomputed."""
OFFLINE_ONLY = ("vlm",)
"""Agents whose actions come from a server: agent replay does not call it."""
_MEMO_SIZE = 8


class RerunError(ValueError):
    """The log cannot be checked against its run: no usable config, or not one of its run's episodes.
    One line; ``field`` is the dotted path of the field that does not match ("" for the config)."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class RerunMismatch(RerunError):
    """The re-run differs from the log; ``step`` is the step of the first difference (None: the
    episode's outcome or record)."""

    def __init__(self, message: str, field: str, step: int | None) -> None:
        super().__init__(message, field)
        self.step = step


@dataclass(frozen=True)
class AgentCheck:
    """What an agent replay verified."""

    config: Path
    agent: str
    condition: str
    episodes: int
    """Episodes re-run (the logged one and the ones before it in its sequence)."""
    actions: int
    retrievals: int
    """Memory queries compared (each with its query text and every logged hit)."""
    not_recomputed: tuple[str, ...]
    """Record fields the log holds that nothing recomputes (compared for type only)."""


def find_config(log_path: str | Path) -> Path | None:
    """The run's ``config.yaml`` for a log at ``<run>/episodes/<name>.json``, if it is there."""
    log_path = Path(log_path)
    candidate = log_path.parent.parent / CONFIG_NAME
    return candidate if log_path.parent.name == "episodes" and candidate.is_file() else None


def load_run_config(path: str | Path) -> DictConfig:
    """The run's config typed by the app's schema and validated as the app validates it.

    Raises:
        RerunError: one line naming the file and the bad key.
    """
    from embodmem.config import Config, validate

    path = Path(path)
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(Config), OmegaConf.load(path))
        assert isinstance(cfg, DictConfig)
        validate(cfg)
    except FileNotFoundError:
        raise RerunError(f"{path}: no such run config") from None
    except yaml.YAMLError as err:
        raise RerunError(f"{path}: not a usable run config: not YAML ({' '.join(str(err).split())})") from None
    except (OmegaConfBaseException, ValueError, OSError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if isinstance(err, OmegaConfBaseException) and err.full_key and err.full_key not in first:
            first = f"{err.full_key}: {first}"
        raise RerunError(f"{path}: not a usable run config: {first}") from None
    assert isinstance(cfg, DictConfig)
    return cfg


@dataclass(frozen=True)
class _Episode:
    """Which episode of which run a log claims to be."""

    sequence: str
    tasks: tuple[str, ...]
    world_seed: int
    seed: int
    agent: str
    condition: Condition
    task_index: int
    run_id: str

    def __str__(self) -> str:
        return (
            f"episode {self.agent}/{self.condition} task {self.task_index} ({self.tasks[self.task_index - 1]}) "
            f"of {self.sequence}, world {self.world_seed}, seed {self.seed}"
        )


def _claimed(log: EpisodeLog, cfg: DictConfig, config_path: Path) -> tuple[_Episode, ExperimentPlan]:
    """The episode the log claims to be, checked against the run config; refused on any mismatch."""
    from embodmem.app import env_config, experiment_plan

    record = log.record
    for key, kind in (("sequence", str), ("agent", str), ("seed", int), ("condition", Condition), ("task_index", int)):
        value = getattr(record, key)
        if value is None or type(value) is not kind:
            raise RerunError(
                f"field record.{key}: {value!r} is not a {kind.__name__}; agent replay needs it to find the episode",
                f"record.{key}",
            )
    plan = experiment_plan(cfg, config_path.parent)
    sequences = dict(plan.sequences)
    assert record.sequence is not None and record.task_index is not None and record.agent is not None
    assert record.condition is not None
    if record.sequence not in sequences:
        raise RerunError(
            f"field record.sequence: {record.sequence!r} is not a sequence of {config_path} "
            f"(it runs {', '.join(sequences)})",
            "record.sequence",
        )
    tasks = sequences[record.sequence]
    index = record.task_index
    if not 1 <= index <= len(tasks) or tasks[index - 1] != log.task:
        raise RerunError(
            f"field task_index: task {index} ({log.task}) is not in {record.sequence} = {list(tasks)} of {config_path}",
            "task_index",
        )
    if log.world_seed not in plan.world_seeds:
        raise RerunError(
            f"field world_seed: {log.world_seed} is not a world of {config_path} (its worlds: {plan.world_seeds})",
            "world_seed",
        )
    if record.seed != plan.seed:
        raise RerunError(f"field record.seed: {record.seed} is not the seed of {config_path} ({plan.seed})", "seed")
    run = (record.agent, record.condition)
    if run not in plan.runs:
        runs = ", ".join(f"{a}/{c}" for a, c in plan.runs)
        raise RerunError(
            f"field record.agent: {'/'.join(run)} is not among the runs of {config_path} ({runs})", "record.agent"
        )
    if record.agent in OFFLINE_ONLY:
        raise RerunError(
            f"field record.agent: {record.agent!r} takes its actions from a server, which agent replay does not "
            "call; check the environment only (--no-agent)",
            "record.agent",
        )
    expected_env = _plain(dataclasses.asdict(env_config(cfg)))
    diff = _first_difference(_plain(dataclasses.asdict(log.env)), expected_env, "env")
    if diff is not None:
        path, got, want = diff
        raise RerunError(f"field {path}: the log has {_show(got)}, {config_path} has {_show(want)}", path)
    run_id = cfg.run_id if cfg.run_id is not None else record.run_id
    if not isinstance(run_id, str):
        raise RerunError(f"field record.run_id: {run_id!r} is not a str", "record.run_id")
    episode = _Episode(record.sequence, tasks, log.world_seed, plan.seed, record.agent, record.condition, index, run_id)
    return episode, plan


_memo: dict[tuple[str, _Episode], list[EpisodeLog]] = {}


def run_up_to(
    cfg: DictConfig,
    plan: ExperimentPlan,
    episode: _Episode,
    on_episode: Callable[[EpisodeResult], None] | None = None,
    on_step: Callable[[StepEvent], None] | None = None,
) -> list[EpisodeResult]:
    """The episode's sequence from a fresh agent, built by the app's own factories and driven by the
    runner's own loop, up to and including the episode (the episodes after it cannot change it)."""
    from embodmem.agents.base import MemoryCarrier
    from embodmem.agents.registry import get_agent_spec
    from embodmem.app import build_agent, build_embedder, build_env
    from embodmem.profiling import Profiler
    from embodmem.runner import run_sequence

    env = build_env(cfg, episode.tasks, episode.world_seed)
    embedder = build_embedder(cfg) if get_agent_spec(episode.agent).needs_embedder else None
    agent = build_agent(episode.agent, cfg, embedder, env, plan.seed)
    agent.profiler = Profiler()
    if isinstance(agent, MemoryCarrier) and episode.condition.carries_memory and plan.load_memory is not None:
        agent.load_state(plan.load_memory)
    spec = plan.sequence_spec(
        episode.sequence, episode.tasks[: episode.task_index], episode.world_seed, episode.condition
    )
    sleep = plan.sleep_between_tasks and episode.condition.carries_memory
    return run_sequence(env, agent, spec, episode.run_id, agent.profiler, sleep, on_episode, on_step)


def _rerun(cfg: DictConfig, plan: ExperimentPlan, episode: _Episode) -> list[EpisodeLog]:
    """The logs (as :class:`embodmem.runner.RunWriter` writes them, without digest) of the episode's
    sequence up to and including it, from a fresh agent driven by the runner's own loop."""
    key = (OmegaConf.to_yaml(cfg, resolve=True), episode)
    if key in _memo:
        return _memo[key]
    from embodmem.app import env_config

    results = run_up_to(cfg, plan, episode)
    settings = env_config(cfg)
    logs = [EpisodeLog.of(r.outcome.trace, r.final_record(), settings) for r in results]
    if len(_memo) >= _MEMO_SIZE:
        _memo.pop(next(iter(_memo)))
    _memo[key] = logs
    return logs


def verify_agent(log: EpisodeLog, config_path: str | Path) -> AgentCheck:
    """Re-run the log's agent from its run config and compare everything it recomputes with the log.

    Args:
        log: a log already read and checked by :func:`embodmem.episode_log.read_log`.
        config_path: the run's ``config.yaml``.

    Raises:
        RerunError: one line: the config is unusable or the log is not one of its run's episodes.
        RerunMismatch: the re-run differs (naming the episode, the step and the field).
    """
    config_path = Path(config_path)
    cfg = load_run_config(config_path)
    episode, plan = _claimed(log, cfg, config_path)
    expected = _rerun(cfg, plan, episode)[-1]
    ignored = TIMING_FIELDS + RECORDER_FIELDS + (("run_id",) if cfg.run_id is None else ())
    try:
        _compare(_plain(log.plain()), _plain(expected.plain()), ignored)
    except _Mismatch as m:
        where = f"step {m.step}" if m.step is not None else "its outcome"
        verb = "the re-run has" if m.verb is None else m.verb
        raise RerunMismatch(
            f"{episode}, {where}: field {m.path}: the log has {m.got}, {verb} {m.want}", m.path, m.step
        ) from None
    kept = tuple(k for k in ignored if k in log.record.model_fields_set | set(log.record.model_extra or {}))
    return AgentCheck(
        config_path,
        episode.agent,
        episode.condition,
        episode.task_index,
        len(expected.actions),
        len(expected.retrievals),
        kept,
    )


# --------------------------------------------------------------------------- comparison


class _Mismatch(Exception):
    def __init__(self, path: str, got: str, want: str, step: int | None, verb: str | None = None) -> None:
        self.path, self.got, self.want, self.step, self.verb = path, got, want, step, verb


def _plain(value: Any) -> Any:
    """``value`` as its JSON text reads back (tuples become lists): what a log holds."""
    return json.loads(json.dumps(value))


def _show(value: Any, limit: int = 70) -> str:
    text = "nothing" if value is _ABSENT else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_ABSENT = object()


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values and of the same JSON type (1 is not 1.0, True is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)  # NaN equals NaN here


def _first_difference(got: Any, want: Any, path: str) -> tuple[str, Any, Any] | None:
    """The first place where ``got`` (the log) differs from ``want`` (the re-run): path and both values.

    >>> _first_difference({"a": [1, 2.0]}, {"a": [1, 2]}, "")
    ('a.1', 2.0, 2)
    """
    if isinstance(got, dict) and isinstance(want, dict):
        for key in [*want, *(k for k in got if k not in want)]:
            diff = _first_difference(got.get(key, _ABSENT), want.get(key, _ABSENT), _join(path, key))
            if diff is not None:
                return diff
        return None
    if isinstance(got, list) and isinstance(want, list):
        for i, (g, w) in enumerate(zip(got, want)):
            diff = _first_difference(g, w, _join(path, i))
            if diff is not None:
                return diff
        if len(got) != len(want):
            n = min(len(got), len(want))
            return _join(path, n), _item(got, n), _item(want, n)
        return None
    return None if _same(got, want) else (path, got, want)


def _join(path: str, key: str | int) -> str:
    return f"{path}.{key}" if path else str(key)


def _item(items: Sequence[Any], i: int) -> Any:
    return items[i] if i < len(items) else _ABSENT


def _by_step(entries: Sequence[Mapping[str, Any]], offset: int = 0) -> dict[int, tuple[int, Any]]:
    """step -> (index, entry) of a step-ordered log list (``offset`` shifts the step it belongs to)."""
    return {int(e["step"]) + offset: (i, e) for i, e in enumerate(entries)}


def _compare(log: Mapping[str, Any], expected: Mapping[str, Any], ignored: tuple[str, ...]) -> None:
    """Walk the log in step order against the re-run's; raise :class:`_Mismatch` at the first difference."""

    def check(path: str, got: Any, want: Any, step: int | None, verb: str | None = None) -> None:
        diff = _first_difference(got, want, path)
        if diff is not None:
            where, g, w = diff
            raise _Mismatch(where, _show(g), _show(w), step, verb)

    for key in ("world_seed", "world_digest", "task", "task_index", "condition", "episode_seed", "start"):
        check(key, log.get(key, _ABSENT), expected[key], 0)
    check("start_pose", log["start_pose"], expected["start_pose"], 0)
    check("obs_digests.0", log["obs_digests"][0], expected["obs_digests"][0], 0, "the re-run observes")
    got_events, want_events = _by_step(log["retrievals"]), _by_step(expected["retrievals"])
    got_reports, want_reports = _by_step(log["reports"], 1), _by_step(expected["reports"], 1)
    got_actions, want_actions = log["actions"], expected["actions"]
    for step in range(1, max(len(got_actions), len(want_actions)) + 1):
        g_report, w_report = got_reports.get(step), want_reports.get(step)
        if g_report or w_report:
            index = (g_report or w_report)[0]  # type: ignore[index]
            check(f"reports.{index}", _entry(g_report), _entry(w_report), step, "the agent reports")
        g, w = _item(got_actions, step - 1), _item(want_actions, step - 1)
        if not _same(g, w):
            raise _Mismatch(f"actions.{step - 1}", _action(g), _action(w), step, "the agent chooses")
        check(f"action_names.{step - 1}", log["action_names"][step - 1], expected["action_names"][step - 1], step)
        check(f"obs_digests.{step}", log["obs_digests"][step], expected["obs_digests"][step], step, "the re-run sees")
        g_event, w_event = got_events.get(step), want_events.get(step)
        if g_event or w_event:
            index = (g_event or w_event)[0]  # type: ignore[index]
            check(f"retrievals.{index}", _entry(g_event), _entry(w_event), step, "the agent retrieves")
    last = len(want_actions)
    check("retrievals", log["retrievals"], expected["retrievals"], last, "the agent retrieves")
    check("reports", log["reports"], expected["reports"], last, "the agent reports")
    check("success", log["success"], expected["success"], None)
    got_record, want_record = dict(log["record"]), dict(expected["record"])
    for key in ignored:  # not recomputable: the same JSON type where the run writes it, any value
        g, w = got_record.pop(key, _ABSENT), want_record.pop(key, _ABSENT)
        if w is not _ABSENT and type(g) is not type(w):
            raise _Mismatch(f"record.{key}", _show(g), f"a {type(w).__name__}", None, "the run writes")
        if w is _ABSENT and g is not _ABSENT and not isinstance(g, str):
            raise _Mismatch(f"record.{key}", _show(g), "a str or nothing", None, "the run writes")
    check("record", got_record, want_record, None)
    rest = [k for k in {**expected, **log} if k not in ("record", "digest")]
    check("", {k: log.get(k, _ABSENT) for k in rest}, {k: expected.get(k, _ABSENT) for k in rest}, None)


def _entry(found: tuple[int, Any] | None) -> Any:
    return _ABSENT if found is None else found[1]


def _action(value: Any) -> str:
    if value is _ABSENT:
        return "no action (the episode has ended)"
    return f"{value!r} ({ACTION_NAMES[value]})" if isinstance(value, int) and value in ACTION_NAMES else repr(value)
