"""The experiment loop: task sequences in one persistent world, warm and cold, with metrics and logs.

Read :func:`run_episode` first: it is the whole interaction between environment and agent.
:func:`run_sequence` chains episodes over a task sequence (memory kept = warm, memory reset before
each task = cold), and :func:`run_experiment` runs the conditions and baselines over world seeds and
writes ``metrics.jsonl``, per-episode logs and the summary tables.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from embodmem.agents.base import Agent
from embodmem.atomic import atomic_append_jsonl, atomic_write_bytes
from embodmem.episode_log import LOG_FORMAT, write_log
from embodmem.metrics import EpisodeMeasures
from embodmem.envs.spec import ACTION_NAMES, Action
from embodmem.envs.underwater import UnderwaterEnv


class Profiler:
    """Wall time per named section, accumulated over a run (to know which part is slow)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    @contextmanager
    def section(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - start
            self.calls[name] += 1

    def table(self, steps: int) -> list[dict[str, Any]]:
        """Rows: section, total seconds, microseconds per step, share of the total."""
        total = sum(v for k, v in self.seconds.items() if "/" not in k) or 1e-12
        return [
            {"section": k, "seconds": round(v, 3), "us_per_step": round(1e6 * v / max(steps, 1), 1), "share": round(v / total, 3)}
            for k, v in sorted(self.seconds.items(), key=lambda kv: -kv[1])
        ]


def observation_digest(obs: dict[str, Any]) -> str:
    """Short hash of everything an agent sees; a replay must reproduce it exactly."""
    h = hashlib.blake2b(digest_size=8)
    for key in sorted(obs):
        value = obs[key]
        h.update(key.encode())
        h.update(value.encode() if isinstance(value, str) else np.ascontiguousarray(value).tobytes())
    return h.hexdigest()


@dataclass
class EpisodeResult:
    """What one episode produced: its metrics record and the log needed to replay it."""

    record: dict[str, Any]
    log: dict[str, Any]
    seen_kinds: set[str] = field(default_factory=set)


def run_episode(
    env: UnderwaterEnv,
    agent: Agent,
    reset_options: dict[str, Any],
    episode_seed: int,
    profiler: Profiler | None = None,
    on_step: Callable[[dict[str, Any]], None] | None = None,
) -> EpisodeResult:
    """Run one task to its end. The agent sees observations only; ``info`` feeds the metrics."""
    profiler = profiler or Profiler()
    obs, info = env.reset(seed=episode_seed, options=reset_options)
    agent.reset(obs, env.sensor_spec)
    measures = EpisodeMeasures()
    measures.reset(info)
    actions: list[int] = []
    digests = [observation_digest(obs)]
    retrievals: list[dict[str, Any]] = []
    seen = {k for k, _ in info["visible_instances"]}
    start = time.perf_counter()
    done = False
    while not done:
        with profiler.section("agent"):
            action = int(agent.act(obs))
        with profiler.section("env"):
            obs, _, terminated, truncated, info = env.step(action)
        measures.update(action, info)
        actions.append(action)
        digests.append(observation_digest(obs))
        seen.update(k for k, _ in info["visible_instances"])
        if on_step is not None:
            on_step({"obs": obs, "info": info, "action": action, "agent": agent})
        if agent.trace.retrievals and agent.trace.query:
            retrievals.append(
                {
                    "step": len(actions),
                    "query": agent.trace.query,
                    "hits": [[r.score, r.node, list(r.pose), r.task, r.step] for r in agent.trace.retrievals[:5]],
                }
            )
            agent.trace.retrievals = []
        done = terminated or truncated
    agent.end_task(bool(info["success"]))
    record = measures.get()
    record["wall_time_s"] = round(time.perf_counter() - start, 4)
    record.update(agent.episode_stats())
    log = {
        "format": LOG_FORMAT,
        "world_seed": env.world_seed,
        "world_digest": env.world.digest(),
        "task": env.task.name,
        "episode_seed": episode_seed,
        "start_pose": list(info["start_pose"]),
        "start": reset_options.get("start"),
        "actions": actions,
        "action_names": [ACTION_NAMES[a] for a in actions],
        "obs_digests": digests,
        "retrievals": retrievals,
        "success": bool(info["success"]),
    }
    return EpisodeResult(record, log, seen)


@dataclass
class SequenceSpec:
    """One task sequence run: which tasks, which world, which condition."""

    sequence: str
    tasks: tuple[str, ...]
    world_seed: int
    seed: int
    condition: str
    """"warm" (memory carried over), "cold" (memory reset before each task) or "single" (no memory)."""
    start: str = "fixed0"
    start_poses: list[tuple[int, int, int]] | None = None
    """Explicit start per task (cold runs reuse the warm run's starts so both face the same tasks)."""


def episode_seed(seed: int, task_index: int) -> int:
    """Same seed and task position, same fish and particles, in every condition."""
    return seed * 1000 + task_index


def run_sequence(
    env: UnderwaterEnv,
    agent: Agent,
    spec: SequenceSpec,
    run_id: str,
    profiler: Profiler | None = None,
    sleep_between_tasks: bool = False,
    on_episode: Callable[[EpisodeResult], None] | None = None,
    on_step: Callable[[dict[str, Any]], None] | None = None,
) -> list[EpisodeResult]:
    """Run the tasks of ``spec`` one after another in one world."""
    env_world = {"world_seed": spec.world_seed}
    results: list[EpisodeResult] = []
    seen_before: set[str] = set()
    memory = getattr(agent, "memory", None)
    for i, task in enumerate(spec.tasks):
        if spec.condition == "cold" and hasattr(agent, "reset_memory"):
            agent.reset_memory()
        if hasattr(agent, "set_context"):
            agent.set_context(run_id, task, i)
        options: dict[str, Any] = {"task": task, **env_world}
        if spec.start_poses is not None:
            options["start_pose"] = spec.start_poses[i]
        else:
            options["start"] = spec.start if (spec.start != "continue" or i > 0) else "fixed0"
        result = run_episode(env, agent, options, episode_seed(spec.seed, i), profiler, on_step)
        target = env.task.target
        mem_stats = memory.stats() if memory is not None else {}
        result.record.update(
            {
                "run_id": run_id,
                "agent": agent.name,
                "condition": spec.condition,
                "world_seed": spec.world_seed,
                "seed": spec.seed,
                "sequence": spec.sequence,
                "task_index": i + 1,
                "task": task,
                "target_seen_before": target in seen_before,
                "eval_after": None,
                "memory_frames": int(mem_stats.get("frames_kept", 0)),
                "memory_bytes": int(mem_stats.get("code_bytes", 0)),
            }
        )
        result.log["task_index"] = i + 1
        result.log["condition"] = spec.condition
        seen_before |= result.seen_kinds
        results.append(result)
        if on_episode is not None:
            on_episode(result)
        if sleep_between_tasks and memory is not None and spec.condition == "warm" and i + 1 < len(spec.tasks):
            memory.sleep()
    return results


def gem_evaluations(
    env: UnderwaterEnv,
    agent: Agent,
    spec: SequenceSpec,
    run_id: str,
    after: int,
) -> list[dict[str, Any]]:
    """Row ``after`` of the GEM matrix: every task of the sequence on a copy of the current memory.

    The copy is made through save/load, so evaluation never writes into the memory being carried.
    """
    memory = getattr(agent, "memory", None)
    records = []
    tmp = Path(tempfile.mkdtemp(prefix="embodmem-gem-"))
    try:
        if memory is not None:
            memory.save(tmp / "mem")
        grid = None if getattr(agent, "grid", None) is None else (agent.grid.free.copy(), agent.grid.occupied.copy())
        for j, task in enumerate(spec.tasks):
            if memory is not None:
                agent.memory = type(memory).load(tmp / "mem")
            if grid is not None:
                agent.grid.free[:], agent.grid.occupied[:] = grid
            options = {"task": task, "world_seed": spec.world_seed, "start": "fixed0"}
            result = run_episode(env, agent, options, episode_seed(spec.seed, 100 + j))
            result.record.update(
                {
                    "run_id": run_id,
                    "agent": agent.name,
                    "condition": "eval",
                    "world_seed": spec.world_seed,
                    "seed": spec.seed,
                    "sequence": spec.sequence,
                    "task_index": j + 1,
                    "task": task,
                    "target_seen_before": None,
                    "eval_after": after,
                    "memory_frames": 0,
                    "memory_bytes": 0,
                }
            )
            records.append(result.record)
        if memory is not None:
            agent.memory = memory
        if grid is not None:
            agent.grid.free[:], agent.grid.occupied[:] = grid
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return records


def episode_key(record: dict[str, Any]) -> tuple[Any, ...]:
    """Stable identity of an episode in a run directory (what ``resume`` matches on)."""
    return tuple(record.get(k) for k in ("sequence", "world_seed", "seed", "agent", "condition", "task_index", "eval_after", "split", "agent_variant"))


def read_metrics(path: Path, repair: bool = False) -> list[dict[str, Any]]:
    """Records of a ``metrics.jsonl``. A torn last line (a crash mid-write) is dropped with a message
    and, if ``repair``, removed from the file; any other bad line is a ``ValueError`` naming it."""
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")
    records = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise ValueError("not a JSON object")
        except ValueError as err:
            if any(rest.strip() for rest in lines[i + 1 :]):
                raise ValueError(f"{path}: line {i + 1} is not a metrics record ({err}); fix or remove it") from None
            print(f"{path}: dropped a truncated last line ({len(line)} bytes); that episode runs again", file=sys.stderr)
            if repair:
                atomic_write_bytes(path, b"".join(ln + b"\n" for ln in lines[:i] if ln.strip()))
            break
        records.append(rec)
    return records


class RunWriter:
    """Writes a run's outputs as they come: metrics.jsonl (atomically, per episode) and episode logs.

    With ``resume``, the records already in metrics.jsonl are kept and episodes with their
    :func:`episode_key` are not written again.
    """

    def __init__(self, out_dir: Path, episode_logs: bool = True, resume: bool = False):
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.metrics_path = self.out_dir / "metrics.jsonl"
        self.episode_logs = episode_logs
        self.records: list[dict[str, Any]] = read_metrics(self.metrics_path, repair=True) if resume else []
        self.done = {episode_key(r) for r in self.records}

    def episode_name(self, record: dict[str, Any]) -> str:
        return (
            f"seq={record['sequence']}-world={record['world_seed']}-seed={record['seed']}-"
            f"task={record['task_index']}-agent={record['agent']}-cond={record['condition']}"
        )

    def write(self, result: EpisodeResult, env_kwargs: dict[str, Any]) -> None:
        record = result.record
        if episode_key(record) in self.done:
            return
        if self.episode_logs:
            name = self.episode_name(record)
            path = self.out_dir / "episodes" / f"{name}.json"
            write_log(path, {**result.log, "env": env_kwargs, "record": record})
            record["episode_log"] = str(path.relative_to(self.out_dir))
        atomic_append_jsonl(self.metrics_path, [record])
        self.records.append(record)

    def write_records(self, records: list[dict[str, Any]]) -> None:
        records = [r for r in records if episode_key(r) not in self.done]
        atomic_append_jsonl(self.metrics_path, records)
        self.records.extend(records)


STOP = int(Action.STOP)
