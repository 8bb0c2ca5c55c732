"""The episode recorder: the runner's hook that turns episodes into videos.

Each step keeps a small snapshot; at the end of the episode the recorder decides from the result
whether the episode is wanted and only then draws and encodes it. It reads the agent only through
the :class:`~embodmem.agents.base.Agent` interface: ``agent.trace`` (what it did and why, what it
recalled) and ``agent.memory`` (the topological map, when the memory is an ``AgentMemory``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cv2

from embodmem.agents.base import Agent, Retrieval
from embodmem.envs.ground_truth import GroundTruthEnv
from embodmem.memory import AgentMemory, TopologicalMap
from embodmem.metrics_record import episode_name
from embodmem.runner import EpisodeResult, StepEvent
from embodmem.video.encoding import CODECS, write_video
from embodmem.video.panels import render_frames
from embodmem.video.snapshots import MapSnapshot, Scene, StepRecord, retrievals_from_log

if TYPE_CHECKING:
    from embodmem.config import VideoConfig

log = logging.getLogger(__name__)

EPISODE_CHOICES = ("all", "failures", "first", "none")


def episode_video_name(record: Mapping[str, Any], fmt: str = "mp4") -> str:
    """File name carrying the episode and its result, e.g.
    ``seq=wreck_then_barrel-world=0-seed=0-task=1-agent=memory-cond=warm-success=1-spl=0.82.mp4``
    (the episode part is the episode log's name, so the two sort side by side)."""
    stem = episode_name(record)
    spl = record.get("spl")
    stem += f"-success={int(bool(record.get('success')))}" + ("" if spl is None else f"-spl={float(spl):.2f}")
    return stem + f".{fmt}"


@dataclass
class _Episode:
    scene: Scene
    steps: list[StepRecord] = field(default_factory=list)
    live: dict[int, tuple[str | None, list[Retrieval]]] = field(default_factory=dict)


class EpisodeRecorder:
    """Records episodes of a run as videos; the runner calls :meth:`bind`, :meth:`step` and :meth:`finish`.

    Each step keeps a small snapshot; :meth:`finish` decides from the result whether the episode is
    wanted (``episodes``: ``all``, ``failures``, ``first`` = the first episode of the run, ``none``)
    and only then renders and encodes it, so unwanted episodes cost no encoding.

    Args:
        video_cfg: the ``video`` config group (a :class:`embodmem.config.VideoConfig`, or the
            OmegaConf node built from it).
        out_dir: where the videos go (created on the first video).
        root: paths recorded in ``result.video`` are relative to it (default: the parent of
            ``out_dir``, i.e. the run directory for ``<run>/videos``).
    """

    def __init__(
        self, video_cfg: VideoConfig, out_dir: str | os.PathLike[str], root: str | os.PathLike[str] | None = None
    ):
        self.enabled = bool(video_cfg.enabled)
        self.episodes = str(video_cfg.episodes)
        self.fps = int(video_cfg.fps)
        self.size = int(video_cfg.size)
        self.format = str(video_cfg.format)
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
        self._env: GroundTruthEnv | None = None
        self._agent: Agent | None = None
        self._episode: _Episode | None = None
        self._last_graph: tuple[tuple[int, int, int | None], int, MapSnapshot] | None = None
        self._last_retrievals: list[Retrieval] | None = None

    def bind(self, env: GroundTruthEnv, agent: Agent) -> None:
        """Follow this environment and agent (called before each task sequence)."""
        self._env, self._agent = env, agent
        self._episode = None
        self._last_graph = None
        self._last_retrievals = None

    def _wanted_before_result(self) -> bool:
        if not self.enabled or self.episodes == "none":
            return False
        return not (self.episodes == "first" and self.episodes_seen > 0)

    def step(self, ctx: StepEvent) -> None:
        """Snapshot one step (the runner's event after ``env.step``)."""
        if not self._wanted_before_result() or self._env is None:
            return
        truth = ctx.truth
        ep = self._episode
        if ep is None or (ep.steps and truth.step <= ep.steps[-1].step):
            ep = self._episode = _Episode(Scene.from_truth(truth))
        agent: Agent | None = ctx.agent
        trace = None if agent is None else agent.trace
        graph, current = self._graph_of(agent)
        rec = StepRecord.capture(truth, ctx.obs, ctx.action, trace, graph, current)
        if trace is not None and trace.retrievals and trace.retrievals is not self._last_retrievals:
            self._last_retrievals = trace.retrievals
            ep.live[rec.step] = (trace.query, list(trace.retrievals))
        ep.steps.append(rec)

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
        ``result.video``. An encoding error is logged and stored as
        ``result.video_error`` instead of stopping the run.
        """
        ep, self._episode = self._episode, None
        wanted = self._wanted_before_result()
        self.episodes_seen += 1
        if ep is None or not ep.steps or not wanted:
            return None
        record = result.record.plain()
        if self.episodes == "failures" and bool(record.get("success")):
            return None
        # Retrievals: the agent's own (with thumbnails) where step() saw them, else the log's (poses
        # and scores only). step() sees them only if the runner calls on_step before it clears them.
        found = retrievals_from_log([e.to_log() for e in result.outcome.trace.retrievals])
        found.update(ep.live)
        for rec in ep.steps:
            if rec.step in found:
                rec.query, rec.retrievals = found[rec.step]
        path = self.out_dir / episode_video_name(record, self.format)
        try:
            n = write_video(
                path, render_frames(ep.scene.placed(record), ep.steps, self.size, record, self.fps), self.fps
            )
        except (OSError, RuntimeError, ValueError, cv2.error) as err:
            log.warning("video for %s not written: %s", path.name, err)
            result.video_error = str(err)
            return None
        self.frames_written += n
        self.paths.append(path)
        try:
            result.video = str(path.relative_to(self.root))
        except ValueError:
            result.video = str(path)
        return path
