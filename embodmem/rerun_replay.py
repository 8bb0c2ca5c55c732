"""Re-run logged episodes with their agent and capture, per step, what a Rerun recording shows.

An episode log holds actions, observation digests and retrieval metadata, not the frames, the sonar,
the agent's topological map or the retrieved thumbnails. Runs are deterministic, so this rebuilds the
agent from the run's ``config.yaml`` (as the agent replay of :mod:`embodmem.rerun` does, with the
same checks that the log belongs to that run) and re-runs each logged episode's sequence up to it,
capturing every step; the re-run must take the logged actions, or the log is refused.

Example:
    >>> from embodmem.rerun_replay import capture_run
    >>> episodes = capture_run(Path("outputs/2026-12-06/04-30-00"))  # doctest: +SKIP
    >>> [len(e.steps) for e in episodes]  # doctest: +SKIP
    [25, 25, 25, 25, 25, 25]
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
from omegaconf import DictConfig

from embodmem.envs.changes import ChangeEvent
from embodmem.envs.ground_truth import GroundTruth
from embodmem.episode_log import EpisodeLog, EpisodeLogError, read_log
from embodmem.rerun import OFFLINE_ONLY, RerunError, _claimed, _Episode, find_config, load_run_config, run_up_to
from embodmem.runner import EpisodeResult, ExperimentPlan, StepEvent
from embodmem.staleness import STALE_ACTIONS, _after_start
from embodmem.video.rerun_log import RerunEpisode, StaleVisit, change_text, write_recording
from embodmem.video.snapshots import MapSnapshot, Scene, StepRecord

CapturedEpisode = tuple[Scene, list[StepRecord], list[np.ndarray], list[int], list[StaleVisit]]
"""One re-run episode: its scene, step records, sonar ranges, actions and stale-target visits."""


class CaptureError(Exception):
    """Logs that cannot be re-run; one line naming the file and the reason."""


def log_paths(run: Path) -> list[Path]:
    """The episode logs ``run`` names: itself (a log) or every ``episodes/*.json`` of a run directory."""
    if run.is_file():
        return [run]
    logs = sorted((run / "episodes").glob("*.json"))
    if not logs:
        raise CaptureError(f"{run}: neither an episode log nor a run directory with episodes/*.json")
    return logs


class _Capture:
    """The runner's ``on_step``/``on_episode`` hooks: step records (with the agent's map and the
    memories it retrieved, thumbnails included), sonar ranges and, in a changing world, the steps at
    which the runner's staleness tracker counted a stale-target visit, episode by episode."""

    def __init__(self) -> None:
        self.episodes: list[CapturedEpisode] = []
        self.current: CapturedEpisode | None = None
        self._last_retrievals: object = None

    def step(self, event: StepEvent) -> None:
        from embodmem.memory import AgentMemory

        if self.current is None:
            self.current = (Scene.from_truth(event.truth), [], [], [], [])
        agent = event.agent
        trace = agent.trace
        memory = agent.memory
        graph, node = (MapSnapshot.of(memory.map), memory.map.prev) if isinstance(memory, AgentMemory) else (None, None)
        record = StepRecord.capture(event.truth, event.obs, event.action, trace, graph, node)
        if trace.retrievals and trace.retrievals is not self._last_retrievals:
            self._last_retrievals = trace.retrievals
            record.query, record.retrievals = trace.query, list(trace.retrievals)
        self.current[1].append(record)
        self.current[2].append(np.array(event.obs["sonar"], dtype=np.float32))
        self.current[3].append(int(event.action))
        visits = self.current[4]
        for number in range(len(visits) + 1, (event.stale_visits or 0) + 1):
            change = _stale_change(event.truth)
            what = "a change" if change is None else change_text(change)
            visits.append(StaleVisit(event.truth.step, number, event.truth.task.target, what))

    def episode(self, result: EpisodeResult) -> None:
        if self.current is None:  # an episode that ended before its first action
            raise CaptureError("an episode of the re-run took no step")
        self.episodes.append(self.current)
        self.current = None


def _stale_change(truth: GroundTruth) -> ChangeEvent | None:
    """The change that made the robot's place stale: of those :func:`embodmem.staleness.stale_zone`
    reads, the one whose former cells lie nearest the robot."""
    x, y = truth.agent_pos
    candidates = [
        e
        for e in truth.world_changes
        if e.kind == truth.task.target and e.action in STALE_ACTIONS and _after_start(e) and e.from_cells
    ]
    return min(candidates, key=lambda e: min((cx - x) ** 2 + (cy - y) ** 2 for cx, cy in e.from_cells), default=None)


def capture_run(run: Path, config: Path | None = None) -> list[RerunEpisode]:
    """Every episode log of ``run`` (a log or a run directory) re-run and captured, in log order.

    Raises:
        CaptureError: a log that is unreadable, not of its run's config, or that the re-run does not
            reproduce (the actions differ); one line naming it.
    """
    logs: list[tuple[Path, EpisodeLog]] = []
    for path in log_paths(run):
        try:
            logs.append((path, read_log(path)))
        except (EpisodeLogError, OSError, ValueError) as err:
            raise CaptureError(f"{path}: {err}") from None
    config_path = config or find_config(logs[0][0])
    if config_path is None:
        raise CaptureError(
            f"{logs[0][0]}: the Rerun replay re-runs the agent and needs the run's config.yaml beside episodes/"
        )
    try:
        cfg = load_run_config(config_path)
        claimed = [(_claimed(log, cfg, config_path), path, log) for path, log in logs]
    except RerunError as err:
        raise CaptureError(f"{config_path}: {err}") from None
    cfg.video.enabled = True  # the memory keeps thumbnails (what the recording shows of each hit); nothing else changes
    groups: dict[object, list[int]] = defaultdict(list)
    for i, ((episode, _), _, _) in enumerate(claimed):
        groups[(episode.sequence, episode.world_seed, episode.agent, episode.condition)].append(i)
    captured: dict[int, RerunEpisode] = {}
    for members in groups.values():
        last = max(members, key=lambda i: claimed[i][0][0].task_index)
        episodes = _rerun(cfg, *claimed[last][0])
        for i in members:
            (episode, _), path, log = claimed[i]
            scene, steps, sonar, actions, stale_visits = episodes[episode.task_index - 1]
            if actions != list(log.actions):
                raise CaptureError(
                    f"{path}: the re-run's actions differ from the log's (embodmem-replay {path} --check says where)"
                )
            name = path.stem
            captured[i] = RerunEpisode(name, scene.placed(log.record.plain()), steps, sonar, stale_visits)
    return [captured[i] for i in range(len(claimed))]


def _rerun(cfg: DictConfig, episode: _Episode, plan: ExperimentPlan) -> list[CapturedEpisode]:
    """The logged episode's sequence re-run up to it, captured (the agent replay's own set-up)."""
    if episode.agent in OFFLINE_ONLY:
        raise CaptureError(f"agent {episode.agent!r} takes its actions from a server: no Rerun replay")
    capture = _Capture()
    run_up_to(cfg, plan, episode, capture.episode, capture.step)
    return capture.episodes


def rerun_main(run: Path, out: Path | None, viewer: bool, config: Path | None) -> int:
    """``embodmem-replay RUN --rerun OUT.rrd [--viewer]``: 0 when written, 1 when refused, 2 for a bad
    command line (a missing extra included)."""
    import importlib.util
    import sys

    if importlib.util.find_spec("rerun") is None:
        print(
            "embodmem-replay: error: --rerun needs the 'rerun-sdk' package: pip install 'embodmem[rerun]'",
            file=sys.stderr,
        )
        return 2
    if out is not None and out.suffix != ".rrd":
        print(f"embodmem-replay: error: --rerun: {str(out)!r} is not allowed; allowed: a .rrd file", file=sys.stderr)
        return 2
    if not run.exists():
        print(f"embodmem-replay: error: LOG: {str(run)!r}: no such file or directory", file=sys.stderr)
        return 2
    try:
        episodes = capture_run(run, config)
    except CaptureError as err:
        print(f"embodmem-replay: error: {err}", file=sys.stderr)
        return 1
    write_recording(episodes, out, viewer)
    steps = sum(len(e.steps) for e in episodes)
    print(f"{out if out is not None else 'viewer'}: {len(episodes)} episode(s), {steps} steps")
    return 0
