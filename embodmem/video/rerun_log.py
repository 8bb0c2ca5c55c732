"""Episodes into a Rerun recording: one timeline per episode, scrubbed step by step.

What a video shows side by side, as separate entities a Rerun viewer lays out and scrubs together
(as LeRobot's dataset visualiser does): per step the first-person frame, the top-down map with the
robot's pose, trail and the target, the topological map as a graph, the sonar fan, the memories
retrieved (thumbnail, score, where and when each was stored), the running distance and path length,
and world changes and stale-target visits as events. Entity paths, under ``episodes/<episode name>/``:

* ``camera`` (Image), ``sonar`` (BarChart of ranges in metres),
* ``map/seabed`` (static Image, one pixel per cell), ``map/target`` (static Points2D),
  ``map/robot`` (Points2D), ``map/heading`` (Arrows2D), ``map/trail`` (LineStrips2D),
  ``map/recalled`` (Points2D where retrieved frames were taken),
* ``graph`` (GraphNodes and GraphEdges of the agent's topological map),
* ``memory/query`` (TextLog), ``memory/hit<i>/thumbnail`` (Image), ``memory/hit<i>/info`` (TextDocument),
* ``metrics/distance_m``, ``metrics/path_length_m`` (Scalars), ``events`` (TextLog: world changes; in a changing world, each
  entry into a stale place, where the goal stood before a change, as a WARN).

Example:
    >>> from embodmem.video.rerun_log import ENTITIES
    >>> ENTITIES[:3]
    ('camera', 'sonar', 'map/seabed')
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from embodmem.envs.changes import ChangeEvent
from embodmem.envs.objects import KIND_COLORS
from embodmem.retrieval import Retrieval
from embodmem.video.snapshots import Scene, StepRecord

ENTITIES: tuple[str, ...] = (
    "camera",
    "sonar",
    "map/seabed",
    "map/target",
    "map/robot",
    "map/heading",
    "map/trail",
    "map/recalled",
    "graph",
    "memory/query",
    "metrics/distance_m",
    "metrics/path_length_m",
    "events",
)
"""The entity paths under each episode's root (``memory/hit<i>/...`` come with retrievals)."""

HEADING_VECTORS = np.array([(1, 0), (0, 1), (-1, 0), (0, -1)], dtype=np.float32)
"""MiniGrid's headings 0..3 (east, south, west, north) as map vectors (y grows downwards)."""


@dataclass(frozen=True)
class StaleVisit:
    """The robot entering a stale place (:class:`embodmem.staleness.StalenessTracker` counts it)."""

    step: int
    """The step at which the visit shows (the first step of the episode for a robot that starts there)."""
    number: int
    """Which visit of the episode (from 1): the record's ``stale_target_visits`` is the last."""
    kind: str
    """The goal kind that stood here."""
    change: str
    """The change that took it away, in words (:func:`change_text`)."""

    def text(self) -> str:
        """The event's line.

        Example:
            >>> StaleVisit(7, 1, "barrel", "move of barrel 0 (task 2, step 0)").text()
            'stale-target visit 1: the barrel stood here before move of barrel 0 (task 2, step 0)'
        """
        return f"stale-target visit {self.number}: the {self.kind} stood here before {self.change}"


def change_text(change: ChangeEvent) -> str:
    """A world change in words, for the event log."""
    return f"{change.action} of {change.kind} {change.instance} (task {change.task}, step {change.step})"


@dataclass
class RerunEpisode:
    """What one episode puts into the recording (:func:`embodmem.rerun_replay.capture_run` makes it)."""

    name: str
    """The episode's name (its log's stem): its timeline and entity root."""
    scene: Scene
    steps: list[StepRecord]
    sonar: list[np.ndarray] = field(default_factory=list)
    """Sonar ranges (m) at each step, aligned with ``steps``."""
    stale_visits: list[StaleVisit] = field(default_factory=list)
    """Entries into stale places (changing worlds only), in step order."""


def timeline_name(episode: RerunEpisode) -> str:
    """The episode's timeline: ``step`` of that episode, named after it so episodes never interleave."""
    return f"step:{episode.name}"


def _hit_text(hit: Retrieval) -> str:
    x, y, heading = hit.pose
    node = "none" if hit.node is None else str(hit.node)
    return (
        f"score {hit.score:.3f}\n\nstored at cell ({x:.0f}, {y:.0f}), heading {heading}, node {node}\n\n"
        f"during task {hit.task!r}, step {hit.step}"
    )


