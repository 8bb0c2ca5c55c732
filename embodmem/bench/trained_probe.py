"""Trained memory probes: a small decoder learns, on dev worlds, to read the object map and the walls
out of a memory's contents, and is scored on held-out test worlds.

Memory Maze probes an agent by training a decoder from its memory state to the maze and scoring it on
unseen mazes, beside a decoder given the maze itself (the fully observed control): the gap says what the
memory lost, whatever the decoder's hand-written cleverness. A memory here is not one vector but a set
of records placed on the grid, so the decoder is shared by every cell (a per-cell probe, as a 1x1
convolution over the map): each design turns its contents into one feature row per cell, and one
logistic regression per target (which target kind stands on the cell, if any; is the cell occupied)
is trained on the dev tours' cells. Designs:

- ``blind``: only where the cell is (the prior every design also gets);
- ``textlog``: the text log's lines (kind, confidence, the pose it was seen from), summed per kind over
  the cells each line's view covers;
- ``clip_frames``: every frame's CLIP vector with its pose, averaged over the frames whose view covers
  the cell (the keep-everything frame memory);
- ``frame_memory``: the project's frame memory (:class:`~embodmem.memory.episodic.AgentMemory`, stock
  config) fed the same vectors: its records, merged frames weighted by how many each holds;
- ``agent_map``: the generating agent's own map at the tour's end (unknown / free / occupied, searched);
- ``clip_frames_map``, ``frame_memory_map``: frames or records with the map (what the frame memory
  answerers hold: frames and a sonar map);
- ``fully_observed``: the seabed's kind at the cell (the control; it reaches 1 when the decoder can).

Example:
    >>> parse_designs("blind,fully_observed")
    ('blind', 'fully_observed')
    >>> view_weights(np.array([[2, 2, 0]]), size=5, reach=2.0, fov_deg=90.0)[0].reshape(5, 5)[2].tolist()
    [0.0, 0.0, 0.0, 1.0, 1.0]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from embodmem.bench.export import MAP_FREE, MAP_OCCUPIED, MAP_SEARCHED
from embodmem.bench.schema import Interval
from embodmem.stats import mean_ci

if TYPE_CHECKING:
    from embodmem.agents.base import RecognitionEmbedder
    from embodmem.bench.dataset import Episode, OfflineDataset

TRAINED_DESIGNS: tuple[str, ...] = (
    "blind",
    "textlog",
    "clip_frames",
    "frame_memory",
    "agent_map",
    "clip_frames_map",
    "frame_memory_map",
    "fully_observed",
)
"""Memory designs the trained probe reads, the blind baseline first and the fully observed control last."""
SEED = 0
WEIGHT_DECAY = 1e-3
"""L2 penalty on the standardised features' weights (fixed, not tuned on test worlds)."""
MAX_ITERATIONS = 200


def parse_designs(text: str) -> tuple[str, ...]:
    """Comma-separated design names, refused in one line when one is unknown."""
    names = tuple(d.strip() for d in text.split(",") if d.strip())
    if not names:
        raise ValueError(f"--designs: {text!r} names no design; allowed: {', '.join(TRAINED_DESIGNS)}")
    for name in names:
        if name not in TRAINED_DESIGNS:
            raise ValueError(f"--designs: {name!r} is not allowed; allowed: {', '.join(TRAINED_DESIGNS)}")
    return names


@dataclass(frozen=True)
class TourContents:
    """What one tour leaves in each memory design, and the world it ran in (the truth)."""

    world_seed: int
    seabed: np.ndarray
    """(size, size) uint8 kinds (embodmem.envs.objects.KINDS), [y, x]."""
    agent_map: np.ndarray | None
    """(size, size) uint8 map codes at the tour's end, or None."""
    poses: np.ndarray
    """(T, 3) int: believed [x, y, heading] of each frame."""
    vectors: np.ndarray
    """(T, D) float32: each frame's CLIP vector."""
    log_kind: np.ndarray
    """(T,) int: the text log's line for the frame, as an index into TARGET_KINDS; -1: no line."""
    log_confidence: np.ndarray
    """(T,) float: that line's confidence (0 without a line)."""
    reach: float
    """View range in cells."""
    fov_deg: float
    record_poses: np.ndarray | None = None
    """(R, 3) int: the frame memory's records' [x, y, heading] (None: not built)."""
    record_vectors: np.ndarray | None = None
    """(R, D) float32: their stored vectors."""
    record_counts: np.ndarray | None = None
    """(R,): how many frames each record merged."""


