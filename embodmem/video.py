"""Episode videos: what the agent saw, where it went, what it remembered, frame by frame.

A frame is composed with OpenCV from panels, in the style of Habitat's ``observations_to_image`` /
``overlay_frame``::

    +-------------------+-------------------+-------------------+
    | first-person      | top-down map:     | memory: the top   |
    | camera, enlarged  | trajectory, graph,| retrieved frames  |
    | (nearest)         | targets, start    | and their scores  |
    +-------------------+-------------------+-------------------+
    | mission / step / action / distance / path / collisions ... |
    +-----------------------------------------------------------+

Rendering happens after the episode, from small per-step snapshots (:class:`StepRecord`), so that
one code path serves the live recorder (:class:`EpisodeRecorder`, driven by the runner) and the
replay tool (:mod:`embodmem.replay`, driven by a log), and so that ``episodes=failures`` costs no
encoding for the episodes that succeed.

Encoding cost: OpenCV offers no speed setting for libvpx, and VP9 (the .webm default) encodes about
8-16 frames/s at the default 768x336 on this 2-core machine, against about 480 for mp4v (.mp4);
use ``video.format=mp4`` or ``video.episodes=failures`` for long sweeps.

Example:
    >>> from embodmem.envs.underwater import UnderwaterEnv
    >>> env = UnderwaterEnv(task="barrel", size=24, max_steps=5)
    >>> obs, info = env.reset(seed=0)
    >>> scene = Scene.from_env(env)
    >>> steps = []
    >>> for a in (2, 2, 1):
    ...     obs, _, term, trunc, info = env.step(a)
    ...     steps.append(StepRecord.capture(env, obs, info, a))
    >>> frames = list(render_frames(scene, steps, size=64, summary={"success": 0}, hold_frames=2))
    >>> len(frames), frames[0].shape
    (5, (124, 192, 3))
"""

from __future__ import annotations

import logging
import math
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from embodmem.agents.base import Retrieval
from embodmem.envs.objects import KIND_COLORS
from embodmem.envs.spec import ACTION_NAMES, DIR_TO_VEC
from embodmem.envs.underwater import robot_triangle

log = logging.getLogger(__name__)

FOURCC: dict[str, str] = {"webm": "VP90", "mp4": "mp4v"}
"""Container -> OpenCV fourcc. OpenCV here cannot encode H.264 (docs/design.md, "Known traps")."""
EPISODE_CHOICES = ("all", "failures", "first", "none")
MEMORY_TILES = 4
"""Retrieved frames shown in the memory panel (a 2 x 2 grid, best first)."""
RETRIEVAL_HOLD_STEPS = 30
"""Steps a retrieval stays on screen after the query, so a viewer can read it."""

# Colours (RGB).
_WHITE = (255, 255, 255)
_GREY = (150, 150, 150)
_TARGET = (60, 255, 120)
_START = (255, 255, 0)
_AGENT = (255, 40, 40)
_FISH = (140, 220, 210)
_NODE = (255, 210, 0)
_EDGE = (230, 230, 230)
_RETRIEVED = (255, 0, 255)
_GOAL = (255, 140, 0)
_PANEL_BG = (18, 22, 30)
_FONT = cv2.FONT_HERSHEY_SIMPLEX


# --------------------------------------------------------------------------- snapshots


@dataclass(frozen=True)
class MapSnapshot:
    """The topological map at one moment: node anchor poses and edges (shared while unchanged)."""

    positions: np.ndarray
    """(n, 2) float node poses (x, y) in cells."""
    edges: np.ndarray
    """(m, 2) int node pairs."""

    @classmethod
    def of(cls, topo_map: Any) -> MapSnapshot:
        """Copy what drawing needs from an ``embodmem.memory.TopologicalMap``."""
        edges = np.asarray(list(topo_map.graph.edges()), dtype=np.int64).reshape(-1, 2)
        return cls(np.array(topo_map.positions, dtype=np.float64), edges)