def log_episode(episode: RerunEpisode, recording: object) -> int:
    """Log one episode into ``recording`` (a ``rerun.RecordingStream``); returns the steps logged."""
    import rerun as rr

    rec = recording
    assert isinstance(rec, rr.RecordingStream)
    root = f"episodes/{rr.escape_entity_path_part(episode.name)}"
    timeline = timeline_name(episode)
    rec.reset_time()  # the previous episode's step must not stamp this one's rows
    scene = episode.scene
    target = np.argwhere(scene.target_mask)[:, ::-1].astype(np.float32) + 0.5  # (row, col) -> (x, y) centres
    rec.log(f"{root}/map/seabed", rr.Image(KIND_COLORS[scene.kinds].astype(np.uint8)), static=True)
    rec.log(f"{root}/map/target", rr.Points2D(target, colors=(60, 255, 120), radii=0.5), static=True)
    rec.log(f"{root}/mission", rr.TextDocument(f"{scene.mission} (world {scene.world_seed})"), static=True)
    trail: list[tuple[float, float]] = [(scene.start_pose[0] + 0.5, scene.start_pose[1] + 0.5)]
    changes_seen = 0
    hits_shown = 0
    stale_at: dict[int, list[StaleVisit]] = {}
    for visit in episode.stale_visits:
        stale_at.setdefault(visit.step, []).append(visit)
    for i, step in enumerate(episode.steps):
        rec.set_time(timeline, sequence=step.step)
        centre = (step.pos[0] + 0.5, step.pos[1] + 0.5)
        trail.append(centre)
        rec.log(f"{root}/camera", rr.Image(step.image))
        rec.log(f"{root}/map/robot", rr.Points2D([centre], colors=(255, 40, 40), radii=0.6))
        rec.log(f"{root}/map/heading", rr.Arrows2D(origins=[centre], vectors=[HEADING_VECTORS[step.heading] * 1.5]))
        rec.log(f"{root}/map/trail", rr.LineStrips2D([trail], colors=(255, 255, 255)))
        rec.log(f"{root}/metrics/distance_m", rr.Scalars(step.distance_m))
        rec.log(f"{root}/metrics/path_length_m", rr.Scalars(step.path_length_m))
        if i < len(episode.sonar):
            rec.log(f"{root}/sonar", rr.BarChart(np.asarray(episode.sonar[i], dtype=np.float32)))
        if step.graph is not None and len(step.graph.positions):
            ids = [str(n) for n in range(len(step.graph.positions))]
            colors = [(255, 40, 40) if n == step.current_node else (255, 210, 0) for n in range(len(ids))]
            rec.log(
                f"{root}/graph",
                rr.GraphNodes(ids, positions=step.graph.positions + 0.5, colors=colors, labels=ids),
                rr.GraphEdges([(str(u), str(v)) for u, v in step.graph.edges], graph_type="undirected"),
            )
        if step.retrievals is not None:
            hits_shown = _log_retrievals(rec, root, step.query, step.retrievals, hits_shown)
        for change in step.changes[changes_seen:]:
            rec.log(f"{root}/events", rr.TextLog(f"world change: {change}", level="INFO"))
        changes_seen = len(step.changes)
        for visit in stale_at.get(step.step, ()):
            rec.log(f"{root}/events", rr.TextLog(visit.text(), level="WARN"))
    return len(episode.steps)


def _log_retrievals(rec: object, root: str, query: str | None, hits: Sequence[Retrieval], shown_before: int) -> int:
    """The memories retrieved at this step: the query, each hit's thumbnail and text, their poses."""
    import rerun as rr

    assert isinstance(rec, rr.RecordingStream)
    rec.log(f"{root}/memory/query", rr.TextLog(query or "(no query text)", level="INFO"))
    poses = [(h.pose[0] + 0.5, h.pose[1] + 0.5) for h in hits]
    labels = [f"{h.score:.2f}" for h in hits]
    rec.log(f"{root}/map/recalled", rr.Points2D(poses, colors=(255, 0, 255), radii=0.5, labels=labels))
    for k, hit in enumerate(hits):
        rec.log(f"{root}/memory/hit{k}/info", rr.TextDocument(_hit_text(hit), media_type="text/markdown"))
        if hit.thumbnail is not None:
            rec.log(f"{root}/memory/hit{k}/thumbnail", rr.Image(np.asarray(hit.thumbnail, dtype=np.uint8)))
    for k in range(len(hits), shown_before):  # fewer hits than last time: clear the rest
        rec.log(f"{root}/memory/hit{k}", rr.Clear(recursive=True))
    return len(hits)


def write_recording(episodes: Sequence[RerunEpisode], out: Path | None, viewer: bool = False) -> Path | None:
    """Log ``episodes`` into one recording: saved at ``out`` (``.rrd``, written whole or not at all)
    and opened in the Rerun viewer with ``viewer`` (streamed to a spawned viewer when there is no ``out``)."""
    import rerun as rr

    rec = rr.RecordingStream("embodmem_replay")
    partial = None if out is None else out.with_name(f".{out.name}.partial")
    if partial is not None:
        partial.parent.mkdir(parents=True, exist_ok=True)
        rec.save(str(partial))
    elif viewer:
        rec.spawn()
    for episode in episodes:
        log_episode(episode, rec)
    rec.flush()
    rec.disconnect()
    if out is not None and partial is not None:
        os.replace(partial, out)
        if viewer:
            subprocess.Popen([sys.executable, "-m", "rerun", str(out)])  # the viewer outlives this command
    return out
