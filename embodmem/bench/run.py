"""``embodmem-bench run``: a spec's episodes through the app's own runner, into one checkable result.

Each episode group of the spec (category, instance, lifelong) is one ordinary ``embodmem-run`` job
(:func:`embodmem.app.run`) whose config is built here from the spec alone: its sequences, the split's
worlds, the spec's seed and starts, every sensing field, the track's step limit, and the agent's
overrides. The question-answering group is the app's EQA mode with the answerer that reads the
agent's kind of memory. Runs are sequential (no lockstep lanes), so ``verify --rerun`` reproduces
each episode with the runner's sequential loop exactly.

The output directory holds ``result.json`` (:class:`~embodmem.bench.schema.BenchResult`),
``records.jsonl`` (:mod:`embodmem.bench.records`, hashed in the result) and ``runs/<group>/`` (the
app's run directories: config, episode logs, saved memories).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from pydantic import JsonValue

from embodmem.bench.agents import AgentChoice, check_overrides, resolve_agent
from embodmem.bench.records import BenchRecord, RecordKind, records_bytes
from embodmem.bench.schema import (
    RECORDS_FILE,
    RESULT_FILE,
    RESULT_FORMAT,
    RESULT_FORMAT_VERSION,
    AgentRef,
    BenchResult,
    Machine,
    PackageRef,
    RecordsRef,
    SpecRef,
    TrackRef,
    schema_problem,
)
from embodmem.bench.score import SCORERS, score_answers, score_groups
from embodmem.bench.spec import (
    EQA_GROUP,
    BenchSpec,
    SpecError,
    canonical_json,
    check_against_code,
    load_spec,
    sha256_hex,
    spec_hash,
)
from embodmem.bench.tracks import check_budget, directory_bytes, usage_of
from embodmem.metrics_record import EpisodeRecord


@dataclass(frozen=True)
class RunRequest:
    """What ``embodmem-bench run`` was asked for, checked by :func:`check_request`."""

    agent: str
    track: str
    split: str
    out: Path
    worlds: int | None = None
    groups: tuple[str, ...] = ()
    """Empty: every group of the spec."""
    sets: tuple[str, ...] = ()
    """Overrides of the agent, memory and embedder groups (``--set``)."""
    spec_version: int = 2


def agent_base_config(
    agent: AgentChoice, sets: Sequence[str], recorded: dict[str, JsonValue] | None = None
) -> DictConfig:
    """The agent's part of a run's config: its selecting overrides and ``--set``, then (for a re-run)
    every value the result recorded, so a default changed since the run cannot change the re-run."""
    import embodmem

    cfg = embodmem.compose([*agent.overrides, *sets])  # the agent's part: checked as embodmem-run checks it
    if recorded is not None:
        apply_recorded(cfg, recorded)
    return cfg


def apply_recorded(cfg: DictConfig, recorded: dict[str, JsonValue], prefix: str = "") -> None:
    """Set every leaf of ``recorded`` (a result's ``agent.config``) in ``cfg``. A field the code has
    gained since keeps its default (a new field must default to the old behaviour); a recorded field
    the code no longer has is refused in one line, since the run cannot be reproduced without it.

    >>> import embodmem
    >>> cfg = embodmem.compose([])
    >>> apply_recorded(cfg, {"embedder": {"batch_size": 7}})
    >>> cfg.embedder.batch_size
    7
    >>> apply_recorded(cfg, {"memory": {"gone": 1}})
    Traceback (most recent call last):
    ...
    embodmem.bench.spec.SpecError: agent.config: memory.gone is recorded by the run but does not exist in this embodmem
    """
    from omegaconf.errors import OmegaConfBaseException

    for key, value in recorded.items():
        path = f"{prefix}{key}"
        node = OmegaConf.select(cfg, path, default=None, throw_on_missing=False)
        if isinstance(value, dict) and isinstance(node, DictConfig):
            apply_recorded(cfg, value, f"{path}.")
            continue
        try:
            OmegaConf.update(cfg, path, value, merge=False)
        except OmegaConfBaseException:  # a closed (structured) node without this field, or a wrong type
            raise SpecError(
                f"agent.config: {path} is recorded by the run but does not exist in this embodmem"
            ) from None


def job_config(
    spec: BenchSpec,
    agent: AgentChoice,
    track: str,
    split: str,
    group: str,
    worlds: Sequence[int],
    sets: Sequence[str],
    recorded: dict[str, JsonValue] | None = None,
) -> DictConfig:
    """The app config of one group of a benchmark run (the run and ``verify --rerun`` both use it):
    the agent's part (:func:`agent_base_config`), then everything the spec fixes for the group."""
    cfg = agent_base_config(agent, sets, recorded)
    fixed: dict[str, object] = {
        "seed": spec.seed,
        "run_id": f"bench-{group}",
        "experiment.split": split,
        "experiment.world_seeds": list(worlds),
        "experiment.baselines": [],
        "experiment.variants": [],
        "experiment.lanes": 0,
        "logger.progress": False,
        "logger.plots": False,
        "video.enabled": False,
    }
    if group == EQA_GROUP:
        fixed |= {
            "experiment.eqa.enabled": True,
            "experiment.eqa.questions": spec.eqa.questions[split].file,
            "experiment.eqa.answerers": [agent.answerer],
            "experiment.eqa.tours": len(worlds),
        }
    else:
        g = spec.groups[group]
        sensing = {**spec.sensing, **g.env, "max_steps": spec.track(track).steps_per_episode}
        fixed |= {f"env.{k}": v for k, v in sensing.items()}
        fixed |= {f"embedder.{k}": v for k, v in (g.embedder or {}).items()}
        if g.world_changes is not None:
            from embodmem.envs.changes import WorldChanges

            fixed["world.changes"] = OmegaConf.structured(WorldChanges.from_log(g.world_changes.model_dump()))
        fixed |= {
            "experiment.sequences": list(g.sequences),
            "experiment.start": spec.start,
            "experiment.conditions": ["warm", "cold"],
            "experiment.sleep_between_tasks": g.sleep_between_tasks,
            "experiment.save_memory": agent.carries_memory,
            "experiment.gem_eval": False,
            "experiment.poison_k": 0,
        }
    for key, value in fixed.items():
        OmegaConf.update(cfg, key, value, merge=False)
    return cfg


def agent_config(cfg: DictConfig) -> dict[str, JsonValue]:
    """The resolved agent, memory and embedder groups (what the agent is, not the tasks), as JSON."""
    parts = {k: OmegaConf.to_container(cfg[k], resolve=True) for k in ("agent", "memory", "embedder")}
    plain: dict[str, JsonValue] = json.loads(canonical_json(parts))
    return plain


def agent_config_sha256(cfg: DictConfig) -> str:
    """SHA-256 of :func:`agent_config`."""
    return sha256_hex(canonical_json(agent_config(cfg)))


def check_fixed_sets(spec: BenchSpec, groups: Sequence[str], sets: Sequence[str]) -> None:
    """Refuse a ``--set`` that contradicts a setting the spec fixes for a group of the run."""
    for item in sets:
        key, _, value = item.lstrip("+~").partition("=")
        for name in groups:
            fixed = spec.groups[name].embedder if name in spec.groups else None
            field = key.removeprefix("embedder.")
            if fixed and key.startswith("embedder.") and field in fixed and value != str(fixed[field]):
                raise SpecError(
                    f"--set: {item!r} is not allowed; spec v{spec.version} fixes {key}={fixed[field]} "
                    f"for group {name!r} (run the other groups with --groups, or leave it unset)"
                )


def check_request(request: RunRequest) -> tuple[BenchSpec, AgentChoice, list[int], list[str]]:
    """Everything checked before any episode: spec, track, split, worlds, groups, agent, overrides,
    the code against the spec, and an output directory that holds no result yet."""
    spec = load_spec(request.spec_version)
    spec.track(request.track)
    worlds = spec.world_seeds(request.split, request.worlds)
    groups = list(request.groups) or list(spec.group_names())
    spec.check_groups(groups)
    check_overrides(list(request.sets))
    check_fixed_sets(spec, groups, request.sets)
    agent = resolve_agent(request.agent)
    if agent.answerer is None and EQA_GROUP in groups:
        if request.groups:
            raise SpecError(
                f"--groups: {EQA_GROUP!r} needs an agent with a question answerer; {request.agent!r} has none"
            )
        groups.remove(EQA_GROUP)
    check_against_code(spec)
    for name in (RESULT_FILE, RECORDS_FILE):
        if (request.out / name).exists():
            raise SpecError(
                f"--out: {request.out / name} exists; a run never overwrites a result (choose another --out)"
            )
    return spec, agent, worlds, groups


def run_benchmark(request: RunRequest) -> BenchResult:
    """Run the request and write ``result.json`` and ``records.jsonl`` into ``request.out``."""
    from embodmem import __version__
    from embodmem.app import run
    from embodmem.provenance import Provenance

    spec, agent, worlds, groups = check_request(request)
    facts = Provenance.collect()  # the commit and machine the episodes run on, taken before they run
    if spec.scoring.scorer not in SCORERS:
        raise SpecError(
            f"spec v{spec.version} is scored by {spec.scoring.scorer}; this embodmem has {', '.join(SCORERS)}"
        )
    configs = {g: job_config(spec, agent, request.track, request.split, g, worlds, request.sets) for g in groups}
    base = agent_base_config(agent, request.sets)
    started = time.perf_counter()
    records: list[BenchRecord] = []
    for group, cfg in configs.items():
        out = request.out / "runs" / group
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "report.txt", "w") as report, contextlib.redirect_stdout(report):
            produced = run(cfg, out)
        kind: RecordKind = "answer" if group == EQA_GROUP else "episode"
        for r in produced:
            plain = r.plain() if isinstance(r, EpisodeRecord) else dataclasses.asdict(r)
            records.append(BenchRecord(group, kind, json.loads(json.dumps(plain))))
        records += state_records(group, out / "memory")
    wall = time.perf_counter() - started
    data = records_bytes(records)
    track_spec = spec.track(request.track)
    use = usage_of(records)
    budget = check_budget(track_spec, use, request.track)
    result = BenchResult(
        format=RESULT_FORMAT,
        format_version=RESULT_FORMAT_VERSION,
        spec=SpecRef(benchmark=spec.benchmark, version=spec.version, sha256=spec_hash(spec.version)),
        package=PackageRef(name="embodmem", version=__version__, commit=facts.commit),
        agent=AgentRef(
            name=agent.name,
            kind=agent.kind,
            version=agent.version,
            privileged=agent.privileged,
            overrides=[*agent.overrides, *request.sets],
            sets=list(request.sets),
            config_sha256=agent_config_sha256(base),
            config=agent_config(base),
        ),
        track=TrackRef(name=request.track, **track_spec.model_dump()),
        split=request.split,
        worlds=worlds,
        complete=len(worlds) == spec.split(request.split).worlds and set(groups) >= expected_groups(spec, agent),
        groups=groups,
        status="scored" if budget.within else "over_budget",
        scores=score_groups(records),
        eqa=score_answers(records),
        usage=use,
        budget=budget,
        wall_time_s=round(wall, 3),
        machine=Machine.model_validate(facts.as_dict()),
        records=RecordsRef(file=RECORDS_FILE, sha256=sha256_hex(data), count=len(records)),
    )
    text = json.dumps(result.model_dump(mode="json"), indent=2) + "\n"
    problem = schema_problem(json.loads(text))
    assert problem is None, f"the result breaks its own schema: {problem}"
    from embodmem.atomic import atomic_write_bytes, atomic_write_text

    atomic_write_bytes(request.out / RECORDS_FILE, data)
    atomic_write_text(request.out / RESULT_FILE, text)
    return result


def expected_groups(spec: BenchSpec, agent: AgentChoice) -> set[str]:
    """The groups a complete run of ``agent`` covers."""
    return set(spec.groups) | ({EQA_GROUP} if agent.answerer is not None else set())


def state_records(group: str, memory_dir: Path) -> list[BenchRecord]:
    """One ``state`` record per saved warm memory (``<sequence>-world<seed>`` or ``world<seed>``)."""
    if not memory_dir.is_dir():
        return []
    out = []
    for path in sorted(memory_dir.iterdir()):
        sequence, _, world = path.name.rpartition("world")
        size, files = directory_bytes(path)
        record: dict[str, JsonValue] = {
            "sequence": sequence.rstrip("-") or None,
            "world_seed": int(world) if world.isdigit() else None,
            "bytes": size,
            "files": files,
        }
        out.append(BenchRecord(group, "state", record))
    return out
