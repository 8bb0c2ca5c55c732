"""Exact replay of a logged episode: re-simulate it, re-run its agent, prove both match, render its video.

    embodmem-replay outputs/.../episodes/seq=wreck_then_barrel-...-cond=warm.json
    embodmem-replay LOG --out episode.mp4 --size 320 --fps 15
    embodmem-replay LOG --check            # verify only, no video
    embodmem-replay LOG --check --no-agent # the environment only (no agent re-run)

An episode log (written by :class:`embodmem.runner.RunWriter`) holds the world seed and its digest,
the task, the episode seed, the start pose, every action, a digest of every observation and what
the agent retrieved from memory. Two checks, each failing at the first difference with a message
that names the file and the field:

* **Environment** (always; about a tenth of a second per log once imported): the environment is
  deterministic given the log, so stepping a fresh one through the logged actions must reproduce
  every observation bit for bit (the digests prove it); then every measure of the metrics record is
  recomputed and compared.
* **Agent** (:mod:`embodmem.rerun`; by default when the run's ``config.yaml`` is beside
  ``episodes/``): the agent is rebuilt from the run's config and the sequence re-run up to the logged
  episode, so its actions, every retrieval (query, score, node, pose, task, step of every hit), the
  reports and the whole metrics record are recomputed and compared; only measured times, video paths
  and a run label set by the output directory's name are not. Costs one episode per task up to the
  logged one, plus loading the embedder.

The log's schema, its digest (over the whole log) and the checks of its fields against each other
live in :mod:`embodmem.episode_log`. A log that is corrupted, truncated, foreign, edited, or that no
longer replays (the environment or agent code or their settings changed) is refused.

Example:
    >>> from embodmem.replay import replay
    >>> result = replay("episode.json", out="episode.mp4")  # doctest: +SKIP
    >>> result.steps, result.video, result.agent_check.retrievals  # doctest: +SKIP
    (57, PosixPath('episode.mp4'), 3)
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from embodmem.agents.base import Agent, Observation
from embodmem.envs.changes import WorldChanges
from embodmem.envs.entry import make_env as build_env
from embodmem.envs.ground_truth import ResetOptions
from embodmem.envs.spec import ACTION_NAMES
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.episode_log import EpisodeLog, EpisodeLogError, read_log
from embodmem.metrics import Measures
from embodmem.metrics_record import TIMING_FIELDS, EpisodeRecord
from embodmem.rerun import OFFLINE_ONLY, AgentCheck, RerunError, RerunMismatch, find_config, verify_agent
from embodmem.runner import StepEvent, observation_digest, run_episode
from embodmem.video import Scene, StepRecord, render_frames, retrievals_from_log, video_format, write_video

_NOT_RECOMPUTED = TIMING_FIELDS
"""Measures a replay cannot reproduce (wall time); every other recomputed measure must match."""


class ReplayError(Exception):
    """A log that cannot be replayed; the message names the file and the reason."""


class ReplayMismatch(ReplayError):
    """The re-simulated episode differs from the logged one.

    Attributes:
        step: the first step whose observation differs (0 = the observation after ``reset``), or -1
            when every observation matched but the logged metrics record does not.
    """

    def __init__(self, message: str, step: int):
        super().__init__(message)
        self.step = step


@dataclass
class ReplayResult:
    """What a replay found and wrote."""

    log_path: Path
    steps: int
    """Actions replayed (every observation digest matched)."""
    success: bool
    summary: Measures
    """The episode's measures recomputed from the re-simulation (success, SPL, steps, path ...)."""
    video: Path | None = None
    frames: int = 0
    """Frames in the video (steps plus the held summary frame)."""
    agent_check: AgentCheck | None = None
    """What the agent re-run verified (None: the environment only, see ``agent_skipped``)."""
    agent_skipped: str | None = None
    """Why the agent was not re-run."""


@dataclass
class Simulation:
    """A verified re-simulation: everything needed to render the episode."""

    scene: Scene
    steps: list[StepRecord]
    summary: Measures


def load_log(path: str | Path) -> EpisodeLog:
    """Read and check an episode log through :mod:`embodmem.episode_log` (digest, every field's
    type and range, the fields against each other); raise :class:`ReplayError` naming the file and
    the field that is wrong."""
    path = Path(path)
    try:
        return read_log(path)
    except FileNotFoundError:
        raise ReplayError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ReplayError(f"{path}: cannot read the log ({err})") from None
    except EpisodeLogError as err:
        raise ReplayError(f"{path}: {err}") from None


