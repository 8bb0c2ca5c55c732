"""``embodmem-bench export``: a split's episodes as an offline dataset (Parquet, LeRobot v3-like layout).

An agent runs the spec's sequences of the chosen groups on the split's worlds through the runner's own
episode loop (:func:`embodmem.runner.sequence_steps`, warm, the spec's seed and starts), and every
observation it acted on is written with the action it took: the camera frame (PNG), the believed and
the true pose, the sonar, the mission. Each episode row adds its measures, the seabed it ran in
(every cell's kind: walls, rocks, objects), and the agent's own map at the episode's end (occupancy
from sonar, cells the camera searched). Each object instance gets a row with its cells: the ground
truth a memory probe decodes against. The same command and seeds regenerate the same frames bit for
bit (``meta/info.json`` holds both), as Memory Maze ships its generator with its data.

Layout (docs/dataset.md)::

    meta/info.json                                   format, version, features, totals, generator
    meta/stats.json                                  min / max / mean / std of numeric features
    meta/episodes/chunk-000/file-000.parquet         one row per episode
    meta/objects/chunk-000/file-000.parquet          one row per object instance per episode
    data/chunk-000/file-000.parquet                  one row per frame (file-001... past frames_per_file)

Needs pyarrow (``pip install 'embodmem[dataset]'``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from embodmem.bench.spec import SpecError, load_spec, spec_hash

if TYPE_CHECKING:
    import pyarrow as pa

    from embodmem.agents.base import Agent, Observation
    from embodmem.envs.underwater import UnderwaterEnv
    from embodmem.runner import EpisodeResult

DATASET_FORMAT = "embodmem-dataset"
DATASET_VERSION = 1
FRAMES_PER_FILE = 50_000
CHUNK = "chunk-000"
MAP_UNKNOWN, MAP_FREE, MAP_OCCUPIED, MAP_SEARCHED = 0, 1, 2, 4
"""Codes of ``agent_map``: unknown, free, occupied (from sonar), plus 4 where the camera searched."""


def require_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise SpecError("the dataset needs pyarrow: pip install 'embodmem[dataset]'") from None


@dataclass(frozen=True)
class ExportRequest:
    split: str
    out: Path
    worlds: int | None = None
    agent: str = "memory"
    groups: tuple[str, ...] = ("category",)
    spec_version: int = 1
    frames_per_file: int = FRAMES_PER_FILE


@dataclass
class ExportInfo:
    """What ``meta/info.json`` holds besides the features (returned by :func:`export_dataset`)."""

    total_episodes: int = 0
    total_frames: int = 0
    files: list[str] = field(default_factory=list)
    seconds: float = 0.0
    """Wall time of the whole export."""
    setup_seconds: float = 0.0
    """Of which loading the agent's model (CLIP)."""
    recording_seconds: float = 0.0
    """Of which recording: PNG encoding, Parquet writing, the episode and object rows."""
    bytes: int = 0


def frame_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("index", pa.int64()),
            ("episode_index", pa.int32()),
            ("frame_index", pa.int32()),
            ("observation.image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
            ("observation.pose", pa.list_(pa.float32(), 3)),
            ("observation.sonar", pa.list_(pa.float32())),
            ("observation.mission", pa.string()),
            ("state.true_pose", pa.list_(pa.int16(), 3)),
            ("action", pa.int8()),
        ]
    )


FEATURES: dict[str, dict[str, object]] = {
    "observation.image": {
        "dtype": "image",
        "shape": [64, 64, 3],
        "names": ["height", "width", "rgb"],
        "encoding": "png",
    },
    "observation.pose": {
        "dtype": "float32",
        "shape": [3],
        "names": ["x", "y", "heading"],
        "note": "what the robot believes (odometry)",
    },
    "observation.sonar": {"dtype": "float32", "shape": ["sonar_beams"], "note": "metres per beam"},
    "observation.mission": {"dtype": "string", "shape": [1]},
    "state.true_pose": {
        "dtype": "int16",
        "shape": [3],
        "names": ["x", "y", "heading"],
        "note": "privileged: the true cell",
    },
    "action": {"dtype": "int8", "shape": [1], "note": "embodmem.envs.spec.Action, taken on this frame"},
}