@dataclass(frozen=True)
class ProbeScore:
    """One design's decoding of one test tour."""

    design: str
    world_seed: int
    object_cells: float
    """Share of all cells whose content (no target, or which target kind) was decoded right."""
    object_kind: float
    """Share of the cells holding a target whose kind was decoded right."""
    object_ap: float
    """Average precision of each present target kind's per-cell probability, averaged over kinds."""
    wall_cells: float
    """Share of cells whose occupancy (anything but open water) was decoded right."""
    wall_iou: float
    kind_ap: tuple[float, ...]
    """Per target kind (TARGET_KINDS order): its average precision; nan where the world has none."""


@dataclass(frozen=True)
class TrainedProbeRow:
    design: str
    tours: int
    object_cells: Interval
    object_kind: Interval
    object_ap: Interval
    wall_cells: Interval
    wall_iou: Interval
    kind_ap: tuple[Interval, ...]
    """Per target kind (TARGET_KINDS order), over the test tours whose world holds it."""


# ----------------------------------------------------------------------------- truth and features


def targets(seabed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per cell (row-major): the target class (0 none, 1 + index into TARGET_KINDS) and occupancy."""
    from embodmem.envs.objects import KINDS

    to_class = np.zeros(len(KINDS), np.int64)
    for i, k in enumerate(t for t in KINDS if t.is_target):
        to_class[[j for j, kind in enumerate(KINDS) if kind is k][0]] = i + 1
    flat = seabed.reshape(-1).astype(np.int64)
    return to_class[flat], (flat != 0).astype(np.float64)


def view_weights(poses: np.ndarray, size: int, reach: float, fov_deg: float) -> np.ndarray:
    """(T, size*size): 1 where a frame's view cone (within ``reach`` cells and half the field of view
    of the heading) covers a cell centre, else 0."""
    from embodmem.envs.spec import DIR_TO_VEC

    ys, xs = np.mgrid[0:size, 0:size]
    cx, cy = xs.reshape(-1) + 0.5, ys.reshape(-1) + 0.5
    half = math.radians(fov_deg) / 2 + 1e-9
    out = np.zeros((len(poses), size * size))
    for t, (x, y, h) in enumerate(np.asarray(poses, np.int64)):
        dx, dy = cx - (x + 0.5), cy - (y + 0.5)
        dist = np.hypot(dx, dy)
        vx, vy = DIR_TO_VEC[int(h)]
        angle = np.arccos(np.clip((dx * vx + dy * vy) / np.maximum(dist, 1e-9), -1.0, 1.0))
        out[t] = (dist > 0) & (dist <= reach) & (angle <= half)
    return out


def _prior(size: int) -> np.ndarray:
    ys, xs = np.mgrid[0:size, 0:size]
    x, y = (xs.reshape(-1) + 0.5) / size, (ys.reshape(-1) + 0.5) / size
    edge = np.minimum.reduce([x, y, 1 - x, 1 - y])
    return np.stack([x, y, x * x, y * y, x * y, edge], axis=1)


def _frames(vectors: np.ndarray, weights: np.ndarray) -> np.ndarray:
    count = weights.sum(axis=0)
    mean = (weights.T @ vectors.astype(np.float64)) / np.maximum(count, 1.0)[:, None]
    return np.concatenate([mean, np.log1p(count)[:, None], (count > 0)[:, None]], axis=1)


def _textlog(tour: TourContents, weights: np.ndarray) -> np.ndarray:
    from embodmem.envs.objects import TARGET_KINDS

    lines = np.zeros((len(tour.log_kind), len(TARGET_KINDS)))
    logged = tour.log_kind >= 0
    lines[np.nonzero(logged)[0], tour.log_kind[logged]] = tour.log_confidence[logged]
    per_kind = weights.T @ lines
    return np.concatenate([np.log1p(per_kind), np.log1p(weights[logged].sum(axis=0))[:, None]], axis=1)


def _map(agent_map: np.ndarray | None, size: int) -> np.ndarray:
    if agent_map is None:
        raise ValueError("design 'agent_map' needs the dataset's agent_map (exported with a mapping agent)")
    codes = agent_map.reshape(-1)
    occupied = ((agent_map & 3) == MAP_OCCUPIED).astype(np.float64)
    padded = np.pad(occupied, 1)
    around = np.zeros_like(occupied)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            around += padded[1 + dy : 1 + dy + size, 1 + dx : 1 + dx + size]
    return np.stack(
        [
            (codes & 3) == 0,
            (codes & 3) == MAP_FREE,
            (codes & 3) == MAP_OCCUPIED,
            (codes & MAP_SEARCHED) > 0,
            around.reshape(-1) - occupied.reshape(-1),
        ],
        axis=1,
    ).astype(np.float64)


def features(design: str, tour: TourContents) -> np.ndarray:
    """(size*size, F): the design's row per cell, after the position prior every design gets."""
    from embodmem.envs.objects import KINDS

    size = tour.seabed.shape[0]
    parts = [_prior(size)]
    if design in ("textlog", "clip_frames", "clip_frames_map"):
        weights = view_weights(tour.poses, size, tour.reach, tour.fov_deg)
        if design == "textlog":
            parts.append(_textlog(tour, weights))
        else:
            parts.append(_frames(tour.vectors, weights))
    if design in ("frame_memory", "frame_memory_map"):
        if tour.record_poses is None or tour.record_vectors is None or tour.record_counts is None:
            raise ValueError(f"design {design!r} needs the frame memory's records (tour_contents builds them)")
        weights = view_weights(tour.record_poses, size, tour.reach, tour.fov_deg) * tour.record_counts[:, None]
        parts.append(_frames(tour.record_vectors, weights))
    if design in ("agent_map", "clip_frames_map", "frame_memory_map"):
        parts.append(_map(tour.agent_map, size))
    if design == "fully_observed":
        parts.append(np.eye(len(KINDS))[tour.seabed.reshape(-1).astype(np.int64)])
    return np.concatenate(parts, axis=1)