def make_env(log: EpisodeLog, path: str | Path = "<log>") -> UnderwaterEnv:
    """The environment the log was recorded in: its settings, its world (with its changes, in a
    changing world: its digest is checked at the episode's end), its task."""
    try:
        changes = WorldChanges.from_log(log.world_change_set) if log.world_change_set is not None else None
    except (TypeError, ValueError, KeyError) as err:
        raise ReplayError(f"{path}: field world_change_set: {err}") from None
    try:
        env = build_env(log.env, (log.task,), log.world_seed, changes)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError, MemoryError) as err:
        raise ReplayError(f"{path}: field env: cannot build the environment from the log's settings: {err}") from None
    digest = env.world.digest()
    if changes is None and digest != log.world_digest:
        raise ReplayError(
            f"{path}: world digest mismatch for world_seed={log.world_seed}: the log has {log.world_digest}, "
            f"this code builds {digest} (the world generator or the env settings changed)"
        )
    return env


class LoggedActions(Agent):
    """The scripted agent of a replay: plays the log's actions in order and reports where the log
    reports, so :func:`embodmem.runner.run_episode` (the one episode loop) re-simulates the episode."""

    name = "replay"

    def __init__(self, log: EpisodeLog, path: str | Path) -> None:
        super().__init__()
        self.actions = log.actions
        self.reported = {r.step for r in log.reports}
        self.path = path
        self.taken = 0
        """Actions played so far."""

    def act(self, observation: Observation) -> int:
        if self.taken >= len(self.actions):
            raise ReplayError(
                f"{self.path}: the log ends after {len(self.actions)} actions but the episode had not ended "
                "(truncated log?)"
            )
        self.trace.reported = self.taken in self.reported  # the agent judged this frame and reported the target
        action = self.actions[self.taken]
        self.taken += 1
        return action


def simulate(log: EpisodeLog, path: str | Path = "<log>") -> Simulation:
    """Re-run the logged actions in a fresh environment through the runner's episode loop, checking
    every observation digest as it goes.

    Raises:
        ReplayMismatch: at the first observation whose digest differs from the log's.
        ReplayError: when the environment cannot be rebuilt, the start is invalid, or the episode
            ends before (or continues after) the logged actions.
    """
    env = make_env(log, path)
    with warnings.catch_warnings():  # absurd logged settings (1e300 m) overflow in numpy: refuse, one line
        warnings.simplefilter("error", RuntimeWarning)
        try:
            options = _start_options(env, log, path)
        except RuntimeWarning as err:
            raise ReplayError(f"{path}: field env: the logged settings break the environment's reset ({err})") from None
    found = retrievals_from_log([e.to_log() for e in log.retrievals])
    steps: list[StepRecord] = []

    def check_and_capture(event: StepEvent) -> None:
        i = len(steps) + 1
        _check_digest(path, i, event.action, observation_digest(event.obs), log.obs_digests[i])
        rec = StepRecord.capture(event.truth, event.obs, event.action)
        if i in found:
            rec.query, rec.retrievals = found[i]
        steps.append(rec)

    player = LoggedActions(log, path)
    outcome = run_episode(env, player, options, log.episode_seed, on_step=check_and_capture)
    if player.taken < len(log.actions):
        raise ReplayError(
            f"{path}: the episode ended at step {player.taken} but the log holds {len(log.actions)} actions"
        )
    if outcome.trace.reports != log.reports:
        raise ReplayError(f"{path}: field reports: the re-simulated reports differ from the logged ones")
    _check_record(path, outcome.measures, log.record)
    if log.world_change_set is not None and env.world.digest() != log.world_digest:
        raise ReplayError(
            f"{path}: world digest mismatch at the episode's end: the log has {log.world_digest}, the replay's "
            f"changing world is {env.world.digest()}"
        )
    return Simulation(Scene.from_env(env), steps, outcome.measures)


def _check_record(path: str | Path, summary: Measures, record: EpisodeRecord) -> None:
    """Every measure the re-simulation recomputes must equal the logged record's (same float bits)."""
    logged = record.plain()
    for key, value in dataclasses.asdict(summary).items():
        if key in _NOT_RECOMPUTED:
            continue
        if key not in logged:
            raise ReplayMismatch(f"{path}: field record.{key}: missing; the replay computes {value!r}", -1)
        got = logged[key]
        same = got == value or (
            isinstance(value, float) and math.isnan(value) and isinstance(got, float) and math.isnan(got)
        )
        if not same or type(got) is not type(value):
            raise ReplayMismatch(f"{path}: field record.{key}: the log has {got!r}, the replay computes {value!r}", -1)


