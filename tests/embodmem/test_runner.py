"""The experiment loop: episodes, sequences, warm vs cold, logs (embodmem/runner.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from embodmem.agents.explorer import FrontierExplorer
from embodmem.agents.memory_agent import MemoryAgent
from embodmem.agents.oracle import OracleAgent
from embodmem.condition import Condition
from embodmem.embedding.embedder import ClipEmbedder
from embodmem.envs.config import EnvConfig
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.episode_log import EpisodeLog, read_log
from embodmem.metrics_record import TIMING_FIELDS, EpisodeRecord, SequenceContext
from embodmem.profiling import Profiler
from embodmem.runner import (
    EpisodeResult,
    RunWriter,
    SequenceSpec,
    finish,
    run_episode,
    run_sequence,
    sequence_steps,
)

REQUIRED = {
    "run_id",
    "agent",
    "condition",
    "world_seed",
    "seed",
    "task_index",
    "task",
    "success",
    "spl",
    "soft_spl",
    "distance_score",
    "steps",
    "path_length",
    "shortest_path",
    "collisions",
    "memory_frames",
    "memory_bytes",
    "wall_time_s",
    "start_pose",
    "split",
    "poison_k",
}


@pytest.fixture(scope="module")
def embedder() -> ClipEmbedder:
    return ClipEmbedder(threads=1)


def test_oracle_has_spl_one_on_every_task() -> None:
    env = UnderwaterEnv(tasks=("wreck", "barrel", "pipeline", "deep_wind_station"), world_seed=3)
    agent = OracleAgent(env)
    results = run_sequence(env, agent, SequenceSpec("s", env.tasks, 3, 0, Condition.single), "r")
    for r in results:
        assert r.record.success == 1 and r.record.spl == pytest.approx(1.0)
        assert set(r.record.plain()) >= REQUIRED


def test_the_seen_place_bound_is_given_for_targets_seen_in_earlier_tasks() -> None:
    """The oracle sees the pipeline on the way to the wreck in world 1003; the bound of task 2 is then
    an SPL, and task 1 (nothing seen before) has none."""
    env = UnderwaterEnv(tasks=("wreck", "pipeline", "wreck"), world_seed=1003)
    results = run_sequence(env, OracleAgent(env), SequenceSpec("s", env.tasks, 1003, 0, Condition.single), "r")
    first, second, third = (r.record for r in results)
    assert first.seen_place_spl_bound is None
    assert third.target_seen_before and 0.0 < third.seen_place_spl_bound <= 1.0
    assert second.target_seen_before == (second.seen_place_spl_bound is not None)


def test_warm_keeps_memory_and_cold_resets_it(embedder: ClipEmbedder, tmp_path) -> None:
    env = UnderwaterEnv(tasks=("wreck", "barrel"), world_seed=0, max_steps=40)
    records = {}
    for condition in (Condition.warm, Condition.cold):
        agent = MemoryAgent(embedder)
        res = run_sequence(env, agent, SequenceSpec("wreck_then_barrel", env.tasks, 0, 0, condition), "r")
        records[condition] = [r.record for r in res]
    warm2, cold2 = records["warm"][1], records["cold"][1]
    assert warm2.memory_frames > cold2.memory_frames > 0
    assert records["warm"][0].steps == records["cold"][0].steps  # task 1 is the same in both


class _NestingCheck(Profiler):
    """A profiler noting every agent section entered while the agent's own section is not."""

    def __init__(self) -> None:
        super().__init__()
        self.outside: list[str] = []

    def section(self, name: str):  # type: ignore[no-untyped-def]
        if name.startswith("agent/") and not super().section("agent").depth:
            self.outside.append(name)
        return super().section(name)


def test_the_agent_section_holds_every_agent_section(embedder: ClipEmbedder) -> None:
    """The agent's set-up and task end run inside its section too, so that the time of its own
    sections (memory writes at a task's end, the mission's embedding at set-up) lies inside it."""
    env = UnderwaterEnv(tasks=("wreck", "barrel"), world_seed=0, max_steps=40)
    agent = MemoryAgent(embedder)
    profiler = _NestingCheck()
    agent.profiler = profiler
    run_sequence(env, agent, SequenceSpec("wreck_then_barrel", env.tasks, 0, 0, Condition.warm), "r", profiler)
    assert {k for k in profiler.seconds if k.startswith("agent/")} and not profiler.outside, set(profiler.outside)


