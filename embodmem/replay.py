"""Exact replay of a logged episode: re-simulate it, prove it matches, and render its video.

    embodmem-replay outputs/.../episodes/seq=wreck_then_barrel-...-cond=warm.json
    embodmem-replay LOG --out episode.mp4 --size 320 --fps 15
    embodmem-replay LOG --check            # verify only, no video

An episode log (written by :class:`embodmem.runner.RunWriter`) holds the world seed and its digest,
the task, the episode seed, the start pose, every action, a digest of every observation and what
the agent retrieved from memory. The environment is deterministic given those, so stepping a fresh
one through the logged actions must reproduce every observation bit for bit; the digests prove it.
A log that is corrupted, truncated, foreign, or that no longer replays (the environment code or its
settings changed) is refused with a message that names the file and what is wrong.

Example:
    >>> from embodmem.replay import replay
    >>> result = replay("episode.json", out="episode.mp4")  # doctest: +SKIP
    >>> result.steps, result.video  # doctest: +SKIP
    (57, PosixPath('episode.mp4'))
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embodmem.metrics import EpisodeMeasures
from embodmem.runner import LOG_FORMAT, observation_digest
from embodmem.video import Scene, StepRecord, render_frames, retrievals_from_log, video_format, write_video
from embodmem.envs.spec import ACTION_NAMES
from embodmem.envs.underwater import UnderwaterEnv

REQUIRED_KEYS: dict[str, type | tuple[type, ...]] = {
    "world_seed": int,
    "world_digest": str,
    "task": str,
    "episode_seed": int,
    "start_pose": list,
    "actions": list,
    "obs_digests": list,
    "retrievals": list,
    "env": dict,
}
"""Keys a replayable log must have (besides ``format``), with their JSON types."""
_NOT_ENV_KWARGS = ("task", "tasks", "world_seed", "render_mode")
"""Keys the replay sets itself, ignored if a log's ``env`` carries them."""


class ReplayError(Exception):
    """A log that cannot be replayed; the message names the file and the reason."""


class ReplayMismatch(ReplayError):
    """The re-simulated episode differs from the logged one.

    Attributes:
        step: the first step whose observation differs (0 = the observation after ``reset``).
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
    summary: dict[str, Any]
    """The episode's measures recomputed from the re-simulation (success, SPL, steps, path ...)."""
    video: Path | None = None
    frames: int = 0
    """Frames in the video (steps plus the held summary frame)."""


@dataclass
class Simulation:
    """A verified re-simulation: everything needed to render the episode."""

    scene: Scene
    steps: list[StepRecord]
    summary: dict[str, Any]


