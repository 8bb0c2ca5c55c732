"""``embodmem-bench verify``: trust a result file only after re-deriving it from its records.

In order, each failure one line (:class:`VerifyError`): the file reads as JSON and meets the shipped
JSON Schema; its spec version exists and its spec hash is this package's; its track is the spec's;
the records file beside it has the hash and count the result names; every score, usage figure, the
budget verdict and the status re-computed from the records by the pinned scorer equal the file's.
``--rerun K`` then re-runs K episodes drawn at random (``--seed``) with the runner's own sequential
loop and requires each record to come back field for field (measured times aside), the way Habitat's
minival phase checks that local and remote scores agree. The re-run uses the agent, memory and
embedder values the result recorded (``agent.config``), not today's defaults: a field the code gained
after the run keeps its default, which must be the old behaviour; a recorded field the code no longer
has is refused. A record field the record format gained after the run is not compared.

Example:
    >>> verify_result(Path("no/such/result.json"))
    Traceback (most recent call last):
    ...
    embodmem.bench.verify.VerifyError: no/such/result.json: no such result file
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import JsonValue, ValidationError

from embodmem.bench.records import BenchRecord, RecordsError, parse_records
from embodmem.bench.schema import BenchResult, schema_problem
from embodmem.bench.score import score_answers, score_groups
from embodmem.bench.spec import (
    SpecError,
    available_versions,
    canonical_json,
    load_spec,
    sha256_hex,
    spec_hash,
)
from embodmem.bench.tracks import check_budget, usage_of

NOT_RECOMPUTED = ("wall_time_s", "memory_query_ms", "episode_log", "video", "video_error")
"""Record fields a re-run cannot reproduce: measured times and the paths of files the run wrote."""


class VerifyError(ValueError):
    """The result cannot be trusted; the message is one line naming the file and what differs."""


@dataclass(frozen=True)
class VerifyReport:
    result: BenchResult
    records: int
    rerun: int
    """Episodes re-run and found identical."""


def read_result(path: Path) -> BenchResult:
    """The result file, checked against the shipped schema (:class:`VerifyError` otherwise)."""
    if not path.is_file():
        raise VerifyError(f"{path}: no such result file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise VerifyError(f"{path}: not JSON, truncated or damaged ({' '.join(str(err).split())[:120]})") from None
    if isinstance(data, dict) and isinstance(data.get("spec"), dict):
        version = data["spec"].get("version")
        if version not in available_versions():
            raise VerifyError(
                f"{path}: spec version {version!r} does not exist in this embodmem; valid versions: "
                f"{', '.join(map(str, available_versions()))}"
            )
    problem = schema_problem(data)
    if problem is not None:
        raise VerifyError(f"{path}: does not meet the result schema: {problem}")
    try:
        return BenchResult.model_validate(data)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        raise VerifyError(f"{path}: field {'.'.join(map(str, first['loc']))}: {first['msg']}") from None


def _same(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def verify_result(path: Path, rerun: int = 0, seed: int = 0) -> VerifyReport:
    """Check the result at ``path`` (and its records) as the module says; re-run ``rerun`` episodes."""
    path = Path(path)
    result = read_result(path)
    spec = load_spec(result.spec.version)
    shipped = spec_hash(spec.version)
    if result.spec.sha256 != shipped:
        raise VerifyError(
            f"{path}: spec v{spec.version} hash {result.spec.sha256[:16]}... is not this package's "
            f"{shipped[:16]}... (another edition of the spec)"
        )
    try:
        track = spec.track(result.track.name)
    except SpecError as err:
        raise VerifyError(f"{path}: {err}") from None
    if not _same(result.track.model_dump(exclude={"name"}), track.model_dump()):
        raise VerifyError(f"{path}: track {result.track.name!r} differs from spec v{spec.version}'s")
    if Path(result.records.file).name != result.records.file:
        raise VerifyError(f"{path}: field records.file: {result.records.file!r} is not a file name beside the result")
    records_path = path.parent / result.records.file
    if not records_path.is_file():
        raise VerifyError(f"{records_path}: no such records file (the result names it)")
    data = records_path.read_bytes()
    if sha256_hex(data) != result.records.sha256:
        raise VerifyError(
            f"{records_path}: records do not match the result's hash (edited, truncated or another run's)"
        )
    try:
        records = parse_records(data)
    except RecordsError as err:
        raise VerifyError(f"{records_path}: {err}") from None
    if len(records) != result.records.count:
        raise VerifyError(f"{records_path}: {len(records)} records; the result says {result.records.count}")
    check_records_belong(path, result, records)
    use = usage_of(records)
    budget = check_budget(track, use, result.track.name)
    recomputed = {
        "scores": [s.model_dump(mode="json") for s in score_groups(records)],
        "eqa": (lambda e: e.model_dump(mode="json") if e else None)(score_answers(records)),
        "usage": use.model_dump(mode="json"),
        "budget": budget.model_dump(mode="json"),
        "status": "scored" if budget.within else "over_budget",
    }
    claimed = result.model_dump(mode="json")
    for key, value in recomputed.items():
        difference = first_difference(claimed[key], value, key)
        if difference is not None:
            where, said, given = difference
            raise VerifyError(
                f"{path}: field {where}: the records give {_short(given)}, the result says {_short(said)}"
            )
    rerun_done = rerun_episodes(path, result, records, rerun, seed) if rerun else 0
    return VerifyReport(result, len(records), rerun_done)


def first_difference(claimed: object, given: object, path: str) -> tuple[str, object, object] | None:
    """The first place two JSON values differ: (dotted path, claimed, given), or None.

    >>> first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}, "scores")
    ('scores.a.1.b', 2, 3)
    """
    if isinstance(claimed, dict) and isinstance(given, dict):
        for key in [*claimed, *(k for k in given if k not in claimed)]:
            if key not in claimed or key not in given:
                return f"{path}.{key}", claimed.get(key, "nothing"), given.get(key, "nothing")
            found = first_difference(claimed[key], given[key], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(claimed, list) and isinstance(given, list) and len(claimed) == len(given):
        for i, (c, g) in enumerate(zip(claimed, given)):
            found = first_difference(c, g, f"{path}.{i}")
            if found is not None:
                return found
        return None
    return None if _same(claimed, given) else (path, claimed, given)


def _short(value: object, limit: int = 90) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_records_belong(path: Path, result: BenchResult, records: list[BenchRecord]) -> None:
    """The records are exactly the run the result claims: the split's first worlds, every episode of
    every sequence of each episode group in every world and condition once (nothing left out, nothing
    extra), and an answer to every question of the worlds' tours."""
    spec = load_spec(result.spec.version)
    if result.worlds != spec.world_seeds(result.split, len(result.worlds)):
        raise VerifyError(
            f"{path}: field worlds: {_short(result.worlds)} are not the first worlds of split {result.split!r}"
        )
    complete = len(result.worlds) == spec.split(result.split).worlds and set(spec.groups) <= set(result.groups)
    if result.complete and not complete:
        raise VerifyError(
            f"{path}: field complete: true, but the run covers {len(result.worlds)} worlds and groups {result.groups}"
        )
    worlds = set(result.worlds)
    seen: dict[tuple[str, str, int, int, str], int] = {}
    for i, r in enumerate(records, start=1):
        if r.group not in result.groups:
            raise VerifyError(f"{path}: record {i}: group {r.group!r} is not among the result's {result.groups}")
        if r.kind != "episode":
            continue
        rec = r.record
        if rec.get("split") != result.split or rec.get("world_seed") not in worlds:
            raise VerifyError(
                f"{path}: record {i}: world {rec.get('world_seed')} of split {rec.get('split')!r} is not one of the result's"
            )
        if spec.group_of(str(rec.get("sequence"))) != r.group:
            raise VerifyError(f"{path}: record {i}: sequence {rec.get('sequence')!r} is not in spec group {r.group!r}")
        key = (
            r.group,
            str(rec.get("sequence")),
            int(str(rec.get("world_seed"))),
            int(str(rec.get("task_index"))),
            str(rec.get("condition")),
        )
        if key in seen:
            raise VerifyError(f"{path}: record {i}: the same episode as record {seen[key]} ({_episode_text(key)})")
        seen[key] = i
    for group in result.groups:
        if group not in spec.groups:
            continue
        for sequence, tasks in spec.groups[group].sequences.items():
            conditions = {k[4] for k in seen if k[1] == sequence} or {"single"}
            for world in result.worlds:
                for index in range(1, len(tasks) + 1):
                    for condition in conditions:
                        if (group, sequence, world, index, condition) not in seen:
                            key = (group, sequence, world, index, condition)
                            raise VerifyError(f"{path}: records: {_episode_text(key)} is missing")
    if "eqa" in result.groups:
        check_answers(path, result, records)