@dataclass
class StepRecord:
    """What one step contributes to a video: the camera frame, the pose, the running measures and
    the agent's trace. Small (about 12 kB at 64 px), so a whole episode can wait for its verdict."""

    step: int
    image: np.ndarray
    action: int | None
    pos: tuple[int, int]
    heading: int
    distance_m: float
    path_length_m: float
    collisions: int
    target_in_view: bool
    fish: np.ndarray | None = None
    mode: str = ""
    goal_cell: tuple[int, int] | None = None
    p_target: float | None = None
    query: str | None = None
    retrievals: list[Retrieval] | None = None
    """Memory hits the agent looked at *at this step* (None: no query this step)."""
    graph: MapSnapshot | None = None
    current_node: int | None = None

    @classmethod
    def capture(
        cls,
        env: Any,
        obs: Mapping[str, Any],
        info: Mapping[str, Any],
        action: int | None,
        trace: Any = None,
        graph: MapSnapshot | None = None,
        current_node: int | None = None,
    ) -> StepRecord:
        """Snapshot the state after ``env.step(action)`` (``trace``: an ``embodmem.agents.base.AgentTrace``)."""
        fish = getattr(env, "fish", None)
        p = None if trace is None else trace.extra.get("p_target")
        goal = None if trace is None or trace.goal_cell is None else tuple(int(v) for v in trace.goal_cell)
        return cls(
            step=int(info.get("step", 0)),
            image=np.array(obs["image"], dtype=np.uint8, copy=True),
            action=None if action is None else int(action),
            pos=tuple(int(v) for v in info["agent_pos"]),  # type: ignore[arg-type]
            heading=int(info["agent_dir"]),
            distance_m=float(info["distance_m"]),
            path_length_m=float(info["path_length_m"]),
            collisions=int(info["collisions"]),
            target_in_view=bool(info["target_in_view"]),
            fish=None if fish is None else np.array(fish, dtype=np.float32, copy=True),
            mode=str(getattr(trace, "mode", "") or ""),
            goal_cell=goal,  # type: ignore[arg-type]
            p_target=None if p is None else float(p),
            graph=graph,
            current_node=current_node,
        )


@dataclass
class Scene:
    """What stays fixed during an episode: the seabed, the targets, the start and the task."""

    kinds: np.ndarray
    """(n, n) kind id per cell."""
    target_mask: np.ndarray
    """(n, n) bool: cells of the task's target instances."""
    start_pose: tuple[int, int, int]
    mission: str
    task: str
    task_number: int
    world_seed: int
    max_steps: int

    @classmethod
    def from_env(cls, env: Any) -> Scene:
        """Read the scene from an ``UnderwaterEnv`` right after ``reset`` (privileged: for humans)."""
        world = env.world
        mask = np.zeros(world.kinds.shape, dtype=bool)
        for cells in world.instance_cells(env.task.target):
            mask[cells[:, 1], cells[:, 0]] = True
        return cls(
            kinds=world.kinds.copy(),
            target_mask=mask,
            start_pose=tuple(int(v) for v in env.start_pose),  # type: ignore[arg-type]
            mission=str(env.mission),
            task=env.task.name,
            task_number=int(env.task.number),
            world_seed=int(env.world_seed),
            max_steps=int(env.max_steps),
        )


def retrievals_from_log(entries: Iterable[Mapping[str, Any]]) -> dict[int, tuple[str | None, list[Retrieval]]]:
    """Step -> (query, hits) from an episode log's ``retrievals`` (no thumbnails: logs keep none)."""
    out: dict[int, tuple[str | None, list[Retrieval]]] = {}
    for e in entries:
        hits = [Retrieval(float(h[0]), None if h[1] is None else int(h[1]), tuple(h[2]), str(h[3]), int(h[4])) for h in e["hits"]]
        out[int(e["step"])] = (e.get("query"), hits)
    return out


def best_retrievals(retrievals: Sequence[Retrieval]) -> list[Retrieval]:
    """The hits shown, best score first; their rank is their number in the panel and on the map."""
    return sorted(retrievals, key=lambda r: -r.score)[:MEMORY_TILES]


# --------------------------------------------------------------------------- panels


def _font_scale(size: int) -> float:
    return max(0.3, 0.42 * size / 256)