def load_log(path: str | Path) -> dict[str, Any]:
    """Read and check an episode log; raise :class:`ReplayError` naming what is wrong.

    Checks: readable JSON object, the ``format`` tag, the required keys and their types, actions
    in range, and one observation digest per action plus one for the reset.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReplayError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ReplayError(f"{path}: cannot read the log ({err})") from None
    if not text.strip():
        raise ReplayError(f"{path}: the file is empty (truncated log?)")
    try:
        log = json.loads(text)
    except json.JSONDecodeError as err:
        raise ReplayError(
            f"{path}: not valid JSON ({err.msg} at line {err.lineno} column {err.colno}); the log is corrupted or truncated"
        ) from None
    if not isinstance(log, dict):
        raise ReplayError(f"{path}: not an episode log (the JSON is a {type(log).__name__}, not an object)")
    if "format" not in log:
        raise ReplayError(f"{path}: not an embodmem episode log (no 'format' key; expected {LOG_FORMAT!r})")
    if log["format"] != LOG_FORMAT:
        raise ReplayError(
            f"{path}: log format {log['format']!r} is not {LOG_FORMAT!r} (a foreign file, or one written by another version)"
        )
    missing = [k for k in REQUIRED_KEYS if k not in log]
    if missing:
        raise ReplayError(f"{path}: incomplete episode log, missing {', '.join(missing)}")
    for key, kind in REQUIRED_KEYS.items():
        if not isinstance(log[key], kind) or isinstance(log[key], bool):
            raise ReplayError(f"{path}: '{key}' must be a JSON {_json_type(kind)}, got {type(log[key]).__name__}")
    actions = log["actions"]
    bad = next((i for i, a in enumerate(actions) if not (isinstance(a, int) and not isinstance(a, bool) and a in ACTION_NAMES)), None)
    if bad is not None:
        raise ReplayError(f"{path}: action {bad} is {actions[bad]!r}, not one of {sorted(ACTION_NAMES)}")
    digests = log["obs_digests"]
    if len(digests) != len(actions) + 1:
        raise ReplayError(
            f"{path}: {len(digests)} observation digests for {len(actions)} actions (expected {len(actions) + 1}); "
            "the log is truncated or inconsistent"
        )
    if not all(isinstance(d, str) for d in digests):
        raise ReplayError(f"{path}: 'obs_digests' must hold strings")
    pose = log["start_pose"]
    if len(pose) != 3 or not all(isinstance(v, int) for v in pose):
        raise ReplayError(f"{path}: 'start_pose' must be [x, y, heading] integers, got {pose!r}")
    for i, r in enumerate(log["retrievals"]):
        if not (isinstance(r, dict) and isinstance(r.get("step"), int) and isinstance(r.get("hits"), list)):
            raise ReplayError(f"{path}: retrieval entry {i} is malformed (needs 'step' and 'hits')")
        if any(not (isinstance(h, list) and len(h) == 5 and len(h[2]) == 3) for h in r["hits"]):
            raise ReplayError(f"{path}: retrieval entry {i} has a hit that is not [score, node, [x, y, heading], task, step]")
    return log


def _json_type(kind: type | tuple[type, ...]) -> str:
    return {int: "integer", str: "string", list: "array", dict: "object"}.get(kind, str(kind))  # type: ignore[call-overload]


def make_env(log: Mapping[str, Any], path: str | Path = "<log>") -> UnderwaterEnv:
    """The environment the log was recorded in: its constructor settings, its world, its task."""
    kwargs = {k: v for k, v in log["env"].items() if k not in _NOT_ENV_KWARGS}
    if "extra_views" in kwargs:
        kwargs["extra_views"] = tuple(kwargs["extra_views"])
    try:
        env = UnderwaterEnv(tasks=(log["task"],), world_seed=int(log["world_seed"]), **kwargs)
    except (TypeError, ValueError, KeyError) as err:
        raise ReplayError(f"{path}: cannot build the environment from the log's settings: {err}") from None
    digest = env.world.digest()  # type: ignore[union-attr]
    if digest != log["world_digest"]:
        raise ReplayError(
            f"{path}: world digest mismatch for world_seed={log['world_seed']}: the log has {log['world_digest']}, "
            f"this code builds {digest} (the world generator or the env settings changed)"
        )
    return env


def simulate(log: Mapping[str, Any], path: str | Path = "<log>") -> Simulation:
    """Re-run the logged actions in a fresh environment, checking every observation digest.

    Raises:
        ReplayMismatch: at the first observation whose digest differs from the log's.
        ReplayError: when the environment cannot be rebuilt, the start is invalid, or the episode
            ends before (or continues after) the logged actions.
    """
    env = make_env(log, path)
    digests: Sequence[str] = log["obs_digests"]
    actions: Sequence[int] = log["actions"]
    obs, info = _reset(env, log, path)
    scene = Scene.from_env(env)
    measures = EpisodeMeasures()
    measures.reset(info)
    found = retrievals_from_log(log["retrievals"])
    steps: list[StepRecord] = []
    done = False
    for i, action in enumerate(actions, start=1):
        if done:
            raise ReplayError(f"{path}: the episode ended at step {i - 1} but the log holds {len(actions)} actions")
        obs, _, terminated, truncated, info = env.step(action)
        _check_digest(path, i, action, observation_digest(obs), digests[i])
        measures.update(action, info)
        rec = StepRecord.capture(env, obs, info, action)
        if i in found:
            rec.query, rec.retrievals = found[i]
        steps.append(rec)
        done = terminated or truncated
    if not done:
        raise ReplayError(f"{path}: the log ends after {len(actions)} actions but the episode had not ended (truncated log?)")
    return Simulation(scene, steps, measures.get())


def _reset(env: UnderwaterEnv, log: Mapping[str, Any], path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Reset as the recording did and check the first observation.

    The log keeps the start pose, not how it was chosen. An explicit ``start_pose`` reproduces fixed
    and continued starts, but a ``random`` start drew the pose from the episode's RNG before the fish
    and particles, so for it the same seed with ``start="random"`` is what reproduces the episode.
    Each candidate must give the logged pose and the logged first digest.
    """
    seed, task, pose = int(log["episode_seed"]), log["task"], [int(v) for v in log["start_pose"]]
    first: tuple[str, dict[str, Any], dict[str, Any]] | None = None
    for options in ({"task": task, "start_pose": pose}, {"task": task, "start": "random"}):
        try:
            obs, info = env.reset(seed=seed, options=options)
        except ValueError as err:
            if first is None:
                raise ReplayError(f"{path}: cannot reset to the logged start {pose}: {err}") from None
            continue
        got = observation_digest(obs)
        if list(env.start_pose) == pose and got == log["obs_digests"][0]:
            return obs, info
        if first is None:
            first = (got, obs, info)
    assert first is not None
    _check_digest(path, 0, None, first[0], log["obs_digests"][0])
    raise AssertionError("unreachable")  # the digests differ, or a start pose matched neither way