def _png(image: np.ndarray) -> bytes:
    import cv2

    ok, encoded = cv2.imencode(".png", np.ascontiguousarray(image[..., ::-1]))
    assert ok, "PNG encoding failed"
    return bytes(encoded.tobytes())


def agent_map(agent: Agent) -> np.ndarray | None:
    """The agent's map as codes (:data:`MAP_FREE` ...), or None for an agent without a grid."""
    from embodmem.agents.explorer import FrontierExplorer

    grid = agent.grid if isinstance(agent, FrontierExplorer) else None
    if grid is None:
        return None
    out = np.zeros(grid.free.shape, np.uint8)
    out[grid.free] = MAP_FREE
    out[grid.occupied] = MAP_OCCUPIED
    out[grid.searched] |= MAP_SEARCHED
    return out


class _Writer:
    """Frames into ``data/chunk-000/file-NNN.parquet``, one row group per episode."""

    def __init__(self, root: Path, frames_per_file: int):
        self.root, self.frames_per_file = root, frames_per_file
        self.writer: object | None = None
        self.in_file = 0
        self.files: list[str] = []

    def write(self, table: pa.Table) -> None:
        import pyarrow.parquet as pq

        if self.writer is None or self.in_file >= self.frames_per_file:
            self.close()
            name = f"data/{CHUNK}/file-{len(self.files):03d}.parquet"
            (self.root / name).parent.mkdir(parents=True, exist_ok=True)
            self.writer = pq.ParquetWriter(self.root / name, table.schema, compression="zstd")
            self.files.append(name)
            self.in_file = 0
        assert isinstance(self.writer, pq.ParquetWriter)
        self.writer.write_table(table)
        self.in_file += table.num_rows

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()  # type: ignore[attr-defined]
            self.writer = None


@dataclass(frozen=True)
class _Lane:
    """Which sequence run the frames being recorded belong to."""

    group: str
    sequence: str
    world: int
    seed: int
    condition: str


