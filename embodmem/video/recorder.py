"""The episode recorder: the runner's hook that turns episodes into videos.

Each step keeps a small snapshot. When the episode is wanted whatever its result (``episodes``
``all``, or ``first`` for the run's first episode), its frames are drawn and encoded live, step by
step, while the agent runs (on a second core, the encoder thread overlaps the run); the end of the
episode only adds the summary and writes the file. With ``failures``, the recorder waits for the
result and only then draws and encodes the episode. It reads the agent only through the
:class:`~embodmem.agents.base.Agent` interface: ``agent.trace`` (what it did and why, what it
recalled) and ``agent.memory`` (the topological map, when the memory is an ``AgentMemory``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cv2

from embodmem.agents.base import Agent, Retrieval
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.memory import AgentMemory, TopologicalMap
from embodmem.runner import EpisodeResult
from embodmem.video.encoding import CODECS, VideoEncoder, write_video
from embodmem.video.panels import FrameRenderer, render_frames, summary_frames
from embodmem.video.snapshots import MapSnapshot, Scene, StepRecord, retrievals_from_log

if TYPE_CHECKING:
    from embodmem.config import VideoConfig

log = logging.getLogger(__name__)

EPISODE_CHOICES = ("all", "failures", "first", "none")


def episode_video_name(record: Mapping[str, Any], fmt: str = "mp4") -> str:
    """File name carrying the episode and its result, e.g.
    ``seq=wreck_then_barrel-world=0-seed=0-task=1-agent=memory-cond=warm-success=1-spl=0.82.mp4``
    (the episode part is the episode log's name, so the two sort side by side)."""
    parts = [
        ("seq", record.get("sequence")),
        ("world", record.get("world_seed")),
        ("seed", record.get("seed")),
        ("task", record.get("task_index")),
        ("agent", record.get("agent")),
        ("cond", record.get("condition")),
    ]
    stem = "-".join(f"{k}={v}" for k, v in parts if v is not None) or "episode"
    spl = record.get("spl")
    stem += f"-success={int(bool(record.get('success')))}" + ("" if spl is None else f"-spl={float(spl):.2f}")
    return re.sub(r"[^A-Za-z0-9_.=+,-]", "_", stem) + f".{fmt}"


@dataclass
class _LiveVideo:
    """An episode's video drawn step by step while it runs (each frame as the step is recorded)
    and encoded on the encoder's thread; the caption's place in the sequence is the env's task
    index, checked against the record at the end."""

    renderer: FrameRenderer
    encoder: VideoEncoder
    error: Exception | None = None
    """What stopped it (drawing or encoding), reported when the episode ends."""

    def add(self, rec: StepRecord) -> None:
        if self.error is not None:
            return
        try:
            self.encoder.add(self.renderer.frame(rec))
        except (RuntimeError, ValueError, cv2.error) as err:
            self.error = err
            self.encoder.close()


@dataclass
class _Episode:
    scene: Scene
    steps: list[StepRecord] = field(default_factory=list)
    live: dict[int, tuple[str | None, list[Retrieval]]] = field(default_factory=dict)
    video: _LiveVideo | None = None


class EpisodeRecorder:
    """Records episodes of a run as videos; the runner calls :meth:`bind`, :meth:`step` and :meth:`finish`.

    Each step keeps a small snapshot. Which episodes (``episodes``): ``all``, ``failures``,
    ``first`` = the first episode of the run, ``none``. An episode wanted whatever its result is
    drawn and encoded live; with ``failures``, :meth:`finish` decides from the result and only then
    renders and encodes it, so unwanted episodes cost no encoding. Either way the video is complete
    on disk when :meth:`finish` returns.

    Args:
        video_cfg: the ``video`` config group (a :class:`embodmem.config.VideoConfig`, or the
            OmegaConf node built from it).
        out_dir: where the videos go (created on the first video).
        root: paths recorded in ``result.record["video"]`` are relative to it (default: the parent of
            ``out_dir``, i.e. the run directory for ``<run>/videos``).
    """

    def __init__(
        self, video_cfg: VideoConfig, out_dir: str | os.PathLike[str], root: str | os.PathLike[str] | None = None
    ):
        self.enabled = bool(video_cfg.enabled)
        self.episodes = str(_value(video_cfg.episodes))
        self.fps = int(video_cfg.fps)
        self.size = int(video_cfg.size)
        self.format = str(_value(video_cfg.format))
        if self.episodes not in EPISODE_CHOICES:
            raise ValueError(f"video.episodes={self.episodes!r}: allowed: {', '.join(EPISODE_CHOICES)}")
        if self.format not in CODECS:
            raise ValueError(f"video.format={self.format!r}: allowed: {', '.join(CODECS)}")
        if self.fps < 1 or self.size < 32:
            raise ValueError(f"video.fps={self.fps} must be >= 1 and video.size={self.size} >= 32")
        self.out_dir = Path(out_dir)
        self.root = Path(root) if root is not None else self.out_dir.parent
        self.paths: list[Path] = []
        """Videos written so far."""
        self.frames_written = 0
        self.episodes_seen = 0
        self._env: UnderwaterEnv | None = None
        self._agent: Agent | None = None
        self._episode: _Episode | None = None
        self._last_graph: tuple[tuple[int, int, int | None], int, MapSnapshot] | None = None
        self._last_retrievals: list[Retrieval] | None = None

    def bind(self, env: UnderwaterEnv, agent: Agent) -> None:
        """Follow this environment and agent (called before each task sequence)."""
        self._env, self._agent = env, agent
        self._drop_episode()
        self._last_graph = None
        self._last_retrievals = None

    def _wanted_before_result(self) -> bool:
        if not self.enabled or self.episodes == "none":
            return False
        return not (self.episodes == "first" and self.episodes_seen > 0)

    def step(self, ctx: Mapping[str, Any]) -> None:
        """Snapshot one step; ``ctx`` holds ``obs``, ``info``, ``action`` and ``agent`` after ``env.step``."""
        if not self._wanted_before_result() or self._env is None:
            return
        info = ctx["info"]
        ep = self._episode
        if ep is None or (ep.steps and int(info.get("step", 0)) <= ep.steps[-1].step):
            ep = self._start_episode(self._env)
        agent: Agent | None = ctx.get("agent", self._agent)
        trace = None if agent is None else agent.trace
        graph, current = self._graph_of(agent)
        rec = StepRecord.capture(self._env, ctx["obs"], info, ctx["action"], trace, graph, current)
        if trace is not None and trace.retrievals and trace.retrievals is not self._last_retrievals:
            self._last_retrievals = trace.retrievals
            rec.query, rec.retrievals = trace.query, list(trace.retrievals)
            ep.live[rec.step] = (rec.query, rec.retrievals)
        ep.steps.append(rec)
        if ep.video is not None:
            ep.video.add(rec)

    def _start_episode(self, env: UnderwaterEnv) -> _Episode:
        """A new episode; drawn live unless only its result can tell whether it is wanted."""
        self._drop_episode()
        ep = self._episode = _Episode(Scene.from_env(env))
        if self.episodes != "failures":
            guess = dataclasses.replace(ep.scene, position=env.task_index + 1, sequence_length=len(env.tasks))
            ep.video = _LiveVideo(FrameRenderer(guess, self.size), VideoEncoder(self.format, self.fps))
        return ep

    def _drop_episode(self) -> None:
        """Forget an episode that never finished (its run aborted), stopping its encoder."""
        if self._episode is not None and self._episode.video is not None:
            self._episode.video.encoder.close()
        self._episode = None

    def _graph_of(self, agent: Agent | None) -> tuple[MapSnapshot | None, int | None]:
        """The agent's topological map (a snapshot) and the node it is at, if its memory has one."""
        memory = None if agent is None else agent.memory
        if not isinstance(memory, AgentMemory):
            return None, None
        topo: TopologicalMap = memory.map
        # Edges appear only when the agent moves between nodes, so the map can have changed only if
        # its node count or the node last visited did; only then pay for counting edges (O(nodes)).
        moved = (id(topo), len(topo), topo.prev)
        last = self._last_graph
        if last is None or last[0] != moved:
            edges = topo.graph.number_of_edges()
            snap = (
                last[2] if last is not None and last[0][:2] == moved[:2] and last[1] == edges else MapSnapshot.of(topo)
            )
            self._last_graph = last = (moved, edges, snap)
        return last[2], topo.prev

    def finish(self, result: EpisodeResult) -> Path | None:
        """End the episode: write its video if it is wanted, return its path (else None).

        The path, relative to ``root``, also goes into
        ``result.record["video"]``. An encoding error is logged and stored as
        ``result.record["video_error"]`` instead of stopping the run.
        """
        ep = self._episode
        wanted = self._wanted_before_result()
        self.episodes_seen += 1
        try:
            if ep is None or not ep.steps or not wanted:
                return None
            return self._write(ep, result)
        finally:
            self._drop_episode()

    def _write(self, ep: _Episode, result: EpisodeResult) -> Path | None:
        record = result.record
        if self.episodes == "failures" and bool(record.get("success")):
            return None
        # Retrievals: the agent's own (with thumbnails) where step() saw them, else the log's (poses
        # and scores only). step() sees them only if the runner calls on_step before it clears them.
        logged = retrievals_from_log(result.log.get("retrievals", []))
        scene = ep.scene.placed(record)
        live = ep.video
        if live is not None and (
            not set(logged) <= set(ep.live)
            or (live.renderer.scene.position, live.renderer.scene.sequence_length)
            != (scene.position, scene.sequence_length)
        ):  # the live frames miss a logged recall or show another place in the sequence: draw again
            live.encoder.close()
            live = None
        path = self.out_dir / episode_video_name(record, self.format)
        try:
            if live is not None:
                if live.error is not None:
                    raise live.error
                assert live.renderer.last is not None
                for frame in summary_frames(live.renderer.last, record, self.fps):
                    live.encoder.add(frame)
                n = live.encoder.save(path)
            else:
                found = {**logged, **ep.live}
                for rec in ep.steps:
                    if rec.step in found:
                        rec.query, rec.retrievals = found[rec.step]
                n = write_video(path, render_frames(scene, ep.steps, self.size, record, self.fps), self.fps)
        except (OSError, RuntimeError, ValueError, cv2.error) as err:
            log.warning("video for %s not written: %s", path.name, err)
            record["video_error"] = str(err)
            return None
        self.frames_written += n
        self.paths.append(path)
        try:
            record["video"] = str(path.relative_to(self.root))
        except ValueError:
            record["video"] = str(path)
        return path


def _value(v: Any) -> Any:
    """An Enum's value (OmegaConf gives Enums for the choice fields), else ``v``."""
    return v.value if isinstance(v, Enum) else v