def _episode_text(key: tuple[str, str, int, int, str]) -> str:
    group, sequence, world, index, condition = key
    return f"{group} {sequence} world {world} task {index} {condition}"


def check_answers(path: Path, result: BenchResult, records: list[BenchRecord]) -> None:
    """One answer to each question of the tours of the result's worlds, and to nothing else."""
    from embodmem.eqa.files import load_questions, question_file

    spec = load_spec(result.spec.version)
    questions = load_questions(question_file(spec.eqa.questions[result.split].file))
    tours = {t.key for t in questions.tours if t.world_seed in set(result.worlds)}
    expected = sorted(q.id for q in questions.questions if q.tour in tours)
    answered = sorted(str(r.record.get("question")) for r in records if r.kind == "answer")
    if answered != expected:
        missing = sorted(set(expected) - set(answered))
        extra = sorted(set(answered) - set(expected))
        what = (
            f"question {missing[0]!r} is not answered"
            if missing
            else f"answer to {extra[0] if extra else '?'!r} is extra or repeated"
        )
        raise VerifyError(
            f"{path}: records: {what} ({len(answered)} answers, {len(expected)} questions on the result's tours)"
        )


def rerun_episodes(path: Path, result: BenchResult, records: list[BenchRecord], k: int, seed: int) -> int:
    """Re-run ``k`` episodes drawn with ``seed`` and compare their records (:class:`VerifyError` on the first difference)."""
    from embodmem.bench.agents import resolve_agent
    from embodmem.bench.run import agent_base_config, agent_config_sha256, job_config

    episodes = [r for r in records if r.kind == "episode" and not r.record.get("aborted")]
    if not episodes:
        raise VerifyError(f"{path}: --rerun: the result has no episode to re-run")
    picks = np.random.default_rng(seed).choice(len(episodes), size=min(k, len(episodes)), replace=False)
    spec = load_spec(result.spec.version)
    agent = resolve_agent(result.agent.name)
    sets = result.agent.overrides[len(agent.overrides) :]
    recorded = result.agent.config
    if recorded is not None:  # the run's own values, so a default changed since cannot change the re-run
        if sha256_hex(canonical_json(recorded)) != result.agent.config_sha256:
            raise VerifyError(f"{path}: field agent.config does not match agent.config_sha256 (edited)")
        try:
            agent_base_config(agent, sets, recorded)
        except SpecError as err:
            raise VerifyError(f"{path}: --rerun: {err}") from None
    else:  # a result that did not record its config: today's defaults must be the run's
        base = agent_base_config(agent, sets)
        if agent_config_sha256(base) != result.agent.config_sha256:
            raise VerifyError(
                f"{path}: --rerun: agent {result.agent.name!r} resolves to another config here than in the run "
                "(the result does not record its config; re-run it to record one)"
            )
    for index in sorted(int(i) for i in picks):
        chosen = episodes[index]
        cfg = job_config(spec, agent, result.track.name, result.split, chosen.group, result.worlds, sets, recorded)
        again = _rerun_one(cfg, chosen.record)
        for key in sorted(chosen.record):  # a field the record format gained after the run is not compared
            if key in NOT_RECOMPUTED:
                continue
            if not _same(chosen.record.get(key), again.get(key)):
                raise VerifyError(
                    f"{path}: --rerun: {_name(chosen.record)}: field {key}: the record has {_short(chosen.record.get(key))}, "
                    f"the re-run gives {_short(again.get(key))}"
                )
    return len(picks)