class _Recorder:
    """Turns the observations, actions and ended episodes of sequence runs into dataset rows."""

    def __init__(self, writer: _Writer):
        self.writer = writer
        self.episodes: list[dict[str, object]] = []
        self.objects: list[dict[str, object]] = []
        self.index = 0
        self.frames: list[tuple[Observation, tuple[int, int, int]]] = []
        self.actions: list[int] = []
        self.values: dict[str, list[np.ndarray]] = {"observation.pose": [], "state.true_pose": [], "action": []}
        self.seconds = 0.0
        """Time spent recording (what the export adds to running the episodes)."""

    def observe(self, obs: Observation, env: UnderwaterEnv) -> None:
        self.frames.append((obs, (int(env.agent_pos[0]), int(env.agent_pos[1]), int(env.agent_dir))))

    def timed_end(self, lane: _Lane, env: UnderwaterEnv, agent: Agent, result: EpisodeResult) -> None:
        started = time.perf_counter()
        self.end_episode(lane, result, env, agent)
        self.seconds += time.perf_counter() - started

    def act(self, action: int) -> None:
        self.actions.append(action)

    def end_episode(self, lane: _Lane, result: EpisodeResult, env: UnderwaterEnv, agent: Agent) -> None:
        import pyarrow as pa

        record, truth = result.record, env.ground_truth()
        n = len(self.actions)
        frames = self.frames[:n]
        poses = np.asarray([o["pose"] for o, _ in frames], np.float32).reshape(-1, 3)
        true_poses = np.asarray([p for _, p in frames], np.int16).reshape(-1, 3)
        schema = frame_schema()
        table = pa.table(
            {
                "index": pa.array(range(self.index, self.index + n), pa.int64()),
                "episode_index": pa.array([len(self.episodes)] * n, pa.int32()),
                "frame_index": pa.array(range(n), pa.int32()),
                "observation.image": pa.array(
                    [{"bytes": _png(o["image"]), "path": None} for o, _ in frames],
                    schema.field("observation.image").type,
                ),
                "observation.pose": pa.array(poses.tolist(), schema.field("observation.pose").type),
                "observation.sonar": pa.array(
                    [np.asarray(o["sonar"], np.float32).tolist() for o, _ in frames], pa.list_(pa.float32())
                ),
                "observation.mission": pa.array([str(o["mission"]) for o, _ in frames], pa.string()),
                "state.true_pose": pa.array(true_poses.tolist(), schema.field("state.true_pose").type),
                "action": pa.array(self.actions, pa.int8()),
            },
            schema=schema,
        )
        self.writer.write(table)
        self.values["observation.pose"].append(poses.astype(np.float64))
        self.values["state.true_pose"].append(true_poses.astype(np.float64))
        self.values["action"].append(np.asarray(self.actions, np.float64))
        grid = agent_map(agent)
        episode_index = len(self.episodes)
        self.episodes.append(
            {
                "episode_index": episode_index,
                "group": lane.group,
                "sequence": lane.sequence,
                "task_index": record.task_index,
                "task": record.task,
                "mission": truth.mission,
                "world_seed": lane.world,
                "world_digest": truth.world.digest(),
                "seed": lane.seed,
                "agent": record.agent,
                "condition": lane.condition,
                "length": n,
                "dataset_from_index": self.index,
                "dataset_to_index": self.index + n,
                "success": record.success,
                "spl": record.spl,
                "world_size": truth.world.size,
                "world_kinds": truth.world.kinds.reshape(-1).tolist(),
                "agent_map": None if grid is None else grid.reshape(-1).tolist(),
            }
        )
        for kind in _target_kinds_present(truth.world.kinds):
            for i, cells in enumerate(truth.world.instance_cells(kind)):
                self.objects.append(
                    {
                        "episode_index": episode_index,
                        "kind": kind,
                        "instance": i,
                        "variant": truth.world.variant_of(kind, i).name,
                        "x": float(cells[:, 0].mean()),
                        "y": float(cells[:, 1].mean()),
                        "cells": cells.astype(np.int16).tolist(),
                    }
                )
        self.index += n
        self.frames, self.actions = [], []

    def stats(self) -> dict[str, dict[str, list[float] | float | None]]:
        out: dict[str, dict[str, list[float] | float | None]] = {}
        for key, parts in self.values.items():
            values = np.concatenate(parts) if parts else np.zeros((0,))
            defined = values.size > 0
            out[key] = {
                name: getattr(np, name)(values, axis=0).tolist() if defined else None
                for name in ("min", "max", "mean", "std")
            }
        return out