def test_episodes_are_reproducible_and_logged(embedder: ClipEmbedder, tmp_path) -> None:
    def once():
        env = UnderwaterEnv(tasks=("barrel",), world_seed=2, max_steps=50, sonar_noise_m=0.5)
        return run_episode(env, FrontierExplorer(embedder), {"task": "barrel", "start": "random"}, episode_seed=7)

    a, b = once(), once()
    assert a.trace.actions == b.trace.actions and a.trace.obs_digests == b.trace.obs_digests
    assert a.measures == b.measures and a.stats == b.stats
    identity = SequenceSpec("x", ("barrel",), 2, 0, "single").identity("r", FrontierExplorer(embedder), 0)
    record = EpisodeRecord.finished(a.measures, a.wall_time_s, a.stats, identity, SequenceContext(a.trace.start_pose))
    writer = RunWriter(tmp_path, env=EnvConfig(size=32))
    writer.write(EpisodeResult(record, a))
    line = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
    log = json.loads((tmp_path / line["episode_log"]).read_text())
    assert len(log["obs_digests"]) == len(log["actions"]) + 1 and log["env"]["size"] == 32
    assert log["record"] == {k: v for k, v in line.items() if k != "episode_log"}
    assert read_log(tmp_path / line["episode_log"]).record == record  # read back through the same type


def test_a_run_without_episode_logs_skips_the_digests_and_nothing_else(embedder: ClipEmbedder) -> None:
    """``digest_observations=False`` (what run_experiment passes when no episode log is written):
    the same episode, measures and agent numbers, with no observation digests in the trace."""
    spec = SequenceSpec("wreck_then_barrel", ("wreck", "barrel"), 1002, 0, Condition.warm)

    def once(digest: bool) -> list:
        env = UnderwaterEnv(tasks=spec.tasks, world_seed=1002, max_steps=60)
        return finish(sequence_steps(env, MemoryAgent(embedder), spec, "r", digest_observations=digest))

    logged, unlogged = once(True), once(False)
    for a, b in zip(logged, unlogged, strict=True):
        assert len(a.outcome.trace.obs_digests) == len(a.outcome.trace.actions) + 1
        assert b.outcome.trace.obs_digests == []
        assert a.outcome.trace.actions == b.outcome.trace.actions and a.outcome.measures == b.outcome.measures
        assert a.record.model_dump(exclude=set(TIMING_FIELDS)) == b.record.model_dump(exclude=set(TIMING_FIELDS))


def test_two_seeds_of_one_world_start_differently_and_take_different_steps(embedder: ClipEmbedder) -> None:
    """``seed`` draws the start poses (far from the target), so a seed sweep has real variance."""
    env = UnderwaterEnv(tasks=("wreck", "barrel"), world_seed=1000, max_steps=120)
    runs = {}
    for seed in (0, 1):
        res = run_sequence(
            env,
            FrontierExplorer(embedder),
            SequenceSpec("wreck_then_barrel", env.tasks, 1000, seed, Condition.single),
            "r",
        )
        runs[seed] = [(tuple(r.record.start_pose), r.record.steps) for r in res]
        for r in res:
            assert r.record.shortest_path >= env.start_min_distance_m  # start far from the target
    assert [s for s, _ in runs[0]] != [s for s, _ in runs[1]]
    assert [n for _, n in runs[0]] != [n for _, n in runs[1]]
    again = run_sequence(
        env, FrontierExplorer(embedder), SequenceSpec("wreck_then_barrel", env.tasks, 1000, 0, Condition.single), "r"
    )
    assert [(tuple(r.record.start_pose), r.record.steps) for r in again] == runs[0]


def test_every_agent_and_condition_of_a_world_and_seed_faces_the_same_starts(embedder: ClipEmbedder) -> None:
    env = UnderwaterEnv(tasks=("wreck", "barrel"), world_seed=1002, max_steps=30)
    starts = set()
    for agent, condition in (
        (MemoryAgent(embedder), Condition.warm),
        (MemoryAgent(embedder), Condition.cold),
        (OracleAgent(env), Condition.single),
    ):
        res = run_sequence(env, agent, SequenceSpec("wreck_then_barrel", env.tasks, 1002, 4, condition), "r")
        starts.add(tuple(tuple(r.record.start_pose) for r in res))
    assert len(starts) == 1