def _start_options(env: UnderwaterEnv, log: EpisodeLog, path: str | Path) -> ResetOptions:
    """The ``reset`` options that start the episode as the recording did (checked on the first
    observation).

    The log keeps the start pose, not how it was chosen. An explicit ``start_pose`` reproduces fixed
    and continued starts, but a ``random`` start drew the pose from the episode's RNG before the fish
    and particles, so for it the same seed with ``start="random"`` is what reproduces the episode.
    Each candidate must give the logged pose and the logged first digest.
    """
    seed, task, pose = log.episode_seed, log.task, list(log.start_pose)
    first: str | None = None
    # new_visit: the pose error starts afresh, as it did for the recording's first reset of this env
    candidates = [
        ResetOptions(task=task, start_pose=pose, new_visit=True),
        ResetOptions(task=task, start="random", new_visit=True),
    ]
    if log.visit_position is not None:  # a changing world: the world as it was at that task of the visit
        for options in candidates:
            options["task_index"] = log.visit_position
    for options in candidates:
        try:
            obs, info = env.reset(seed=seed, options=options)
        except ValueError as err:
            if first is None:
                raise ReplayError(f"{path}: cannot reset to the logged start {pose}: {err}") from None
            continue
        got = observation_digest(obs)
        if list(env.start_pose) == pose and got == log.obs_digests[0]:
            return options
        if first is None:
            first = got
    assert first is not None
    _check_digest(path, 0, None, first, log.obs_digests[0])
    raise AssertionError("unreachable")  # the digests differ, or a start pose matched neither way


def _check_digest(path: str | Path, step: int, action: int | None, got: str, expected: str) -> None:
    if got != expected:
        what = (
            "the observation after reset" if action is None else f"the observation after action {ACTION_NAMES[action]}"
        )
        raise ReplayMismatch(
            f"{path}: replay diverges at step {step}: {what} has digest {got}, the log has {expected} "
            "(the logged actions, the environment code, its settings or the seed differ from the recording)",
            step,
        )


def default_output(log_path: str | Path) -> Path:
    """``<log>.replay.mp4`` beside the log."""
    return Path(log_path).with_suffix(".replay.mp4")


def replay(
    log_path: str | Path,
    out: str | Path | None = None,
    size: int = 256,
    fps: int = 10,
    video: bool = True,
    agent: bool | None = None,
    config: str | Path | None = None,
) -> ReplayResult:
    """Replay an episode log exactly (environment, then agent) and render its video.

    Args:
        log_path: an episode log written by :class:`embodmem.runner.RunWriter`.
        out: video file (``.mp4`` H.264 or ``.webm`` VP9); default ``<log>.replay.mp4``.
        size: panel side in pixels.
        fps: frames per second (the summary is held for one second).
        video: False: verify only.
        agent: True: re-run the agent (refused without a run config); False: the environment only;
            None: re-run it when the run's config is found and the agent runs offline.
        config: the run's ``config.yaml`` (default: the one beside ``episodes/``); implies ``agent``.

    Raises:
        ReplayError: the log is unreadable, incomplete or foreign, does not belong to its run config,
            or does not replay (:class:`ReplayMismatch` names the first diverging step).
    """
    log_path = Path(log_path)
    out_path = Path(out) if out is not None else default_output(log_path)
    if video:
        try:
            video_format(out_path)
        except ValueError as err:
            raise ReplayError(str(err)) from None
    if size < 32 or fps < 1:
        raise ReplayError(f"size={size} must be >= 32 and fps={fps} >= 1")
    log = load_log(log_path)
    config_path, skipped = _agent_config(log, log_path, agent, config)
    check = None
    if config_path is not None:
        try:
            check = verify_agent(log, config_path)
        except RerunMismatch as err:
            raise ReplayMismatch(f"{log_path}: {err}", -1 if err.step is None else err.step) from None
        except RerunError as err:
            raise ReplayError(f"{log_path}: {err}") from None
    sim = simulate(log, log_path)
    result = ReplayResult(log_path, len(sim.steps), bool(sim.summary.success), sim.summary)
    result.agent_check, result.agent_skipped = check, skipped
    if video and sim.steps:
        try:
            scene = sim.scene.placed(log.record.plain())  # its place in the run's sequence, for the caption
            summary = dataclasses.asdict(sim.summary)
            result.frames = write_video(out_path, render_frames(scene, sim.steps, size, summary, fps), fps)
        except (OSError, RuntimeError, ValueError) as err:
            raise ReplayError(f"{out_path}: cannot write the video: {err}") from None
        result.video = out_path
    return result