def export_dataset(request: ExportRequest, argv: list[str] | None = None) -> ExportInfo:
    """Write the dataset into ``request.out`` (which must not hold one yet); its totals."""
    require_pyarrow()
    import pyarrow as pa
    import pyarrow.parquet as pq
    from omegaconf import OmegaConf

    from embodmem.agents.base import MemoryCarrier
    from embodmem.agents.registry import get_agent_spec
    from embodmem.app import build_agent, build_embedder, build_env, experiment_plan
    from embodmem.atomic import atomic_write_json
    from embodmem.bench.agents import resolve_agent
    from embodmem.bench.run import job_config
    from embodmem.condition import Condition
    from embodmem.embedding.embedder import ClipEmbedder
    from embodmem.lockstep import EnvStep
    from embodmem.runner import StepOutput, sequence_steps

    spec = load_spec(request.spec_version)
    worlds = spec.world_seeds(request.split, request.worlds)
    unknown = [g for g in request.groups if g not in spec.groups]
    if unknown or not request.groups:
        raise SpecError(
            f"--groups: {unknown[0] if unknown else ''!r} is not an episode group; valid: {', '.join(spec.groups)}"
        )
    choice = resolve_agent(request.agent)
    if (request.out / "meta" / "info.json").exists():
        raise SpecError(f"--out: {request.out} already holds a dataset; choose another directory")
    started = time.perf_counter()
    writer = _Writer(request.out, request.frames_per_file)
    recorder = _Recorder(writer)
    embedders: dict[str, ClipEmbedder] = {}  # one per embedder config: a spec may fix another for a group
    setup = 0.0
    for group in request.groups:
        cfg = job_config(spec, choice, "open", request.split, group, worlds, [])
        plan = experiment_plan(cfg, request.out)
        name = plan.runs[0][0]
        embedder = None
        if get_agent_spec(name).needs_embedder:
            key = OmegaConf.to_yaml(cfg.embedder)
            if key not in embedders:
                loading = time.perf_counter()
                embedders[key] = build_embedder(cfg)
                setup += time.perf_counter() - loading
            embedder = embedders[key]
        for sequence, tasks in plan.sequences:
            for world in worlds:
                env = build_env(cfg, tasks, world)
                agent = build_agent(name, cfg, embedder, env, plan.seed)
                condition = Condition.warm if isinstance(agent, MemoryCarrier) else Condition.single
                lane = _Lane(group, sequence, world, plan.seed, str(condition))
                steps = sequence_steps(
                    env,
                    agent,
                    plan.sequence_spec(sequence, tasks, world, condition),
                    f"export-{group}",
                    sleep_between_tasks=plan.sleep_between_tasks and condition.carries_memory,
                    on_episode=partial(recorder.timed_end, lane, env, agent),
                    digest_observations=False,
                )
                reply: StepOutput | None = None
                while True:  # the runner's sequential driver, recording what passes through it
                    try:
                        pause = steps.send(reply)
                    except StopIteration:
                        break
                    reply = None
                    if isinstance(pause, EnvStep):
                        recorder.act(int(pause.action))
                        reply = pause.env.step(pause.action)
                    else:
                        recorder.observe(pause, env)
    writer.close()
    meta = request.out / "meta"
    episodes_path = meta / "episodes" / CHUNK / "file-000.parquet"
    objects_path = meta / "objects" / CHUNK / "file-000.parquet"
    for path, rows in ((episodes_path, recorder.episodes), (objects_path, recorder.objects)):
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), path, compression="zstd")
    atomic_write_json(meta / "stats.json", recorder.stats())
    info = ExportInfo(
        len(recorder.episodes),
        recorder.index,
        writer.files,
        round(time.perf_counter() - started, 3),
        round(setup, 3),
        round(recorder.seconds, 3),
    )
    info.bytes = sum(p.stat().st_size for p in request.out.rglob("*.parquet"))
    atomic_write_json(meta / "info.json", _info_json(request, info, worlds, argv, episodes_path, objects_path))
    return info


def _info_json(
    request: ExportRequest, info: ExportInfo, worlds: list[int], argv: list[str] | None, episodes: Path, objects: Path
) -> dict[str, object]:
    import sys

    from embodmem import __version__
    from embodmem.provenance import git_commit

    spec = load_spec(request.spec_version)
    command = argv if argv is not None else ["embodmem-bench", *sys.argv[1:]]
    return {
        "format": DATASET_FORMAT,
        "format_version": DATASET_VERSION,
        "codebase_version": f"embodmem {__version__}",
        "layout": "LeRobotDataset v3-like: data/chunk-XXX/file-XXX.parquet, meta/episodes/..., meta/info.json",
        "fps": None,
        "total_episodes": info.total_episodes,
        "total_frames": info.total_frames,
        "data_files": info.files,
        "episodes_file": str(episodes.relative_to(request.out)),
        "objects_file": str(objects.relative_to(request.out)),
        "features": FEATURES,
        "map_codes": {
            "unknown": MAP_UNKNOWN,
            "free": MAP_FREE,
            "occupied": MAP_OCCUPIED,
            "searched_flag": MAP_SEARCHED,
        },
        "splits": {request.split: f"0:{info.total_episodes}"},
        "generator": {
            "command": " ".join(command),
            "spec_version": spec.version,
            "spec_sha256": spec_hash(spec.version),
            "split": request.split,
            "worlds": worlds,
            "seed": spec.seed,
            "agent": request.agent,
            "groups": list(request.groups),
            "package_version": __version__,
            "commit": git_commit(),
        },
        "sensing": spec.sensing,
    }


def _target_kinds_present(kinds: np.ndarray) -> list[str]:
    from embodmem.envs.objects import KINDS

    present = set(np.unique(kinds).tolist())
    return [k.name for i, k in enumerate(KINDS) if i in present and k.is_target]