def _check_digest(path: str | Path, step: int, action: int | None, got: str, expected: str) -> None:
    if got != expected:
        what = "the observation after reset" if action is None else f"the observation after action {ACTION_NAMES[action]}"
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
) -> ReplayResult:
    """Replay an episode log exactly and render its video.

    Args:
        log_path: an episode log written by :class:`embodmem.runner.RunWriter`.
        out: video file (``.mp4`` H.264 or ``.webm`` VP9); default ``<log>.replay.mp4``.
        size: panel side in pixels.
        fps: frames per second (the summary is held for one second).
        video: False: verify only.

    Raises:
        ReplayError: the log is unreadable, incomplete or foreign, or it does not replay
            (:class:`ReplayMismatch` names the first diverging step).
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
    sim = simulate(log, log_path)
    result = ReplayResult(log_path, len(sim.steps), bool(sim.summary.get("success")), sim.summary)
    if video and sim.steps:
        try:
            scene = sim.scene.placed(log.get("record", log))  # its place in the run's sequence, for the caption
            result.frames = write_video(out_path, render_frames(scene, sim.steps, size, sim.summary, fps), fps)
        except (OSError, RuntimeError, ValueError) as err:
            raise ReplayError(f"{out_path}: cannot write the video: {err}") from None
        result.video = out_path
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point (``embodmem-replay``): 0 on success, 1 when the log is refused."""
    parser = argparse.ArgumentParser(
        prog="embodmem-replay",
        description="Re-simulate a logged episode, check every observation against the log, render its video.",
    )
    parser.add_argument("log", type=Path, help="episode log (episodes/*.json in a run directory)")
    parser.add_argument("--out", type=Path, default=None, help="video file, .mp4 (H.264) or .webm (VP9); default: <log>.replay.mp4")
    parser.add_argument("--size", type=int, default=256, help="panel side in pixels (>= 32; default 256)")
    parser.add_argument("--fps", type=int, default=10, help="frames per second (default 10)")
    parser.add_argument("--check", action="store_true", help="verify the replay only; write no video")
    args = parser.parse_args(argv)
    if args.size < 32:
        parser.error(f"--size={args.size} must be >= 32")
    if args.fps < 1:
        parser.error(f"--fps={args.fps} must be >= 1")
    try:
        result = replay(args.log, args.out, args.size, args.fps, video=not args.check)
    except ReplayError as err:
        print(f"embodmem-replay: error: {err}", file=sys.stderr)
        return 1
    if args.check:
        print(f"{args.log}: {result.steps} steps replay exactly (success={int(result.success)})")
    else:
        print(result.video)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