# ----------------------------------------------------------------------------- the decoder


@dataclass
class CellDecoder:
    """Two logistic regressions over standardised features: a softmax over the target classes and a
    sigmoid for occupancy, fit full-batch with L-BFGS from zero weights on one thread (deterministic)."""

    mean: np.ndarray
    scale: np.ndarray
    object_weights: np.ndarray
    wall_weights: np.ndarray

    @classmethod
    def fit(cls, x: np.ndarray, classes: np.ndarray, walls: np.ndarray, n_classes: int) -> CellDecoder:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # one thread: the same sums in the same order on any machine
        try:
            return cls._fit(torch, x, classes, walls, n_classes)
        finally:
            torch.set_num_threads(threads)

    @classmethod
    def _fit(cls, torch: Any, x: np.ndarray, classes: np.ndarray, walls: np.ndarray, n_classes: int) -> CellDecoder:
        torch.manual_seed(SEED)
        mean, scale = x.mean(axis=0), x.std(axis=0)
        scale = np.where(scale > 1e-12, scale, 1.0)
        xs = torch.from_numpy(np.concatenate([(x - mean) / scale, np.ones((len(x), 1))], axis=1))
        y, w = torch.from_numpy(classes), torch.from_numpy(walls)
        obj = torch.zeros(xs.shape[1], n_classes, dtype=torch.float64, requires_grad=True)
        wall = torch.zeros(xs.shape[1], dtype=torch.float64, requires_grad=True)
        optimiser = torch.optim.LBFGS(
            [obj, wall], max_iter=MAX_ITERATIONS, history_size=20, line_search_fn="strong_wolfe"
        )

        def loss() -> torch.Tensor:
            optimiser.zero_grad()
            value = (
                torch.nn.functional.cross_entropy(xs @ obj, y)
                + torch.nn.functional.binary_cross_entropy_with_logits(xs @ wall, w)
                + WEIGHT_DECAY * (obj[:-1].pow(2).sum() + wall[:-1].pow(2).sum())
            )
            value.backward()
            return value

        optimiser.step(loss)
        return cls(mean, scale, obj.detach().numpy().copy(), wall.detach().numpy().copy())

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per cell: class probabilities (N, classes) and occupancy probability (N,)."""
        xs = np.concatenate([(x - self.mean) / self.scale, np.ones((len(x), 1))], axis=1)
        logits = xs @ self.object_weights
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        return probs, 1.0 / (1.0 + np.exp(-(xs @ self.wall_weights)))


def average_precision(scores: np.ndarray, positive: np.ndarray) -> float:
    """Area under the precision-recall curve as the mean precision at each positive (ties broken by order).

    Example:
        >>> average_precision(np.array([0.9, 0.8, 0.1]), np.array([True, False, True]))
        0.8333333333333333
    """
    order = np.argsort(-scores, kind="stable")
    hits = positive[order]
    if not hits.any():
        return float("nan")
    precision = np.cumsum(hits) / np.arange(1, len(hits) + 1)
    return float(precision[hits].mean())


def score_tour(design: str, tour: TourContents, decoder: CellDecoder) -> ProbeScore:
    classes, walls = targets(tour.seabed)
    probs, wall_prob = decoder.predict(features(design, tour))
    said = probs.argmax(axis=1)
    objects = classes > 0
    kind_ap = tuple(
        average_precision(probs[:, k], classes == k) if (classes == k).any() else float("nan")
        for k in range(1, probs.shape[1])
    )
    said_wall, true_wall = wall_prob >= 0.5, walls > 0.5
    return ProbeScore(
        design,
        tour.world_seed,
        float(np.mean(said == classes)),
        float(np.mean(said[objects] == classes[objects])) if objects.any() else float("nan"),
        float(np.nanmean(kind_ap)) if not np.isnan(kind_ap).all() else float("nan"),
        float(np.mean(said_wall == true_wall)),
        float(np.sum(said_wall & true_wall)) / max(float(np.sum(said_wall | true_wall)), 1.0),
        kind_ap,
    )


def train_and_score(designs: Iterable[str], train: list[TourContents], test: list[TourContents]) -> list[ProbeScore]:
    """Per design: fit the decoder on every train tour's cells, score it on each test tour."""
    from embodmem.envs.objects import TARGET_KINDS

    out = []
    for design in designs:
        x = np.concatenate([features(design, t) for t in train])
        truth = [targets(t.seabed) for t in train]
        decoder = CellDecoder.fit(
            x, np.concatenate([c for c, _ in truth]), np.concatenate([w for _, w in truth]), len(TARGET_KINDS) + 1
        )
        out += [score_tour(design, t, decoder) for t in test]
    return out