def _name(record: dict[str, JsonValue]) -> str:
    from embodmem.metrics_record import episode_name

    return episode_name(record)


def _rerun_one(cfg: object, record: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """The record the runner writes for ``record``'s episode, re-running its sequence up to it."""
    from omegaconf import DictConfig

    from embodmem.agents.base import MemoryCarrier
    from embodmem.agents.registry import get_agent_spec
    from embodmem.app import build_agent, build_embedder, build_env, experiment_plan
    from embodmem.condition import Condition
    from embodmem.profiling import Profiler
    from embodmem.runner import run_sequence

    assert isinstance(cfg, DictConfig)
    plan = experiment_plan(cfg, Path("bench-rerun"))
    sequence, agent_name = str(record["sequence"]), str(record["agent"])
    tasks = dict(plan.sequences)[sequence]
    world, task_index = record["world_seed"], record["task_index"]
    assert isinstance(world, int) and isinstance(task_index, int)
    condition = Condition(str(record["condition"]))
    env = build_env(cfg, tasks, world)
    embedder = build_embedder(cfg) if get_agent_spec(agent_name).needs_embedder else None
    agent = build_agent(agent_name, cfg, embedder, env, plan.seed)
    agent.profiler = Profiler()
    spec = plan.sequence_spec(sequence, tasks[:task_index], world, condition)
    sleep = plan.sleep_between_tasks and condition.carries_memory
    assert not isinstance(agent, MemoryCarrier) or plan.load_memory is None
    results = run_sequence(env, agent, spec, plan.run_id, agent.profiler, sleep)
    plain: dict[str, JsonValue] = json.loads(json.dumps(results[-1].final_record().plain()))
    return plain