def _text(
    img: np.ndarray, text: str, org: tuple[int, int], scale: float, color=_WHITE, thickness: int = 1, box: bool = False
) -> None:
    """Text, optionally on a dark box so that it reads on any background (as in Habitat's
    overlay_frame). No outline stroke: OpenCV 5's fonts widen with thickness, so a thicker dark
    copy under the text would not line up with it."""
    if box:
        (w, h), base = cv2.getTextSize(text, _FONT, scale, thickness)
        x, y = org
        cv2.rectangle(img, (x - 2, y - h - 2), (x + w + 2, y + base), (0, 0, 0), -1)
    cv2.putText(img, text, org, _FONT, scale, color, thickness, cv2.LINE_AA)


def camera_panel(image: np.ndarray, size: int) -> np.ndarray:
    """The first-person camera enlarged with nearest neighbour (pixels stay visible, as the agent saw them)."""
    return cv2.resize(np.ascontiguousarray(image), (size, size), interpolation=cv2.INTER_NEAREST)


class MapPainter:
    """Draws the top-down panel; the static layer (seabed, target outlines, start) is made once."""

    def __init__(self, scene: Scene, size: int):
        self.scene = scene
        self.size = size
        n = scene.kinds.shape[0]
        self.px = px = max(1, math.ceil(size / n))
        base = np.repeat(np.repeat(KIND_COLORS[scene.kinds], px, axis=0), px, axis=1)
        base = np.ascontiguousarray(base)
        mask = np.repeat(np.repeat(scene.target_mask.astype(np.uint8), px, axis=0), px, axis=1)
        contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        cv2.drawContours(base, contours, -1, _TARGET, max(1, px // 4) + 1)
        sx, sy, _ = scene.start_pose
        c = self.cell_center(sx, sy)
        cv2.rectangle(base, (c[0] - px, c[1] - px), (c[0] + px, c[1] + px), _START, max(1, px // 6) + 1)
        self.base = base

    def cell_center(self, x: float, y: float) -> tuple[int, int]:
        return int(round((x + 0.5) * self.px)), int(round((y + 0.5) * self.px))

    def draw(self, trajectory: np.ndarray, rec: StepRecord, shown: list[Retrieval] | None) -> np.ndarray:
        """The map at one step: trajectory so far, graph, fish, retrieved poses, goal and robot."""
        px = self.px
        img = self.base.copy()
        if rec.graph is not None and len(rec.graph.positions):
            _draw_graph(img, rec.graph, px, rec.current_node)
        if len(trajectory) > 1:
            pts = ((trajectory + 0.5) * px).astype(np.int32)
            cv2.polylines(img, [pts], False, _WHITE, max(1, px // 4), cv2.LINE_AA)
        if rec.fish is not None:
            for fx, fy in rec.fish:
                cv2.circle(img, (int(fx * px), int(fy * px)), max(1, px // 4), _FISH, -1)
        if shown:
            for i, r in enumerate(best_retrievals(shown)):
                c = self.cell_center(r.pose[0], r.pose[1])
                dx, dy = DIR_TO_VEC[int(r.pose[2]) % 4]
                cv2.circle(img, c, max(2, px // 2), _RETRIEVED, max(1, px // 6), cv2.LINE_AA)
                cv2.line(img, c, (c[0] + dx * px, c[1] + dy * px), _RETRIEVED, max(1, px // 6), cv2.LINE_AA)
                _text(img, str(i + 1), (c[0] + px // 2, c[1] - px // 2), max(0.3, px / 20), _RETRIEVED, box=True)
        if rec.goal_cell is not None:
            c = self.cell_center(*rec.goal_cell)
            cv2.drawMarker(img, c, _GOAL, cv2.MARKER_TILTED_CROSS, max(4, px), max(1, px // 5))
        _draw_robot(img, self.cell_center(*rec.pos), rec.heading, px)
        if img.shape[0] != self.size:
            img = cv2.resize(img, (self.size, self.size), interpolation=cv2.INTER_AREA)
        return img


def _draw_graph(img: np.ndarray, graph: MapSnapshot, px: int, current: int | None) -> None:
    """Edges as lines, nodes as dots, the current node larger and red (the look of
    ``TopologicalMap.draw``, applied to a snapshot)."""
    pix = np.rint((graph.positions + 0.5) * px).astype(np.int64)
    r = max(2, px // 4)
    for u, v in graph.edges:
        cv2.line(img, (int(pix[u, 0]), int(pix[u, 1])), (int(pix[v, 0]), int(pix[v, 1])), _EDGE, max(1, px // 10), cv2.LINE_AA)
    for p in pix:
        cv2.circle(img, (int(p[0]), int(p[1])), r, _NODE, -1, cv2.LINE_AA)
    if current is not None and 0 <= current < len(pix):
        cv2.circle(img, (int(pix[current, 0]), int(pix[current, 1])), r + max(1, r // 2), _AGENT, -1, cv2.LINE_AA)


def _draw_robot(img: np.ndarray, c: tuple[int, int], heading: int, px: int) -> None:
    tri = robot_triangle(c, heading, max(2.0, px * 0.7))
    cv2.fillPoly(img, [tri], _AGENT, cv2.LINE_AA)
    cv2.polylines(img, [tri], True, (0, 0, 0), 1, cv2.LINE_AA)


def memory_panel(
    retrievals: Sequence[Retrieval] | None, size: int, query: str | None = None, age: int = 0, last_step: int | None = None
) -> np.ndarray:
    """The best retrieved frames (thumbnails when memory kept them, else their pose) with scores."""
    img = np.full((size, size, 3), _PANEL_BG, dtype=np.uint8)
    scale = _font_scale(size)
    line = int(26 * scale / 0.42)
    if not retrievals:
        _text(img, "memory", (6, line), scale, _GREY)
        msg = "no query yet" if last_step is None else f"last query: step {last_step}"
        _text(img, msg, (6, 2 * line), scale * 0.9, _GREY)
        return img
    head = "memory: query, best scores" if not age else f"memory: {age} step{'s' if age > 1 else ''} ago"
    _text(img, head, (6, line), scale, _RETRIEVED)
    top = line + 6
    tile = (size - top) // 2
    for i, r in enumerate(best_retrievals(retrievals)):
        x0 = (size - 2 * tile) // 2 + (i % 2) * tile
        y0 = top + (i // 2) * tile
        inner = tile - 4
        if r.thumbnail is not None:
            thumb = np.asarray(r.thumbnail, dtype=np.uint8)
            img[y0 + 2 : y0 + 2 + inner, x0 + 2 : x0 + 2 + inner] = cv2.resize(thumb, (inner, inner), interpolation=cv2.INTER_NEAREST)
        else:
            cv2.rectangle(img, (x0 + 2, y0 + 2), (x0 + 1 + inner, y0 + 1 + inner), (45, 50, 62), -1)
            _text(img, "no image", (x0 + 6, y0 + inner // 2 - 4), scale * 0.8, _GREY)
            _text(img, f"at ({r.pose[0]:.0f},{r.pose[1]:.0f})", (x0 + 6, y0 + inner // 2 + int(16 * scale / 0.42)), scale * 0.8, _GREY)
        cv2.rectangle(img, (x0 + 1, y0 + 1), (x0 + 2 + inner, y0 + 2 + inner), _RETRIEVED, 1)
        _text(img, f"{i + 1}: {r.score:.2f}", (x0 + 5, y0 + 2 + int(18 * scale / 0.42)), scale * 0.9, box=True)
        _text(img, f"{r.task}@{r.step}", (x0 + 5, y0 + inner - 4), scale * 0.75, _GREY, box=True)
    return img


def text_strip(lines: Sequence[str], width: int, size: int) -> np.ndarray:
    """A dark strip under the panels with one line of text per entry."""
    scale = _font_scale(size)
    line_h = int(24 * scale / 0.42)
    h = line_h * len(lines) + 8
    h += h % 2  # codecs want even frame sizes
    img = np.full((h, width, 3), _PANEL_BG, dtype=np.uint8)
    for i, t in enumerate(lines):
        _text(img, t, (8, line_h * (i + 1) - 2), scale)
    return img


def compose_frame(camera: np.ndarray, top_down: np.ndarray, memory: np.ndarray, lines: Sequence[str], size: int) -> np.ndarray:
    """One RGB frame: camera (enlarged), top-down map and memory panel side by side, text below.

    Args:
        camera: first-person RGB image, any size (enlarged with nearest neighbour to ``size``).
        top_down: top-down RGB map (resized to ``size`` if needed).
        memory: memory panel (resized to ``size`` if needed).
        lines: the text strip, one entry per line.
        size: panel height and width in pixels (even).
    """
    panels = [camera_panel(camera, size)]
    for p in (top_down, memory):
        panels.append(p if p.shape[:2] == (size, size) else cv2.resize(p, (size, size), interpolation=cv2.INTER_AREA))
    for i in range(1, 3):
        panels[i][:, :1] = 60  # thin separators
    row = np.concatenate(panels, axis=1)
    return np.concatenate([row, text_strip(lines, row.shape[1], size)], axis=0)


def summary_frame(last: np.ndarray, summary: Mapping[str, Any]) -> np.ndarray:
    """The last frame dimmed, with the episode's result over it (held ~1 s at the end of a video)."""
    img = (last.astype(np.float32) * 0.3).astype(np.uint8)
    h, w = img.shape[:2]
    scale = max(0.45, h / 420)
    ok = bool(summary.get("success"))
    lines = [("SUCCESS" if ok else "FAILURE", (80, 255, 120) if ok else (255, 90, 90), 2.0)]

    def num(key: str, fmt: str) -> str:
        v = summary.get(key)
        try:
            return "-" if v is None else format(float(v) if "f" in fmt else int(v), fmt)
        except (TypeError, ValueError):
            return str(v)

    lines.append((f"SPL {num('spl', '.2f')}   SoftSPL {num('soft_spl', '.2f')}", _WHITE, 1.0))
    lines.append((f"steps {num('steps', 'd')}   path {num('path_length', '.0f')} m", _WHITE, 1.0))
    if "distance_score" in summary:
        lines.append((f"distance score {num('distance_score', '.0f')}", _WHITE, 1.0))
    y = h // 2 - int(len(lines) * 18 * scale)
    for text, color, s in lines:
        (tw, th), _ = cv2.getTextSize(text, _FONT, scale * s, 2)
        y += th + int(14 * scale)
        _text(img, text, ((w - tw) // 2, y), scale * s, color, 2)
    return img


# --------------------------------------------------------------------------- episodes


def render_frames(
    scene: Scene,
    steps: Sequence[StepRecord],
    size: int = 256,
    summary: Mapping[str, Any] | None = None,
    hold_frames: int = 10,
    hold_steps: int = RETRIEVAL_HOLD_STEPS,
) -> Iterator[np.ndarray]:
    """RGB frames of a finished episode: one per step, then ``hold_frames`` copies of the summary.

    The one rendering path of the recorder and the replay tool. A retrieval stays in the memory
    panel (and its poses on the map) for ``hold_steps`` steps after its query.

    Args:
        scene: the static scene (:meth:`Scene.from_env`).
        steps: one :class:`StepRecord` per ``env.step``.
        size: panel side in pixels (rounded up to an even number).
        summary: the episode's metrics record (``success``, ``spl``, ``steps``, ``path_length`` ...);
            None: no summary frames.
        hold_frames: how many times the summary frame is repeated.
        hold_steps: how long a retrieval stays on screen.
    """
    size += size % 2
    painter = MapPainter(scene, size)
    traj = [(scene.start_pose[0], scene.start_pose[1])]
    shown: list[Retrieval] | None = None
    shown_at: int | None = None
    query: str | None = None
    panel_key: tuple[Any, ...] | None = None
    panel: np.ndarray | None = None
    seen_target = 0
    frame: np.ndarray | None = None
    for rec in steps:
        if rec.pos != traj[-1]:
            traj.append(rec.pos)
        if rec.retrievals:
            shown, shown_at, query = list(rec.retrievals), rec.step, rec.query
        age = rec.step - shown_at if shown_at is not None else 0
        active = shown if shown is not None and age <= hold_steps else None
        key = (id(active), age if active else shown_at)
        if key != panel_key:
            panel = memory_panel(active, size, query, age, shown_at)
            panel_key = key
        seen_target += rec.target_in_view
        top = painter.draw(np.asarray(traj, dtype=np.float64), rec, active)
        action = "-" if rec.action is None else ACTION_NAMES.get(rec.action, str(rec.action))
        mode = f"  mode {rec.mode}" if rec.mode else ""
        p = f"  p(target) {rec.p_target:.2f}" if rec.p_target is not None else ""
        nodes = f"  nodes {len(rec.graph.positions)}" if rec.graph is not None else ""
        lines = [
            f"{scene.mission}   [task {scene.task_number} {scene.task}, world {scene.world_seed}]",
            f"step {rec.step}/{scene.max_steps}   action {action}   distance {rec.distance_m:.0f} m{mode}{p}",
            f"path {rec.path_length_m:.0f} m   collisions {rec.collisions}   target in view "
            f"{'YES' if rec.target_in_view else 'no'} ({seen_target} steps){nodes}",
        ]
        assert panel is not None
        frame = compose_frame(rec.image, top, panel, lines, size)
        yield frame
    if summary is not None and frame is not None:
        last = summary_frame(frame, summary)
        for _ in range(hold_frames):
            yield last


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence C-level stderr while OpenCV opens a WebM writer: FFmpeg's muxer has no codec tags,
    so OpenCV prints a harmless 'tag not supported' line for every file."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def video_format(path: str | os.PathLike[str]) -> str:
    """``webm`` or ``mp4`` from a file name.

    Raises:
        ValueError: for any other extension.
    """
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in FOURCC:
        raise ValueError(f"{path}: video files must end in {', '.join('.' + e for e in FOURCC)}")
    return ext


def write_video(path: str | os.PathLike[str], frames: Iterable[np.ndarray], fps: int = 10) -> int:
    """Encode RGB frames into ``path`` (format from its extension) atomically; returns the frame count.

    The file appears complete or not at all: frames go to a temporary file in the same directory,
    which is renamed over ``path`` at the end. All frames must have the size of the first.

    Raises:
        RuntimeError: when OpenCV cannot open an encoder for the format.
        ValueError: when no frames are given or a frame has another size.
    """
    path = Path(path)
    fmt = video_format(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".tmp.{fmt}", dir=path.parent)
    os.close(fd)
    writer: cv2.VideoWriter | None = None
    n = 0
    try:
        shape: tuple[int, ...] | None = None
        for frame in frames:
            if writer is None:
                shape = frame.shape
                h, w = frame.shape[:2]
                with _quiet_stderr() if fmt == "webm" else _nullcontext():
                    writer = cv2.VideoWriter(tmp, cv2.VideoWriter_fourcc(*FOURCC[fmt]), float(fps), (w, h))
                if not writer.isOpened():
                    raise RuntimeError(f"OpenCV cannot encode {fmt} ({FOURCC[fmt]}) video here; try the other format")
            elif frame.shape != shape:
                raise ValueError(f"frame {n} has shape {frame.shape}, the first had {shape}")
            writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
            n += 1
        if writer is None:
            raise ValueError(f"{path}: no frames to write")
        writer.release()
        writer = None
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes 0600; give the video normal permissions
        os.replace(tmp, path)
    except BaseException:
        if writer is not None:
            writer.release()
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return n


@contextmanager
def _nullcontext() -> Iterator[None]:
    yield


def episode_video_name(record: Mapping[str, Any], fmt: str = "webm") -> str:
    """File name carrying the episode and its result, e.g.
    ``seq=wreck_then_barrel-world=0-seed=0-task=1-agent=memory-cond=warm-success=1-spl=0.82.webm``
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
        video_cfg: an ``embodmem.config.VideoConfig`` (or anything with ``enabled``, ``episodes``,
            ``fps``, ``size`` and ``format`` attributes).
        out_dir: where the videos go (created on the first video).
        root: paths recorded in ``result.record["video"]`` are relative to it (default: the parent of
            ``out_dir``, i.e. the run directory for ``<run>/videos``).
    """

    def __init__(self, video_cfg: Any, out_dir: str | os.PathLike[str], root: str | os.PathLike[str] | None = None):
        self.enabled = bool(getattr(video_cfg, "enabled", True))
        self.episodes = str(_value(getattr(video_cfg, "episodes", "all")))
        self.fps = int(getattr(video_cfg, "fps", 10))
        self.size = int(getattr(video_cfg, "size", 256))
        self.format = str(_value(getattr(video_cfg, "format", "webm")))
        if self.episodes not in EPISODE_CHOICES:
            raise ValueError(f"video.episodes={self.episodes!r}: allowed: {', '.join(EPISODE_CHOICES)}")
        if self.format not in FOURCC:
            raise ValueError(f"video.format={self.format!r}: allowed: {', '.join(FOURCC)}")
        if self.fps < 1 or self.size < 32:
            raise ValueError(f"video.fps={self.fps} must be >= 1 and video.size={self.size} >= 32")
        self.out_dir = Path(out_dir)
        self.root = Path(root) if root is not None else self.out_dir.parent
        self.paths: list[Path] = []
        """Videos written so far."""
        self.frames_written = 0
        self.episodes_seen = 0
        self._env: Any = None
        self._agent: Any = None
        self._episode: _Episode | None = None
        self._last_graph: tuple[tuple[int, int, Any], int, MapSnapshot] | None = None
        self._last_retrievals: Any = None

    def bind(self, env: Any, agent: Any) -> None:
        """Follow this environment and agent (called before each task sequence)."""
        self._env, self._agent = env, agent
        self._episode = None
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
            ep = self._episode = _Episode(Scene.from_env(self._env))
        agent = ctx.get("agent", self._agent)
        trace = getattr(agent, "trace", None)
        graph, current = self._graph_of(agent)
        rec = StepRecord.capture(self._env, ctx["obs"], info, ctx["action"], trace, graph, current)
        hits = getattr(trace, "retrievals", None)
        if hits and hits is not self._last_retrievals:
            self._last_retrievals = hits
            ep.live[rec.step] = (trace.query, list(hits))
        ep.steps.append(rec)

    def _graph_of(self, agent: Any) -> tuple[MapSnapshot | None, int | None]:
        topo = getattr(getattr(agent, "memory", None), "map", None)
        if topo is None or not hasattr(topo, "positions"):
            return None, None
        # Edges appear only when the agent moves between nodes, so the map can have changed only if
        # its node count or the node last visited did; only then pay for counting edges (O(nodes)).
        moved = (id(topo), len(topo), getattr(topo, "prev", None))
        last = self._last_graph
        if last is None or last[0] != moved:
            edges = topo.graph.number_of_edges()
            snap = last[2] if last is not None and last[0][:2] == moved[:2] and last[1] == edges else MapSnapshot.of(topo)
            self._last_graph = last = (moved, edges, snap)
        current = getattr(agent, "current_node", None)
        return last[2], None if current is None else int(current)

    def finish(self, result: Any) -> Path | None:
        """End the episode: write its video if it is wanted, return its path (else None).

        The path, relative to ``root``, also goes into ``result.record["video"]``. An encoding error
        is logged and stored as ``result.record["video_error"]`` instead of stopping the run.
        """
        ep, self._episode = self._episode, None
        wanted = self._wanted_before_result()
        self.episodes_seen += 1
        if ep is None or not ep.steps or not wanted:
            return None
        record = result.record
        if self.episodes == "failures" and bool(record.get("success")):
            return None
        # Retrievals: the agent's own (with thumbnails) where step() saw them, else the log's (poses
        # and scores only). step() sees them only if the runner calls on_step before it clears them.
        found = retrievals_from_log(result.log.get("retrievals", []))
        found.update(ep.live)
        for rec in ep.steps:
            if rec.step in found:
                rec.query, rec.retrievals = found[rec.step]
        path = self.out_dir / episode_video_name(record, self.format)
        try:
            n = write_video(path, render_frames(ep.scene, ep.steps, self.size, record, self.fps), self.fps)
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
    return getattr(v, "value", v)
