"""Drawing the frames of an episode video with OpenCV, in the style of Habitat's
``observations_to_image`` / ``overlay_frame``::

    +-------------------+-------------------+-------------------+
    | first-person      | top-down map:     | memory: the best  |
    | camera, enlarged  | trajectory, graph,| recalled frames,  |
    | (nearest)         | targets, start    | when/where stored |
    +-------------------+-------------------+-------------------+
    | task 1 of 2: wreck ... / step / action / distance / path ... |
    | map legend (drawn once per episode)                         |
    +-------------------------------------------------------------+

What does not change during an episode (the seabed with the target outlines and the start, the
legend, the caption's first line) is drawn once, the topological map once per change, the recall
labels once per label; a frame adds the moving parts to a copy.

Example:
    >>> from embodmem.envs.underwater import UnderwaterEnv
    >>> from embodmem.video.snapshots import Scene, StepRecord
    >>> env = UnderwaterEnv(task="barrel", size=24, max_steps=5)
    >>> obs, info = env.reset(seed=0)
    >>> scene = Scene.from_env(env).placed({"task_index": 2, "sequence": "wreck_then_barrel"})
    >>> steps = []
    >>> for a in (2, 2, 1):
    ...     obs, *_ = env.step(a)
    ...     steps.append(StepRecord.capture(env.ground_truth(), obs, a))
    >>> frames = list(render_frames(scene, steps, size=64, summary={"success": 0}, hold_frames=2))
    >>> len(frames), frames[0].shape
    (5, (124, 192, 3))
    >>> caption(scene)
    'task 2 of 2: barrel, find oil drums  (reference task 3, world 0)'
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import cv2
import numpy as np

from embodmem.agents.base import Retrieval
from embodmem.envs.changes import ChangeEvent
from embodmem.envs.objects import KIND_COLORS, KIND_INDEX
from embodmem.envs.spec import ACTION_NAMES, DIR_TO_VEC
from embodmem.envs.underwater import robot_triangle
from embodmem.video.snapshots import MapSnapshot, Scene, StepRecord

MEMORY_TILES = 4
"""Recalled frames shown in the memory panel (a 2 x 2 grid, best first)."""
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
_CHANGE = (255, 60, 200)
_WATER = tuple(int(v) for v in KIND_COLORS[0])
_PANEL_BG = (18, 22, 30)
_FONT = cv2.FONT_HERSHEY_SIMPLEX

LEGEND: tuple[tuple[str, str, tuple[int, int, int]], ...] = (
    ("robot", "robot", _AGENT),
    ("path", "line", _WHITE),
    ("target", "outline", _TARGET),
    ("start", "outline", _START),
    ("map node", "dot", _NODE),
    ("goal", "cross", _GOAL),
    ("recalled view", "ring", _RETRIEVED),
    ("fish", "dot", _FISH),
)
"""The map's legend: label, glyph, colour (the glyphs are those the map draws)."""
LEGEND_MEANINGS: tuple[str, ...] = (
    "target: every object of the kind the mission names (outlined; the agent never sees this map)",
    "goal: the cell the agent is heading for now (its plan, right or wrong)",
)
"""The legend's last line(s): what the two words a viewer cannot guess mean."""
CAMERA_LABEL = "camera: what the robot sees"
"""Written on the camera panel (from ``DETAIL_MIN_SIZE`` up), so it is not mistaken for a map."""
_DIM_30 = (np.arange(256) * 3 // 10).astype(np.uint8)
"""Each channel value dimmed to 30 % (rounded down), as a lookup table: ten times faster than the
float product it replaces, and the same pixels."""
DETAIL_MIN_SIZE = 128
"""Smallest panel size with the map's legend and the memory tiles' task and step: below it these
labels would wrap over several rows or cover the thumbnails, in text too small to read (such sizes
serve thumbnails and tests)."""


def best_retrievals(retrievals: Sequence[Retrieval]) -> list[Retrieval]:
    """The hits shown, best score first; their rank is their number in the panel and on the map."""
    return sorted(retrievals, key=lambda r: -r.score)[:MEMORY_TILES]


def _font_scale(size: int) -> float:
    return max(0.3, 0.42 * size / 256)


def _line_height(size: int) -> int:
    return int(24 * _font_scale(size) / 0.42)


def _text(
    img: np.ndarray,
    text: str,
    org: tuple[int, int],
    scale: float,
    color: tuple[int, int, int] = _WHITE,
    thickness: int = 1,
    box: bool = False,
) -> None:
    """Text, optionally on a dark box so that it reads on any background (as in Habitat's
    overlay_frame). No outline stroke: OpenCV 5's fonts widen with thickness, so a thicker dark
    copy under the text would not line up with it."""
    if box:
        (w, h), base = cv2.getTextSize(text, _FONT, scale, thickness)
        x, y = org
        cv2.rectangle(img, (x - 2, y - h - 2), (x + w + 2, y + base), (0, 0, 0), -1)
    cv2.putText(img, text, org, _FONT, scale, color, thickness, cv2.LINE_AA)


@functools.lru_cache(maxsize=64)
def _boxed_label(text: str, scale: float, color: tuple[int, int, int]) -> tuple[np.ndarray, int, int]:
    """``_text(..., box=True)`` drawn once into its own patch: the box is opaque and holds every
    pixel of the text, so pasting the patch gives the very pixels drawing it would. Returns the
    patch (read-only) and the offset of its top-left corner from the text's origin."""
    (w, h), base = cv2.getTextSize(text, _FONT, scale, 1)
    patch = np.zeros((h + base + 3, w + 5, 3), dtype=np.uint8)
    _text(patch, text, (2, h + 2), scale, color, box=True)
    patch.flags.writeable = False
    return patch, -2, -h - 2


def _paste(img: np.ndarray, label: tuple[np.ndarray, int, int], org: tuple[int, int]) -> None:
    """Paste a :func:`_boxed_label` at text origin ``org``, clipped to ``img``."""
    patch, dx, dy = label
    x0, y0 = org[0] + dx, org[1] + dy
    h, w = patch.shape[:2]
    top, left = max(0, -y0), max(0, -x0)
    bottom, right = min(h, img.shape[0] - y0), min(w, img.shape[1] - x0)
    if top < bottom and left < right:
        img[y0 + top : y0 + bottom, x0 + left : x0 + right] = patch[top:bottom, left:right]


def camera_panel(image: np.ndarray, size: int, out: np.ndarray | None = None) -> np.ndarray:
    """The first-person camera enlarged with nearest neighbour (pixels stay visible, as the agent
    saw them); drawn straight into ``out`` (a (size, size, 3) uint8 view) when given."""
    panel = cv2.resize(np.ascontiguousarray(image), (size, size), dst=out, interpolation=cv2.INTER_NEAREST)
    if out is not None and not np.shares_memory(panel, out):  # OpenCV could not use out (another dtype)
        out[:] = panel
        return out
    return panel


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
        self._graph_layer: tuple[MapSnapshot | None, int | None, np.ndarray] = (None, None, base)
        """The static layer with the last graph drawn on it: graph snapshot, current node, image. The
        map changes far less often than the robot moves, so most frames start from this copy."""

    def cell_center(self, x: float, y: float) -> tuple[int, int]:
        return int(round((x + 0.5) * self.px)), int(round((y + 0.5) * self.px))

    def draw(self, trajectory: np.ndarray, rec: StepRecord, shown: list[Retrieval] | None) -> np.ndarray:
        """The map at one step: trajectory so far, graph, fish, recalled poses, goal and robot."""
        px = self.px
        img = self._with_graph(rec.graph, rec.current_node).copy()
        if len(trajectory) > 1:
            pts = ((trajectory + 0.5) * px).astype(np.int32)
            cv2.polylines(img, [pts], False, _WHITE, max(1, px // 4), cv2.LINE_AA)
        for event in rec.changes:
            _draw_change(img, event, px, self.cell_center)
        if rec.fish is not None:
            for fx, fy in rec.fish:
                cv2.circle(img, (int(fx * px), int(fy * px)), max(1, px // 4), _FISH, -1)
        if shown:
            for i, r in enumerate(best_retrievals(shown)):
                c = self.cell_center(r.pose[0], r.pose[1])
                dx, dy = DIR_TO_VEC[int(r.pose[2]) % 4]
                cv2.circle(img, c, max(2, px // 2), _RETRIEVED, max(1, px // 6), cv2.LINE_AA)
                cv2.line(img, c, (c[0] + dx * px, c[1] + dy * px), _RETRIEVED, max(1, px // 6), cv2.LINE_AA)
                _paste(img, _boxed_label(str(i + 1), max(0.3, px / 20), _RETRIEVED), (c[0] + px // 2, c[1] - px // 2))
        if rec.goal_cell is not None:
            c = self.cell_center(*rec.goal_cell)
            cv2.drawMarker(img, c, _GOAL, cv2.MARKER_TILTED_CROSS, max(4, px), max(1, px // 5))
        _draw_robot(img, self.cell_center(*rec.pos), rec.heading, px)
        if img.shape[0] != self.size:
            img = cv2.resize(img, (self.size, self.size), interpolation=cv2.INTER_AREA)
        return img

    def _with_graph(self, graph: MapSnapshot | None, current: int | None) -> np.ndarray:
        """The static layer with ``graph`` on it (not to be drawn on: copy it); a snapshot is
        recognised by identity, as the recorder shares one while the map is unchanged."""
        if graph is None or not len(graph.positions):
            return self.base
        last_graph, last_current, img = self._graph_layer
        if graph is not last_graph or current != last_current:
            img = self.base.copy()
            _draw_graph(img, graph, self.px, current)
            self._graph_layer = (graph, current, img)
        return img


def _draw_graph(img: np.ndarray, graph: MapSnapshot, px: int, current: int | None) -> None:
    """Edges as lines, nodes as dots, the current node larger and red (the look of
    ``TopologicalMap.draw``, applied to a snapshot)."""
    pix = np.rint((graph.positions + 0.5) * px).astype(np.int64)
    r = max(2, px // 4)
    for u, v in graph.edges:
        cv2.line(
            img,
            (int(pix[u, 0]), int(pix[u, 1])),
            (int(pix[v, 0]), int(pix[v, 1])),
            _EDGE,
            max(1, px // 10),
            cv2.LINE_AA,
        )
    for p in pix:
        cv2.circle(img, (int(p[0]), int(p[1])), r, _NODE, -1, cv2.LINE_AA)
    if current is not None and 0 <= current < len(pix):
        cv2.circle(img, (int(pix[current, 0]), int(pix[current, 1])), r + max(1, r // 2), _AGENT, -1, cv2.LINE_AA)


def _draw_change(
    img: np.ndarray, event: ChangeEvent, px: int, center: Callable[[float, float], tuple[int, int]]
) -> None:
    """A change of the world (embodmem.envs.changes) on the map drawn at the episode's start: where
    the object was, crossed out in water's colour; where it is, in its kind's colour; an arrow between."""
    width = max(1, px // 5)
    for x, y in event.from_cells:
        cv2.rectangle(img, (x * px, y * px), ((x + 1) * px - 1, (y + 1) * px - 1), _WATER, -1)
        cv2.line(img, (x * px, y * px), ((x + 1) * px - 1, (y + 1) * px - 1), _CHANGE, width)
        cv2.line(img, ((x + 1) * px - 1, y * px), (x * px, (y + 1) * px - 1), _CHANGE, width)
    color = tuple(int(v) for v in KIND_COLORS[KIND_INDEX[event.kind]])
    for x, y in event.to_cells:
        cv2.rectangle(img, (x * px, y * px), ((x + 1) * px - 1, (y + 1) * px - 1), color, -1)
        cv2.rectangle(img, (x * px, y * px), ((x + 1) * px - 1, (y + 1) * px - 1), _CHANGE, width)
    if event.from_center is not None and event.to_center is not None and event.from_cells != event.to_cells:
        cv2.arrowedLine(img, center(*event.from_center), center(*event.to_center), _CHANGE, width, cv2.LINE_AA, 0, 0.15)


def _draw_robot(img: np.ndarray, c: tuple[int, int], heading: int, px: int) -> None:
    tri = robot_triangle(c, heading, max(2.0, px * 0.7))
    cv2.fillPoly(img, [tri], _AGENT, cv2.LINE_AA)
    cv2.polylines(img, [tri], True, (0, 0, 0), 1, cv2.LINE_AA)


def memory_panel(
    retrievals: Sequence[Retrieval] | None,
    size: int,
    query: str | None = None,
    age: int = 0,
    last_step: int | None = None,
    tiles: np.ndarray | None = None,
) -> np.ndarray:
    """The memory panel: the best recalled frames (:func:`memory_tiles`; pass ``tiles`` to reuse
    them while the same recall stays on screen) under a header that says how long ago the recall
    was; with nothing recalled, when the last recall was."""
    scale = _font_scale(size)
    line = int(26 * scale / 0.42)
    if not retrievals:
        img = _blank(size, size)
        _text(img, "memory", (6, line), scale, _GREY)
        msg = "no recall yet" if last_step is None else f"last recall: step {last_step}"
        _text(img, msg, (6, 2 * line), scale * 0.9, _GREY)
        return img
    img = (tiles if tiles is not None else memory_tiles(retrievals, size)).copy()
    head = "memory recall, this step" if not age else f"memory recall, {age} step{'s' if age > 1 else ''} ago"
    _text(img, head, (6, line), scale, _RETRIEVED)
    return img


def memory_tiles(retrievals: Sequence[Retrieval], size: int) -> np.ndarray:
    """The best recalled frames (thumbnails when memory kept them, else their pose), each with how
    well it matches the current mission and (from ``DETAIL_MIN_SIZE`` up) in which task and at
    which of its steps it was stored; the top line is left free for the header."""
    img = _blank(size, size)
    scale = _font_scale(size)
    line = int(26 * scale / 0.42)
    detail = size >= DETAIL_MIN_SIZE
    top = line + 6
    if detail:
        _text(img, "match to the mission; task, step stored", (6, line + int(20 * scale / 0.42)), scale * 0.8, _GREY)
        top += int(20 * scale / 0.42)
    tile = min((size - top) // 2, size // 2)
    small = scale * 0.75
    small_h = int(17 * scale / 0.42)
    for i, r in enumerate(best_retrievals(retrievals)):
        x0 = (size - 2 * tile) // 2 + (i % 2) * tile
        y0 = top + (i // 2) * tile
        inner = tile - 4
        if r.thumbnail is not None:
            thumb = np.asarray(r.thumbnail, dtype=np.uint8)
            img[y0 + 2 : y0 + 2 + inner, x0 + 2 : x0 + 2 + inner] = cv2.resize(
                thumb, (inner, inner), interpolation=cv2.INTER_NEAREST
            )
        else:
            cv2.rectangle(img, (x0 + 2, y0 + 2), (x0 + 1 + inner, y0 + 1 + inner), (45, 50, 62), -1)
            _text(img, f"no image, at ({r.pose[0]:.0f},{r.pose[1]:.0f})", (x0 + 5, y0 + inner // 2), small, _GREY)
        cv2.rectangle(img, (x0 + 1, y0 + 1), (x0 + 2 + inner, y0 + 2 + inner), _RETRIEVED, 1)
        _text(img, f"{i + 1}  match {r.score:.2f}", (x0 + 5, y0 + 2 + int(18 * scale / 0.42)), scale * 0.85, box=True)
        if detail:
            _text(img, f"stored: task {r.task}", (x0 + 5, y0 + inner - 4 - small_h), small, _WHITE, box=True)
            _text(img, f"at its step {r.step}", (x0 + 5, y0 + inner - 2), small, _WHITE, box=True)
    return img


@functools.lru_cache(maxsize=16)
def _background(height: int, width: int) -> np.ndarray:
    img = np.full((height, width, 3), _PANEL_BG, dtype=np.uint8)
    img.flags.writeable = False
    return img


def _blank(height: int, width: int) -> np.ndarray:
    """A fresh panel-coloured image (a copy of a cached one: filling from a colour tuple is slow)."""
    return _background(height, width).copy()


def caption(scene: Scene) -> str:
    """The first caption line: the task's place in the run's sequence, its mission, and separately
    its number in the reference benchmark."""
    if scene.position is None:
        where = f"task: {scene.task}"
    elif scene.sequence_length is None:
        where = f"task {scene.position}: {scene.task}"
    else:
        where = f"task {scene.position} of {scene.sequence_length}: {scene.task}"
    return f"{where}, {scene.mission}  (reference task {scene.task_number}, world {scene.world_seed})"


def text_strip(lines: Sequence[str | None], width: int, size: int) -> np.ndarray:
    """A dark strip under the panels with one line of text per entry (None: an empty line)."""
    img = _blank(_strip_height(len(lines), size), width)
    _write_lines(img, lines, size)
    return img


def _strip_height(n_lines: int, size: int) -> int:
    h = _line_height(size) * n_lines + 8
    return h + h % 2  # codecs want even frame sizes


def _write_lines(img: np.ndarray, lines: Sequence[str | None], size: int) -> None:
    scale, line_h = _font_scale(size), _line_height(size)
    for i, t in enumerate(lines):
        if t is not None:  # None: a line already on the background
            _text(img, t, (8, line_h * (i + 1) - 2), scale)


def _wrap_meanings(width: int, scale: float) -> list[str]:
    """:data:`LEGEND_MEANINGS` on one line when it fits ``width`` pixels, else one line each."""
    joined = "   ".join(LEGEND_MEANINGS)
    (w, _), _ = cv2.getTextSize(joined, _FONT, scale, 1)
    return [joined] if w <= width else list(LEGEND_MEANINGS)


def legend_strip(width: int, size: int) -> np.ndarray:
    """The map's legend, one glyph and label per item, wrapped to ``width``, then what "target" and
    "goal" mean (drawn once per video)."""
    scale = _font_scale(size) * 0.9
    line_h = _line_height(size)
    glyph = max(6, line_h // 2)
    placed: list[tuple[int, int, str, str, tuple[int, int, int]]] = []
    x, row = 8, 0
    (head_w, _), _ = cv2.getTextSize("map:", _FONT, scale, 1)
    x += head_w + 8
    for label, kind, color in LEGEND:
        (tw, _), _ = cv2.getTextSize(label, _FONT, scale, 1)
        item = glyph + 4 + tw + 12
        if x + item > width and x > 8 + head_w + 8:
            x, row = 8 + head_w + 8, row + 1
        placed.append((x, row, label, kind, color))
        x += item
    meanings = _wrap_meanings(width - 16, scale)
    h = line_h * (row + 1 + len(meanings)) + 4
    h += h % 2
    img = _blank(h, width)
    _text(img, "map:", (8, line_h - 4), scale, _GREY)
    for k, text in enumerate(meanings, start=row + 2):
        _text(img, text, (8, k * line_h - 4), scale, _GREY)
    for x, row, label, kind, color in placed:
        cy = row * line_h + line_h // 2
        c = (x + glyph // 2, cy)
        r = glyph // 2
        if kind == "robot":
            tri = robot_triangle(c, 0, r + 1)
            cv2.fillPoly(img, [tri], color, cv2.LINE_AA)
        elif kind == "line":
            cv2.line(img, (x, cy), (x + glyph, cy), color, 2, cv2.LINE_AA)
        elif kind == "outline":
            cv2.rectangle(img, (x, cy - r), (x + glyph, cy + r), color, 2)
        elif kind == "dot":
            cv2.circle(img, c, max(2, r - 1), color, -1, cv2.LINE_AA)
        elif kind == "cross":
            cv2.drawMarker(img, c, color, cv2.MARKER_TILTED_CROSS, glyph, 2)
        else:  # ring
            cv2.circle(img, c, r, color, 1, cv2.LINE_AA)
        _text(img, label, (x + glyph + 4, row * line_h + line_h - 4), scale, _GREY)
    return img


def compose_frame(
    camera: np.ndarray,
    top_down: np.ndarray,
    memory: np.ndarray,
    lines: Sequence[str | None],
    size: int,
    legend: np.ndarray | None = None,
    strip: np.ndarray | None = None,
) -> np.ndarray:
    """One RGB frame: camera (enlarged), top-down map and memory panel side by side, text below.

    Args:
        camera: first-person RGB image, any size (enlarged with nearest neighbour to ``size``).
        top_down: top-down RGB map (resized to ``size`` if needed).
        memory: memory panel (resized to ``size`` if needed).
        lines: the text strip, one entry per line (None: a line already written on ``strip``).
        size: panel height and width in pixels (even).
        legend: a strip drawn under the text (:func:`legend_strip`), if any.
        strip: the text strip's background (:func:`text_strip`, e.g. with the lines that stay the
            same all episode); default plain.
    """
    width = 3 * size
    strip_h = _strip_height(len(lines), size)
    legend_h = 0 if legend is None else legend.shape[0]
    # Everything is drawn into one preallocated frame: concatenating the parts cost as much as drawing them.
    frame = np.empty((size + strip_h + legend_h, width, 3), dtype=np.uint8)
    camera_panel(camera, size, frame[:size, :size])
    if size >= DETAIL_MIN_SIZE:
        _paste(frame[:size, :size], _boxed_label(CAMERA_LABEL, _font_scale(size) * 0.9, _GREY), (6, _line_height(size)))
    for i, p in enumerate((top_down, memory), start=1):
        frame[:size, i * size : (i + 1) * size] = (
            p if p.shape[:2] == (size, size) else cv2.resize(p, (size, size), interpolation=cv2.INTER_AREA)
        )
        frame[:size, i * size] = 60  # thin separators
    text = frame[size : size + strip_h]  # full rows: a contiguous view OpenCV can draw into
    text[:] = _background(strip_h, width) if strip is None else strip
    _write_lines(text, lines, size)
    if legend is not None:
        frame[size + strip_h :] = legend
    return frame


def summary_frame(last: np.ndarray, summary: Mapping[str, Any]) -> np.ndarray:
    """The last frame dimmed, with the episode's result over it (held ~1 s at the end of a video)."""
    img = cv2.LUT(np.ascontiguousarray(last), _DIM_30)
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


class FrameRenderer:
    """Draws an episode's frames one step at a time, in order (:func:`render_frames` drives it):
    a frame depends only on its step and the steps before it (the trajectory so far, the recall on
    screen). What stays the same all episode (map layers, legend, the caption's first line) is
    drawn once.

    Args:
        scene: the static scene, placed in its sequence (:meth:`Scene.placed`).
        size: panel side in pixels (rounded up to an even number); from ``DETAIL_MIN_SIZE`` up, a
            legend of the map goes under the text.
        hold_steps: how long a retrieval stays on screen after its query.
    """

    def __init__(self, scene: Scene, size: int = 256, hold_steps: int = RETRIEVAL_HOLD_STEPS):
        self.scene = scene
        self.size = size = size + size % 2
        self.hold_steps = hold_steps
        self.painter = MapPainter(scene, size)
        self.legend = legend_strip(3 * size, size) if size >= DETAIL_MIN_SIZE else None
        self.title = caption(scene)
        self._strip = text_strip([self.title, None, None], 3 * size, size)
        self._strip.flags.writeable = False
        self.last: np.ndarray | None = None
        """The frame drawn last (None before the first step)."""
        self._traj = [(scene.start_pose[0], scene.start_pose[1])]
        self._shown: list[Retrieval] | None = None
        self._shown_at: int | None = None
        self._query: str | None = None
        self._panel_key: tuple[Any, ...] | None = None
        self._panel: np.ndarray | None = None
        self._tiles: np.ndarray | None = None  # the recalled frames, drawn once per recall
        self._recalls = 0
        self._seen_target = 0

    def frame(self, rec: StepRecord) -> np.ndarray:
        """The frame of step ``rec`` (call once per step, in order)."""
        size, scene = self.size, self.scene
        if rec.pos != self._traj[-1]:
            self._traj.append(rec.pos)
        if rec.retrievals:
            self._shown, self._shown_at, self._query = list(rec.retrievals), rec.step, rec.query
            self._tiles, self._recalls = memory_tiles(self._shown, size), self._recalls + 1
        shown_at = self._shown_at
        age = rec.step - shown_at if shown_at is not None else 0
        active = self._shown if self._shown is not None and age <= self.hold_steps else None
        key = (self._recalls, age) if active else (None, shown_at)
        if key != self._panel_key or self._panel is None:
            self._panel = memory_panel(active, size, self._query, age, shown_at, self._tiles)
            self._panel_key = key
        self._seen_target += rec.target_in_view
        top = self.painter.draw(np.asarray(self._traj, dtype=np.float64), rec, active)
        action = "-" if rec.action is None else ACTION_NAMES.get(rec.action, str(rec.action))
        mode = f"  mode {rec.mode}" if rec.mode else ""
        p = f"  p(target) {rec.p_target:.2f}" if rec.p_target is not None else ""
        nodes = f"  map nodes {len(rec.graph.positions)}" if rec.graph is not None else ""
        lines = [
            None,  # the caption, on self._strip
            f"step {rec.step}/{scene.max_steps}   action {action}   distance {rec.distance_m:.0f} m{mode}{p}",
            f"path {rec.path_length_m:.0f} m   collisions {rec.collisions}   target in view "
            f"{'YES' if rec.target_in_view else 'no'} ({self._seen_target} steps){nodes}",
        ]
        self.last = compose_frame(rec.image, top, self._panel, lines, size, self.legend, self._strip)
        return self.last


def render_frames(
    scene: Scene,
    steps: Iterable[StepRecord],
    size: int = 256,
    summary: Mapping[str, Any] | None = None,
    hold_frames: int = 10,
    hold_steps: int = RETRIEVAL_HOLD_STEPS,
) -> Iterator[np.ndarray]:
    """RGB frames of a finished episode: one per step, then ``hold_frames`` copies of the summary.

    The one rendering path of the recorder and the replay tool. A retrieval stays in the memory
    panel (and its poses on the map) for ``hold_steps`` steps after its query.

    Args:
        scene: the static scene (:meth:`Scene.from_env`, placed in its sequence by :meth:`Scene.placed`).
        steps: one :class:`StepRecord` per ``env.step``.
        size: panel side in pixels (rounded up to an even number); from ``DETAIL_MIN_SIZE`` up,
            a legend of the map goes under the text.
        summary: the episode's metrics record (``success``, ``spl``, ``steps``, ``path_length`` ...);
            None: no summary frames.
        hold_frames: how many times the summary frame is repeated.
        hold_steps: how long a retrieval stays on screen.
    """
    renderer = FrameRenderer(scene, size, hold_steps)
    for rec in steps:
        yield renderer.frame(rec)
    if summary is not None and renderer.last is not None:
        yield from summary_frames(renderer.last, summary, hold_frames)


def summary_frames(last: np.ndarray, summary: Mapping[str, Any], hold_frames: int) -> Iterator[np.ndarray]:
    """The summary frame (:func:`summary_frame`) ``hold_frames`` times: one array, drawn once."""
    frame = summary_frame(last, summary)
    for _ in range(hold_frames):
        yield frame