def _agent_config(
    log: EpisodeLog, log_path: Path, agent: bool | None, config: str | Path | None
) -> tuple[Path | None, str | None]:
    """The run config to re-run the agent from, or None and why not."""
    if agent is False:
        return None, "not asked (--no-agent)"
    if config is not None:
        path = Path(config)
        if not path.is_file():
            raise ReplayError(f"{log_path}: no run config at {path}")
        return path, None
    found = find_config(log_path)
    if agent:
        if found is None:
            raise ReplayError(
                f"{log_path}: agent replay needs the run's config.yaml beside episodes/ "
                f"({log_path.parent.parent / 'config.yaml'} is not there); give --config FILE, or --no-agent"
            )
        return found, None
    if found is None:
        return None, "no config.yaml beside episodes/"
    name = log.record.agent
    if name in OFFLINE_ONLY:
        return None, f"agent {name} takes its actions from a server"
    return found, None


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point (``embodmem-replay``): 0 on success, 1 when the log is refused, 2 for a bad
    command line (a missing LOG or --config file included, as in embodmem-run and embodmem-report)."""
    parser = argparse.ArgumentParser(
        prog="embodmem-replay",
        description="Re-simulate a logged episode and re-run its agent, check both against the log, render its video.",
        epilog="Checks. Environment (always; a tenth of a second or so per log once imported): the logged actions are stepped through a fresh "
        "environment; every observation digest and every measure of the metrics record must match. Agent "
        "(default when the run's config.yaml is beside episodes/ and the agent runs offline): the agent is "
        "rebuilt from that config and the sequence re-run up to the logged episode (one episode per task "
        "up to it, plus loading the embedder); its actions, every retrieval (query; score, node, pose, task "
        "and step of each hit), the reports and the whole metrics record must match. Not recomputed in "
        "either: measured times (wall_time_s, memory_query_ms), video paths, and run_id when the config "
        "leaves it to the output directory's name.",
    )
    parser.add_argument("log", type=Path, help="episode log (episodes/*.json in a run directory)")
    parser.add_argument(
        "--out", type=Path, default=None, help="video file, .mp4 (H.264) or .webm (VP9); default: <log>.replay.mp4"
    )
    parser.add_argument("--size", type=int, default=256, help="panel side in pixels (>= 32; default 256)")
    parser.add_argument("--fps", type=int, default=10, help="frames per second (default 10)")
    parser.add_argument("--check", action="store_true", help="verify the replay only; write no video")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--agent",
        action="store_true",
        default=None,
        help="re-run the agent; refuse the log when its run config is missing or does not match",
    )
    mode.add_argument(
        "--no-agent",
        dest="agent",
        action="store_false",
        help="check the environment only (actions and retrievals are then covered by the digest, not recomputed)",
    )
    parser.add_argument(
        "--config", type=Path, default=None, help="the run's config.yaml, if not beside episodes/ (implies --agent)"
    )
    parser.add_argument(
        "--rerun",
        type=Path,
        default=None,
        metavar="OUT.rrd",
        help="log the episode into a Rerun recording instead (LOG may be a run directory: every episode, "
        "one timeline each); needs pip install 'embodmem[rerun]'",
    )
    parser.add_argument("--viewer", action="store_true", help="with --rerun: open the Rerun viewer on it")
    args = parser.parse_args(argv)
    if args.rerun is not None or args.viewer:
        from embodmem.rerun_replay import rerun_main

        return rerun_main(args.log, args.rerun, args.viewer, args.config)
    if args.size < 32:
        parser.error(f"--size={args.size} must be >= 32")
    if args.fps < 1:
        parser.error(f"--fps={args.fps} must be >= 1")
    if args.config is not None and args.agent is False:
        parser.error("--config re-runs the agent; it cannot go with --no-agent")
    for what, path in (("LOG", args.log), ("--config", args.config)):
        if path is not None and not path.is_file():  # a bad command line, as in embodmem-run and -report
            print(f"embodmem-replay: error: {what}: {str(path)!r}: no such file", file=sys.stderr)
            return 2
    try:
        result = replay(
            args.log, args.out, args.size, args.fps, video=not args.check, agent=args.agent, config=args.config
        )
    except ReplayError as err:
        print(f"embodmem-replay: error: {err}", file=sys.stderr)
        return 1
    if args.check:
        print(f"{args.log}: {result.steps} steps replay exactly (success={int(result.success)}); {_verified(result)}")
    else:
        print(result.video)
    return 0


def _verified(result: ReplayResult) -> str:
    """What the agent check covered, in words."""
    check = result.agent_check
    if check is None:
        return f"environment only ({result.agent_skipped}): actions and retrievals not recomputed"
    return (
        f"agent {check.agent}/{check.condition} re-run from {check.config} ({check.episodes} episodes): "
        f"{check.actions} actions, {check.retrievals} retrievals and the record match"
    )


if __name__ == "__main__":
    raise SystemExit(main())
