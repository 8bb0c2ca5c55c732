"""The Hydra app: ``embodmem-run`` and ``python -m embodmem`` are this one function.

    embodmem-run                                          # wreck_then_barrel: memory warm/cold + explorer
    embodmem-run -m agent=memory,explorer seed=0,1,2 hydra/launcher=joblib

Everything heavy (environment, CLIP model, FAISS memory) is built inside the job from the config,
so launchers pickle nothing but the config.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import gc
import json
import os

# One BLAS/OpenMP thread unless the user says otherwise: the agent's work is many small calls, and
# on a busy 2-core machine OpenMP spin-waiting made them tens of times slower (must precede numpy).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import logging
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

import embodmem.configs
from embodmem.agents.registry import AGENTS, get_agent_spec
from embodmem.atomic import atomic_write_json, atomic_write_text
from embodmem.condition import Condition
from embodmem.config import (
    AgentName,
    ConfigError,
    EnvConfig,
    EQAConfig,
    MemoryConfig,
    VLMConfig,
    part_config,
    register_configs,
    validate,
    world_changes,
)
from embodmem.preflight import check_feasible

# The environment, the runner, the trackers and the models are imported by the functions that use
# them: ``embodmem-run --help`` and a command line refused by the preflight check never load them.
if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from embodmem.agents.base import Agent, RecognitionEmbedder
    from embodmem.agents.variants import Variant
    from embodmem.embedding.embedder import ClipEmbedder
    from embodmem.envs.underwater import UnderwaterEnv
    from embodmem.eqa.scoring import EQARecord
    from embodmem.memory.protocol import Memory
    from embodmem.metrics_record import EpisodeRecord
    from embodmem.runner import ExperimentPlan, RunWriter

S = TypeVar("S", bound="DataclassInstance")
CONFIG_DIR = Path(embodmem.configs.__file__).resolve().parent
"""The shipped config groups (package data, also reachable as ``pkg://embodmem.configs``)."""
log = logging.getLogger("embodmem")


def env_config(cfg: DictConfig) -> EnvConfig:
    """The environment's settings: the ``env`` group's EnvConfig (also written into every episode
    log, so a replay builds the same world)."""
    return part_config("env", EnvConfig, cfg)


def build_env(cfg: DictConfig, tasks: tuple[str, ...], world_seed: int) -> UnderwaterEnv:
    from embodmem.envs.entry import make_env

    return make_env(env_config(cfg), tasks, world_seed, world_changes(cfg))


def build_embedder(cfg: DictConfig) -> ClipEmbedder:
    from embodmem.embedding.checkpoints import NAMED_CHECKPOINTS
    from embodmem.embedding.embedder import ClipEmbedder

    e = cfg.embedder
    pretrained = NAMED_CHECKPOINTS.get(e.pretrained, e.pretrained)
    return ClipEmbedder(
        e.model, pretrained, e.device, e.batch_size, e.cache_size, threads=e.threads, runtime=str(e.runtime)
    )


class ConfigParts:
    """The config's parts as typed settings (:func:`~embodmem.config.part_config`), each read from the
    config once: a run builds an agent for every run of every world, and reading a part out of the
    config costs about a millisecond. Each caller gets its own copy."""

    def __init__(self, cfg: DictConfig) -> None:
        self.cfg = cfg
        self._read: dict[tuple[str, type], object] = {}

    def get(self, key: str, schema: type[S]) -> S:
        read = self._read.get((key, schema))
        if read is None:
            read = self._read[(key, schema)] = part_config(key, schema, self.cfg)
        return copy.deepcopy(cast(S, read))


def build_memory(cfg: DictConfig, dim: int, variant: Variant, parts: ConfigParts | None = None) -> Memory:
    """The ``memory`` group's settings at the embedder's ``dim``, with ``variant``'s changes, in the
    stock AgentMemory or the variant's plug-in class (checked: one line naming what it lacks).
    ``parts``: the run's parts, read once (default: read from ``cfg`` now)."""
    from embodmem.agents.variants import memory_settings
    from embodmem.memory import AgentMemory
    from embodmem.memory.protocol import memory_instance_problem, missing_memory_members
    from embodmem.plugins import PluginError, describe, load_object

    fields = dataclasses.asdict((parts or ConfigParts(cfg)).get("memory", MemoryConfig))
    fields["dim"] = dim
    if cfg.video.enabled or cfg.agent.name == AgentName.vlm:
        fields["keep_thumbnails"] = True
    settings = memory_settings(variant, MemoryConfig(**fields))
    if variant.memory_class is None:
        return AgentMemory(settings)
    make = cast(Callable[[MemoryConfig], object], load_object("memory", variant.memory_class, key=variant.name))
    made = make(settings)
    problem = memory_instance_problem(made)
    missing = missing_memory_members(type(made))
    if missing or problem:
        what = f"lacks the memory method(s) {', '.join(missing)}" if missing else problem
        raise PluginError(
            f"memory {variant.name!r}: {variant.memory_class} built a {describe(made)}, which {what} (embodmem.api.Memory)"
        )
    return cast("Memory", made)


def memory_design(cfg: DictConfig) -> str:
    """The run's main memory design: ``agent.variant``, with ``agent.memory``'s plug-in if set
    (``memory_no_recall+recency``; the full variant is named after the plug-in alone)."""
    variant = str(cfg.agent.variant)
    plugin = cfg.agent.memory
    if plugin is None:
        return variant
    return str(plugin) if variant == "memory" else f"{variant}+{plugin}"


def agent_settings(
    config_class: type[S],
    cfg: DictConfig,
    changes: Mapping[str, object] | None = None,
    parts: ConfigParts | None = None,
) -> S:
    """An agent's own config filled from the ``agent`` group (the fields ``config_class`` has), then
    ``changes``; ``parts``: the run's parts, read once (default: read from ``cfg`` now)."""
    settings = (parts or ConfigParts(cfg)).get("agent", config_class)
    return dataclasses.replace(settings, **changes) if changes else settings


@dataclass
class AppBuildContext:
    """What an agent's builder (:mod:`embodmem.agents.registry`) asks of the run, from the config."""

    cfg: DictConfig
    embedder: RecognitionEmbedder | None
    env: UnderwaterEnv
    seed: int
    parts: ConfigParts | None = None
    """The run's config parts, read once (None: read from ``cfg`` at each call)."""

    def settings(self, config_class: type[S], changes: Mapping[str, object] | None = None) -> S:
        return agent_settings(config_class, self.cfg, changes, self.parts)

    def memory(self, variant: Variant) -> Memory:
        if self.embedder is None:
            raise ValueError(f"memory of {variant.name!r} needs the embedder's dimension")
        return build_memory(self.cfg, self.embedder.dim, variant, self.parts)

    @property
    def memory_design(self) -> str:
        return memory_design(self.cfg)

    def vlm_config(self) -> VLMConfig:
        return part_config("agent.vlm", VLMConfig, self.cfg)

    def build(self, name: str) -> Agent:
        return get_agent_spec(name).build(self)


def build_agent(
    name: str,
    cfg: DictConfig,
    embedder: RecognitionEmbedder | None,
    env: UnderwaterEnv,
    seed: int,
    parts: ConfigParts | None = None,
) -> Agent:
    """One agent from its name (:data:`~embodmem.agents.registry.AGENTS`) and the config; fresh memory.
    ``parts``: the run's config parts, read once for all its agents."""
    return get_agent_spec(name).build(AppBuildContext(cfg, embedder, env, seed, parts))


PLUGINS_FILE = "plugins.json"
"""The class (and declared version) behind each plug-in name of a run: a resume must find the same."""


def plugin_identity(name: str) -> str:
    """``module:Class`` (and `` version V`` when declared) of the class or factory a plug-in name resolves to."""
    from embodmem.plugins import identity, load_object

    spec = get_agent_spec(name)
    memory = spec.variant.memory_class if spec.variant is not None else None
    return identity(load_object("memory", memory) if memory is not None else load_object("agent", str(spec.plugin)))


def pin_plugins(out_dir: Path, plan: ExperimentPlan, resume: bool) -> None:
    """Write what each plug-in name of the plan resolves to into ``plugins.json``; a resume whose names
    now resolve to another class or version (another package installed under the same entry point) is
    refused in one line naming both, so its records never mix two designs under one name."""
    now = {name: plugin_identity(name) for name in sorted(plan.plugins)}
    path = out_dir / PLUGINS_FILE
    if resume and path.is_file():
        saved = json.loads(path.read_text())
        for name, identity in now.items():
            if name in saved and saved[name] != identity:
                raise ConfigError(
                    f"experiment.resume: plug-in {name!r} was {saved[name]} in the run being resumed, now {identity}"
                )
    if now:
        atomic_write_json(path, now)


def check_plugins_build(plan: ExperimentPlan, cfg: DictConfig, embedder: RecognitionEmbedder | None) -> None:
    """Build every plug-in of the plan once, in its first world, before any episode runs: what its
    class or factory builds is checked against the protocol (:class:`~embodmem.plugins.PluginError`,
    one line)."""
    names = [name for name in dict.fromkeys(name for name, _ in plan.runs) if name in plan.plugins]
    if not names:
        return
    _, tasks = plan.sequences[0]
    env = build_env(cfg, tasks, plan.world_seeds[0])
    for name in names:
        build_agent(name, cfg, embedder, env, plan.seed)


def build_writer(cfg: DictConfig, out_dir: Path) -> RunWriter:
    """The run's writer: metrics.jsonl and episode logs (with the env settings) in ``out_dir``."""
    from embodmem.runner import RunWriter

    return RunWriter(out_dir, cfg.logger.episode_logs, env_config(cfg), resume=cfg.experiment.resume)


def experiment_plan(cfg: DictConfig, out_dir: Path) -> ExperimentPlan:
    """What the config asks to run (validated by :func:`embodmem.config.validate`)."""
    from embodmem.envs.tasks import get_sequence
    from embodmem.metrics_record import PoisonPlace
    from embodmem.runner import ExperimentPlan

    exp = cfg.experiment
    if exp.sequences:
        sequences = [(name, get_sequence(name)) for name in exp.sequences]
    elif exp.tasks:
        sequences = [("+".join(exp.tasks), tuple(exp.tasks))]
    else:
        sequences = [(exp.sequence, get_sequence(exp.sequence))]
    main_name = str(cfg.agent.name)
    if cfg.agent.plugin is not None:
        main_name = str(cfg.agent.plugin)
    elif main_name == "memory":
        main_name = memory_design(cfg)
    carriers = [main_name, *[v for v in exp.variants if v != main_name]]
    carrying = [name for name in carriers if get_agent_spec(name).carries_memory]
    runs = [(name, Condition(c)) for name in carrying for c in exp.conditions]
    runs += [(name, Condition.single) for name in carriers if name not in carrying]
    runs += [(b, Condition.single) for b in exp.baselines if b != main_name]
    plugins = frozenset(name for name, _ in runs if name not in AGENTS)
    return ExperimentPlan(
        run_id=cfg.run_id or out_dir.name,
        sequences=sequences,
        world_seeds=[int(w) for w in exp.world_seeds],
        seed=int(cfg.seed),
        split=exp.split,
        start=str(exp.start),
        runs=runs,
        sleep_between_tasks=exp.sleep_between_tasks,
        gem_eval=exp.gem_eval,
        save_memory_dir=out_dir / "memory" if exp.save_memory else None,
        load_memory=Path(exp.load_memory) if exp.load_memory else None,
        poison_k=int(exp.poison_k),
        poison_place=cast(PoisonPlace, str(exp.poison_place)),  # one of them: validate() checked it
        lanes=int(exp.lanes),
        plugins=plugins,
    )


def run(cfg: DictConfig, out_dir: str | Path) -> list[EpisodeRecord] | list[EQARecord]:
    """Run the experiment described by ``cfg`` into ``out_dir``; returns the metrics records (the
    answers of an EQA run).

    The cyclic garbage collector is off while the job builds what it keeps for good (imports, model,
    envs, config): its full passes over those objects as imports pile them up cost about a second of
    every job's start. :func:`_loop_starts` turns it back on."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _run(cfg, out_dir)
    finally:
        if was_enabled:
            gc.enable()


def _loop_starts() -> None:
    """What the job has built so far lives as long as the job: after one collection (the set-up's
    cycles, a third of the objects it made), it is frozen, and the collector's full passes during
    the episodes (back on from here) skip it, about a tenth of the loop."""
    gc.collect()
    gc.freeze()
    gc.enable()


def _run(cfg: DictConfig, out_dir: str | Path) -> list[EpisodeRecord] | list[EQARecord]:
    from tqdm import tqdm

    from embodmem.envs.entry import make_env
    from embodmem.fingerprint import check_new_run, check_resume, write_fingerprint
    from embodmem.lockstep import Lockstep
    from embodmem.profiling import Profiler, RunProfile
    from embodmem.runner import run_experiment, sequential_order
    from embodmem.tracking.run import open_run_trackers

    validate(cfg)
    check_feasible(cfg)  # before any work: world seeds, poison size, the snapshot at the load path
    out_dir = Path(out_dir)
    if cfg.experiment.eqa.enabled:  # tours + questions (embodmem.eqa): no navigation episodes
        from embodmem.eqa.experiment import run_eqa

        atomic_write_text(out_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
        eqa, vlm = part_config("experiment.eqa", EQAConfig, cfg), part_config("agent.vlm", VLMConfig, cfg)
        eqa_embedder = build_embedder(cfg)
        _loop_starts()
        return run_eqa(eqa, vlm, out_dir, eqa_embedder, progress=cfg.logger.progress)
    plan = experiment_plan(cfg, out_dir)
    if cfg.experiment.resume:  # the run directory must hold this very experiment (one line naming what differs)
        check_resume(out_dir, cfg)
    else:  # and a new run must not land among an earlier run's records
        check_new_run(out_dir)
    write_fingerprint(out_dir, cfg)
    pin_plugins(out_dir, plan, resume=cfg.experiment.resume)
    if cfg.agent.name == AgentName.vlm:  # the endpoint answers, the key and the model are accepted, before any work
        from embodmem.agents.vlm_agent import check_vlm_endpoint

        check_vlm_endpoint(part_config("agent.vlm", VLMConfig, cfg))
    atomic_write_text(out_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    settings = env_config(cfg)
    changes = world_changes(cfg)
    writer = build_writer(cfg, out_dir)
    profiler = Profiler()
    needs_embedder = any(get_agent_spec(name).needs_embedder for name, _ in plan.runs)
    embedder = build_embedder(cfg) if needs_embedder else None
    recorder = None
    if cfg.video.enabled:
        from embodmem.video import EpisodeRecorder

        recorder = EpisodeRecorder(cfg.video, out_dir / "videos")
    check_plugins_build(plan, cfg, embedder)  # before any episode: a factory's or class's wrong product is one line
    lockstep = None
    if plan.lanes:
        embeds = frozenset(name for name, _ in plan.runs if get_agent_spec(name).needs_embedder)
        lockstep = Lockstep(plan.lanes, embedder, embeds)
    total = len(plan.world_seeds) * len(plan.runs) * sum(len(tasks) for _, tasks in plan.sequences)
    trackers = open_run_trackers(cfg, out_dir)  # logger.backends: each episode after its metrics.jsonl line
    writer.on_record.append(trackers.log_episode)
    bar = tqdm(total=total, desc="episodes", unit="ep", disable=not cfg.logger.progress)
    parts = ConfigParts(cfg)
    _loop_starts()
    started = time.perf_counter()
    run_experiment(
        plan,
        make_env=lambda tasks, world_seed: make_env(settings, tasks, world_seed, changes),
        make_agent=lambda name, env: build_agent(name, cfg, embedder, env, plan.seed, parts),
        writer=writer,
        profiler=profiler,
        recorder=recorder,
        on_progress=lambda: bar.update(1),
        lockstep=lockstep,
    )
    loop_s = time.perf_counter() - started  # every episode and its writing; not model loading, not the report
    bar.close()

    records = sequential_order(plan, writer.records) if plan.lanes else writer.records
    steps = sum(r.steps or 0 for r in records if r.condition is not Condition.eval)
    profile = profiler.table(steps)
    atomic_write_json(out_dir / "profile.json", RunProfile(steps=steps, loop_s=round(loop_s, 3), sections=profile))
    from embodmem.report import print_report, print_table, write_summary
    from embodmem.report.tables import READING_GUIDE, TRANSFER_METRICS
    from embodmem.staleness import staleness_report

    result = write_summary(records, out_dir, plots=cfg.logger.plots)
    trackers.finish(records, result.transfer, TRANSFER_METRICS, result.files)
    print_report(result)
    stale = staleness_report(records)  # a changing world's records only
    if stale is not None:
        print()
        print(stale)
    print()
    print_table(profile, title=f"Where the time went ({steps} agent steps)")
    print(f"\noutputs: {out_dir}")
    print(READING_GUIDE)
    return records


register_configs()


@hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")
def hydra_main(cfg: DictConfig) -> float:
    from embodmem.agents.vlm.errors import VLMError
    from embodmem.failures import classify, debug_requested, report
    from embodmem.metrics_record import METRICS_FILE, EpisodeRecord
    from embodmem.plugins import PluginError
    from embodmem.search import check_search, objective

    hydra_cfg = HydraConfig.get()
    out_dir = hydra_cfg.runtime.output_dir
    try:
        check_search(cfg, str(hydra_cfg.sweeper.get("_target_", "")))  # a searching sweeper tunes on dev worlds only
        records = run(cfg, out_dir)
        return objective([r for r in records if isinstance(r, EpisodeRecord)])  # what a searching sweeper maximises
    except VLMError as err:  # the VLM endpoint refused or failed before any work: one line, exit 2
        print(f"embodmem-run: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    except (
        ConfigError,
        PluginError,
    ) as err:  # bad input found before any work (fingerprint, plug-ins, up-front checks)
        print(f"embodmem-run: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    except Exception as err:  # a failure inside the run: one line, its own exit code (embodmem.failures)
        failure = classify(err)
        if failure is None:
            raise  # a bug: keep the traceback
        metrics = Path(out_dir) / METRICS_FILE
        kept = 0
        with contextlib.suppress(OSError, UnicodeDecodeError):  # the line must come out whatever the disk does
            kept = len(metrics.read_text().splitlines()) if metrics.is_file() else 0
        report(err, failure, f"{kept} record(s) so far in {metrics}", debug_requested(hydra_cfg.verbose))
        raise SystemExit(failure.code) from None


def check_vlm_endpoints(jobs: list[DictConfig]) -> None:
    """Before Hydra creates an output directory: every distinct VLM endpoint the jobs use answers
    (:func:`~embodmem.agents.vlm_agent.check_vlm_endpoint`); a failure is a PreflightError line.
    Jobs sent to a Slurm cluster are left to check where they run (:func:`run`): the server may be
    reachable from the compute nodes only."""
    from embodmem.preflight import PreflightError

    local = [j for j in jobs if "slurm" not in str(OmegaConf.select(j, "hydra.launcher._target_", default="")).lower()]
    configs = {
        repr(c): c for c in (part_config("agent.vlm", VLMConfig, j) for j in local if j.agent.name == AgentName.vlm)
    }
    if not configs:
        return
    from embodmem.agents.vlm.errors import VLMError
    from embodmem.agents.vlm_agent import check_vlm_endpoint

    for config in configs.values():
        try:
            check_vlm_endpoint(config)
        except VLMError as err:
            raise PreflightError(str(err)) from None


HELP_FLAGS = frozenset({"--help", "-h", "--hydra-help"})


def main() -> None:
    """Console entry point (``embodmem-run``): check the whole command line first, then hand over to Hydra."""
    from embodmem.preflight import (
        PreflightError,
        check_command_line,
        config_store_shared_by_copies,
        plugin_listing,
        plugin_overrides,
    )

    if "--list-plugins" in sys.argv[1:]:  # every name agent, agent.memory and the EQA answerers accept
        print(plugin_listing())
        return
    try:
        jobs = check_command_line(sys.argv[1:], CONFIG_DIR)  # it reads agent=<plug-in or variant> as below
        check_vlm_endpoints(jobs)
    except PreflightError as err:  # one line, exit 2, before Hydra creates the output directory
        print(f"embodmem-run: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    sys.argv[1:] = plugin_overrides(sys.argv[1:], CONFIG_DIR)  # agent=<plug-in or variant>: the key it sets
    asks_help = not HELP_FLAGS.isdisjoint(sys.argv[1:])
    try:
        with config_store_shared_by_copies() if asks_help else contextlib.nullcontext():
            hydra_main()
    except ValueError as err:  # configuration errors: one clear line, no traceback
        print(f"embodmem-run: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