def test_target_reported_before_is_the_recognisers_not_the_pixels(embedder: ClipEmbedder) -> None:
    """Task 3 looks for the wreck that task 1 found (so the memory agent's labeller reported it); the
    oracle labels nothing, so for it the detection-based flag stays False where the pixel one is True."""
    env = UnderwaterEnv(tasks=("wreck", "pipeline", "wreck"), world_seed=1003, max_steps=150)
    memory = [
        r.record
        for r in run_sequence(env, MemoryAgent(embedder), SequenceSpec("s", env.tasks, 1003, 0, Condition.warm), "r")
    ]
    assert memory[0].success == 1 and memory[0].target_reported_before is False
    assert memory[2].target_reported_before is True
    oracle = [
        r.record
        for r in run_sequence(env, OracleAgent(env), SequenceSpec("s", env.tasks, 1003, 0, Condition.single), "r")
    ]
    assert oracle[2].target_seen_before and oracle[2].target_reported_before is False


def test_each_run_of_a_sequence_is_a_new_visit_for_the_drift() -> None:
    """With odometry_carry the pose error grows across the tasks of a run and restarts with the next
    run on the same environment, so warm and cold face the same drift process."""
    env = UnderwaterEnv(
        tasks=("wreck", "barrel"), world_seed=3, max_steps=60, odometry_drift_pct=5.0, odometry_carry=True
    )
    starts = []
    for _ in range(2):
        agent = OracleAgent(env)
        spec = SequenceSpec("s", env.tasks, 3, 0, Condition.single)
        errors: list[np.ndarray] = []
        run_sequence(env, agent, spec, "r", on_step=lambda ev, out=errors: out.append(env.dead_reckoning.error.copy()))
        starts.append(errors)
    first, second = starts
    assert np.array_equal(np.array(first), np.array(second))  # same seeds: same drift, run after run
    assert np.hypot(*first[-1]) > 0.0


def test_a_record_is_validated_once_and_its_log_built_once_per_write(tmp_path, monkeypatch) -> None:
    """One constructor each (EpisodeRecord.finished, EpisodeLog.of): the writer only turns them into JSON."""
    env = UnderwaterEnv(tasks=("wreck", "barrel"), world_seed=3, max_steps=30)
    calls = {"record": 0, "log": 0}
    validate, of = EpisodeRecord.model_validate.__func__, EpisodeLog.of.__func__

    def counted_validate(cls, *args, **kwargs):
        calls["record"] += 1
        return validate(cls, *args, **kwargs)

    def counted_of(cls, *args):
        calls["log"] += 1
        return of(cls, *args)

    monkeypatch.setattr(EpisodeRecord, "model_validate", classmethod(counted_validate))
    monkeypatch.setattr(EpisodeLog, "of", classmethod(counted_of))
    writer = RunWriter(tmp_path, env=env.config)
    run_sequence(
        env, OracleAgent(env), SequenceSpec("s", env.tasks, 3, 0, Condition.single), "r", on_episode=writer.write
    )
    assert calls == {"record": 2, "log": 2}
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [line["task_index"] for line in lines] == [1, 2] and all("episode_log" in line for line in lines)


def test_conditions_are_one_enum_not_string_literals() -> None:
    """What a condition does lives in embodmem.condition.Condition; the runner, app, config, re-runner
    and registry name its members, never the strings."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    names = {c.value for c in Condition}
    for path in (
        "embodmem/runner.py",
        "embodmem/app.py",
        "embodmem/config.py",
        "embodmem/rerun.py",
        "agents/registry.py",
    ):
        tree = ast.parse((root / path).read_text())
        literals = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in names]
        assert literals == [], (path, literals)
    assert Condition.warm.carries_memory and Condition.cold.resets_memory and Condition.eval.is_evaluation
    assert not Condition.single.carries_memory and f"{Condition.cold}" == "cold" == Condition.cold
