"""Memory probing on the offline dataset: what a memory design holds, whatever policy filled it.

As Memory Maze probes an agent's state by decoding the maze from it, this feeds the dataset's frames
(one tour = every episode of one sequence in one world, in order: the experience a warm memory
carries) to each memory design through the question answerers' own readers (embodmem.eqa.answerers),
then decodes from what each kept:

- the object map: for every target kind, whether it is in the world (existence, against the world's
  objects) and, for the kinds that are, where (a point within ``WHERE_HIT_CELLS`` of an instance);
- the walls: the occupied cells of the design's own sonar map against every non-water cell of the
  seabed (precision, recall, IoU); a design without a map (the text log) holds no walls.

Two reference rows frame the designs: ``agent_map`` (the map the agent that generated the data held at
the end of the tour; walls only) and ``fully_observed``, the control that reads the seabed and the
objects themselves: what a decoder reaches with everything observed (1 by construction), so the gap
to it is what each memory lost. Objects and walls the robot never came near are in the truth too: a
probe measures what the memory holds of the world, not only of its path.

Example:
    >>> walls_scores(np.array([[1, 1], [0, 0]], bool), np.array([[1, 0], [0, 0]], bool))
    (0.5, 1.0, 0.5)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from embodmem.bench.dataset import Episode, OfflineDataset
from embodmem.bench.export import MAP_OCCUPIED
from embodmem.bench.schema import Interval
from embodmem.stats import mean_ci

if TYPE_CHECKING:
    from embodmem.agents.base import RecognitionEmbedder
    from embodmem.envs.spec import SensorSpec
    from embodmem.eqa.answerers import Answerer

PROBE_DESIGNS: tuple[str, ...] = ("frame_memory", "keep_everything", "textlog")
"""Memory designs probed through their answerers (embodmem.eqa.answerers)."""
REFERENCES: tuple[str, ...] = ("agent_map", "fully_observed")


@dataclass(frozen=True)
class TourProbe:
    """One design's decoding of one tour."""

    design: str
    world_seed: int
    existence: float | None
    """Share of target kinds whose presence was decoded right (None: not decoded)."""
    where: float | None
    """Share of present kinds located within ``WHERE_HIT_CELLS``."""
    walls: tuple[float, float, float] | None
    """(precision, recall, IoU) of occupied cells; None: the design holds no walls."""


@dataclass(frozen=True)
class ProbeRow:
    design: str
    tours: int
    existence: Interval
    where: Interval
    walls_precision: Interval
    walls_recall: Interval
    walls_iou: Interval