def summarise(scores: list[ProbeScore]) -> list[TrainedProbeRow]:
    """Per design, the mean of each figure over test tours with a 95% interval resampling whole worlds."""

    def interval(values: list[float], worlds: list[int]) -> Interval:
        pairs = [(v, w) for v, w in zip(values, worlds) if not math.isnan(v)]
        vs, ws = [p[0] for p in pairs], [p[1] for p in pairs]
        if not vs:
            return Interval(mean=None, lo=None, hi=None, n=0)
        return Interval.of(float(np.mean(vs)), mean_ci(vs, clusters=ws), len(vs))

    rows = []
    for design in dict.fromkeys(s.design for s in scores):
        mine = [s for s in scores if s.design == design]
        worlds = [s.world_seed for s in mine]

        def figure(name: str, mine: list[ProbeScore] = mine, worlds: list[int] = worlds) -> Interval:
            return interval([float(getattr(s, name)) for s in mine], worlds)

        rows.append(
            TrainedProbeRow(
                design=design,
                tours=len(mine),
                object_cells=figure("object_cells"),
                object_kind=figure("object_kind"),
                object_ap=figure("object_ap"),
                wall_cells=figure("wall_cells"),
                wall_iou=figure("wall_iou"),
                kind_ap=tuple(interval([s.kind_ap[k] for s in mine], worlds) for k in range(len(mine[0].kind_ap))),
            )
        )
    return rows