def walls_scores(predicted: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    """(precision, recall, IoU) of predicted occupied cells against the true ones."""
    hit = float(np.sum(predicted & truth))
    precision = hit / max(float(predicted.sum()), 1.0)
    recall = hit / max(float(truth.sum()), 1.0)
    iou = hit / max(float(np.sum(predicted | truth)), 1.0)
    return precision, recall, iou


def tours(ds: OfflineDataset) -> Iterator[list[Episode]]:
    """Episodes grouped by (group, sequence, world): each is one continuous experience."""
    current: list[Episode] = []
    for episode in ds.episodes():
        key = (episode.meta["group"], episode.meta["sequence"], episode.meta["world_seed"])
        if current and key != (current[0].meta["group"], current[0].meta["sequence"], current[0].meta["world_seed"]):
            yield current
            current = []
        current.append(episode)
    if current:
        yield current


def _sensor_spec(ds: OfflineDataset, world_seed: int, task: str) -> SensorSpec:
    from embodmem.envs.config import EnvConfig
    from embodmem.envs.entry import make_env

    return make_env(EnvConfig(**ds.info["sensing"]), (task,), world_seed).sensor_spec


def _objects_by_episode(ds: OfflineDataset) -> dict[int, dict[str, list[np.ndarray]]]:
    out: dict[int, dict[str, list[np.ndarray]]] = defaultdict(lambda: defaultdict(list))
    for row in ds.object_table().to_pylist():
        out[int(row["episode_index"])][str(row["kind"])].append(np.asarray(row["cells"], float))
    return out


def probe_tour(
    tour: list[Episode], answerers: list[Answerer], spec: SensorSpec, objects: dict[str, list[np.ndarray]]
) -> list[TourProbe]:
    """Feed the tour to every answerer, then decode objects and walls from each (and the references)."""
    from embodmem.envs.objects import TARGET_KINDS
    from embodmem.eqa.answerers import FrameMemoryAnswerer, KeepEverythingAnswerer
    from embodmem.eqa.files import Question, QuestionType
    from embodmem.eqa.scoring import WHERE_HIT_CELLS

    world = int(tour[0].meta["world_seed"])
    key = f"{world}:probe"
    for a in answerers:
        a.start_tour(key, spec)
    step = 0
    for episode in tour:
        for i in range(len(episode.actions)):
            obs = {
                "image": episode.images[i],
                "pose": episode.poses[i],
                "sonar": episode.sonar[i],
                "mission": str(episode.meta["mission"]),
            }
            for a in answerers:
                a.observe(obs, step)  # type: ignore[arg-type]
            step += 1
    seabed = tour[-1].seabed
    walls_truth = seabed != 0
    out = []
    for a in answerers:
        right, hits = [], []
        for kind in TARGET_KINDS:
            present = kind in objects
            said = a.answer(
                Question(f"{key}:{kind}:e", key, QuestionType.existence, f"is there {kind}?", (kind,), ("yes", "no"))
            )
            right.append(float((said.choice == "yes") == present))
            if present:
                point = a.answer(
                    Question(f"{key}:{kind}:w", key, QuestionType.where, f"where is {kind}?", (kind,))
                ).point
                near = point is not None and any(
                    float(np.min(np.hypot(c[:, 0] - point[0], c[:, 1] - point[1]))) <= WHERE_HIT_CELLS
                    for c in objects[kind]
                )
                hits.append(float(near))
        grid = a.map.grid if isinstance(a, FrameMemoryAnswerer | KeepEverythingAnswerer) else None
        walls = walls_scores(grid.occupied, walls_truth) if grid is not None else None
        out.append(TourProbe(a.name, world, float(np.mean(right)), float(np.mean(hits)) if hits else None, walls))
    agent_map = tour[-1].agent_map
    if agent_map is not None:
        out.append(
            TourProbe("agent_map", world, None, None, walls_scores((agent_map & 3) == MAP_OCCUPIED, walls_truth))
        )
    out.append(TourProbe("fully_observed", world, 1.0, 1.0, walls_scores(walls_truth, walls_truth)))
    return out


def build_answerers(designs: list[str], embedder: RecognitionEmbedder) -> list[Answerer]:
    from embodmem.eqa.answerers import FrameMemoryAnswerer, KeepEverythingAnswerer, TextLogAnswerer

    made = {"frame_memory": FrameMemoryAnswerer, "keep_everything": KeepEverythingAnswerer, "textlog": TextLogAnswerer}
    unknown = [d for d in designs if d not in made]
    if unknown:
        raise ValueError(f"--designs: {unknown[0]!r} is not allowed; allowed: {', '.join(PROBE_DESIGNS)}")
    return [made[d](embedder) for d in designs]


def probe_dataset(root: str | Path, designs: list[str], embedder: RecognitionEmbedder) -> list[ProbeRow]:
    """Every design's decoding over every tour of the dataset, with intervals resampling whole worlds."""
    ds = OfflineDataset(root)
    answerers = build_answerers(designs, embedder)
    objects = _objects_by_episode(ds)
    results: list[TourProbe] = []
    for tour in tours(ds):
        spec = _sensor_spec(ds, int(tour[0].meta["world_seed"]), str(tour[0].meta["task"]))
        results += probe_tour(tour, answerers, spec, objects[tour[-1].index])
    return summarise(results)


def summarise(results: list[TourProbe]) -> list[ProbeRow]:
    def interval(values: list[float | None], worlds: list[int]) -> Interval:
        pairs = [(v, w) for v, w in zip(values, worlds) if v is not None]
        if not pairs:
            return Interval(mean=None, lo=None, hi=None, n=0)
        vs, ws = [p[0] for p in pairs], [p[1] for p in pairs]
        return Interval.of(float(np.mean(vs)), mean_ci(vs, clusters=ws), len(vs))

    rows = []
    for design in dict.fromkeys(r.design for r in results):
        mine = [r for r in results if r.design == design]
        worlds = [r.world_seed for r in mine]
        walls = [r.walls for r in mine]
        rows.append(
            ProbeRow(
                design,
                len(mine),
                interval([r.existence for r in mine], worlds),
                interval([r.where for r in mine], worlds),
                *(interval([w[i] if w is not None else None for w in walls], worlds) for i in range(3)),
            )
        )
    return rows


def probe_markdown(rows: list[ProbeRow]) -> str:
    from embodmem.bench.board import format_interval

    lines = [
        "| design | tours | kinds present or absent, decoded right | present kinds located (within 2 cells) | "
        "walls precision | walls recall | walls IoU |",
        "|---|---:|---|---|---|---|---|",
    ]
    for r in rows:
        cells = (r.existence, r.where, r.walls_precision, r.walls_recall, r.walls_iou)
        lines.append(f"| {r.design} | {r.tours} | " + " | ".join(format_interval(c, 2) for c in cells) + " |")
    return "\n".join(lines)