def trained_probe_markdown(rows: list[TrainedProbeRow]) -> str:
    from embodmem.bench.board import format_interval

    lines = [
        "| design | test tours | object map: cells right | object cells: kind right | object map: AP per kind | "
        "walls: cells right | walls: IoU |",
        "|---|---:|---|---|---|---|---|",
    ]
    for r in rows:
        cells = (r.object_cells, r.object_kind, r.object_ap, r.wall_cells, r.wall_iou)
        lines.append(f"| {r.design} | {r.tours} | " + " | ".join(format_interval(c, 3) for c in cells) + " |")
    return "\n".join(lines)


def kind_ap_markdown(rows: list[TrainedProbeRow]) -> str:
    """Per design and target kind: the average precision of the kind's per-cell probability."""
    from embodmem.bench.board import format_interval
    from embodmem.envs.objects import TARGET_KINDS

    lines = ["| design | " + " | ".join(TARGET_KINDS) + " |", "|---|" + "---|" * len(TARGET_KINDS)]
    for r in rows:
        lines.append(f"| {r.design} | " + " | ".join(format_interval(c, 2) for c in r.kind_ap) + " |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- reading the dataset


def tour_contents(ds: OfflineDataset, embedder: RecognitionEmbedder) -> Iterator[TourContents]:
    """Each tour of the dataset (:func:`embodmem.bench.probe.tours`) as what the designs keep of it:
    every frame embedded once by ``embedder``, the text log read from those vectors by the EQA
    answerers' labeller (as :class:`~embodmem.eqa.answerers.TextLogAnswerer` logs them)."""
    from embodmem.bench.probe import _sensor_spec, tours
    from embodmem.envs.objects import TARGET_KINDS
    from embodmem.eqa.answerers import KindLabeller, sightings_of

    labeller = KindLabeller(embedder)
    for tour in tours(ds):
        spec = _sensor_spec(ds, int(tour[0].meta["world_seed"]), str(tour[0].meta["task"]))
        poses = np.concatenate([_rounded(e) for e in tour])
        vectors = np.concatenate([embedder.embed_images(e.images) for e in tour]).astype(np.float32)
        kinds, confidence = np.full(len(poses), -1, np.int64), np.zeros(len(poses))
        for s in sightings_of(labeller, vectors, list(range(len(poses))), [tuple(p) for p in poses.tolist()]):
            kinds[s.step], confidence[s.step] = TARGET_KINDS.index(s.kind), round(s.probability, 3)
        record_poses, record_vectors, record_counts = frame_memory_records(poses, vectors, embedder.dim)
        yield TourContents(
            int(tour[0].meta["world_seed"]),
            tour[-1].seabed,
            tour[-1].agent_map,
            poses,
            vectors,
            kinds,
            confidence,
            spec.view_range_m / spec.cell_size_m,
            spec.camera_fov_deg,
            record_poses,
            record_vectors,
            record_counts,
        )


def frame_memory_records(poses: np.ndarray, vectors: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What the stock frame memory keeps of a tour, fed as
    :class:`~embodmem.eqa.answerers.FrameMemoryAnswerer` feeds it: its records' poses, vectors and
    merged-frame counts (the long-term store's, then the short-term buffer's)."""
    from embodmem.memory import AgentMemory, FrameMeta, MemoryConfig

    memory = AgentMemory(MemoryConfig(dim=dim))
    for step, ((x, y, h), vector) in enumerate(zip(poses.tolist(), vectors)):
        memory.observe(vector, FrameMeta("probe", "tour", 0, step, float(x), float(y), int(h)))
    store, fifo = memory.store, memory.fifo
    metas = [*store.meta.metas(np.arange(len(store))), *fifo.metas]
    stored = store.vectors(store.meta.ids) if len(store) else np.zeros((0, dim), np.float32)
    out_poses = np.array([[round(m.x), round(m.y), m.heading] for m in metas], np.int64).reshape(-1, 3)
    out_vectors = np.concatenate([stored, fifo.vectors]).astype(np.float32)
    return out_poses, out_vectors, np.array([m.count for m in metas], np.float64)


def _rounded(episode: Episode) -> np.ndarray:
    p = episode.poses
    return np.stack([np.round(p[:, 0]), np.round(p[:, 1]), p[:, 2]], axis=1).astype(np.int64)
