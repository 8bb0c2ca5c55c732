"""The Hydra app: ``embodmem-run`` and ``python -m embodmem`` are this one function.

    embodmem-run                                          # wreck_then_barrel: memory warm/cold + explorer
    embodmem-run -m agent=memory,explorer seed=0,1,2 hydra/launcher=joblib

Everything heavy (environment, CLIP model, FAISS memory) is built inside the job from the config,
so launchers pickle nothing but the config.
"""

from __future__ import annotations

import dataclasses
import os

# One BLAS/OpenMP thread unless the user says otherwise: the agent's work is many small calls, and
# on a busy 2-core machine OpenMP spin-waiting made them tens of times slower (must precede numpy).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import logging  # noqa: E402
import sys  # noqa: E402
from pathlib import Path
from typing import Any

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

import embodmem.configs
from embodmem.agents.base import Agent
from embodmem.atomic import atomic_write_json, atomic_write_text
from embodmem.config import register_configs, validate
from embodmem.runner import Profiler, RunWriter, SequenceSpec, episode_key, gem_evaluations, run_sequence
from embodmem.envs.tasks import get_sequence
from embodmem.envs.underwater import UnderwaterEnv

CONFIG_DIR = Path(embodmem.configs.__file__).resolve().parent
"""The shipped config groups (package data, also reachable as ``pkg://embodmem.configs``)."""
log = logging.getLogger("embodmem")
MEMORY_AGENTS = ("memory", "vlm")


def build_env(cfg: DictConfig, tasks: tuple[str, ...], world_seed: int) -> UnderwaterEnv:
    kwargs = env_kwargs(cfg)
    return UnderwaterEnv(tasks=tasks, world_seed=world_seed, **kwargs)


def env_kwargs(cfg: DictConfig) -> dict[str, Any]:
    """Constructor arguments of the environment (also written into every episode log)."""
    kwargs = OmegaConf.to_container(cfg.env, resolve=True)
    assert isinstance(kwargs, dict)
    kwargs["extra_views"] = tuple(kwargs["extra_views"])
    return kwargs


def build_embedder(cfg: DictConfig):
    from embodmem.embedding.embedder import ClipEmbedder
    from embodmem.embedding.model import DEFAULT_CHECKPOINT

    e = cfg.embedder
    pretrained = DEFAULT_CHECKPOINT if e.pretrained == "default" else e.pretrained
    return ClipEmbedder(
        e.model, pretrained, e.device, e.batch_size, e.cache_size, threads=e.threads, runtime=getattr(e.runtime, "value", e.runtime)
    )


def build_memory(cfg: DictConfig, dim: int):
    from embodmem.memory import AgentMemory, MemoryConfig

    fields = OmegaConf.to_container(cfg.memory, resolve=True)
    assert isinstance(fields, dict)
    fields["dim"] = dim
    if cfg.video.enabled or cfg.agent.name == "vlm":
        fields["keep_thumbnails"] = True
    return AgentMemory(MemoryConfig(**fields))


def agent_settings(config_class: type, agent_cfg: DictConfig) -> Any:
    """An agent's own config filled from the ``agent`` group (the fields both share)."""
    names = {f.name for f in dataclasses.fields(config_class)}
    return config_class(**{k: agent_cfg[k] for k in names if k in agent_cfg})


def build_agent(name: str, cfg: DictConfig, embedder, env: UnderwaterEnv, seed: int) -> Agent:
    """One agent from its name and the config (fresh memory for memory agents)."""
    a = cfg.agent
    if name == "random":
        from embodmem.agents.random_agent import RandomAgent

        return RandomAgent(seed=seed)
    if name == "oracle":
        from embodmem.agents.oracle import OracleAgent

        return OracleAgent(env)
    if name == "explorer":
        from embodmem.agents.explorer import ExplorerConfig, FrontierExplorer

        return FrontierExplorer(embedder, agent_settings(ExplorerConfig, a))
    if name in ("memory", "vlm"):
        from embodmem.agents.memory_agent import MemoryAgent, MemoryAgentConfig

        agent = MemoryAgent(embedder, build_memory(cfg, embedder.dim), agent_settings(MemoryAgentConfig, a))
        if name == "memory":
            return agent
        from embodmem.agents.vlm_agent import build_vlm_agent

        return build_vlm_agent(cfg, embedder, agent)  # the memory agent executes the VLM's plans
    raise ValueError(f"agent.name={name!r} is unknown; allowed: memory, explorer, oracle, random, vlm")


def run(cfg: DictConfig, out_dir: str | Path) -> list[dict[str, Any]]:
    """Run the experiment described by ``cfg`` into ``out_dir``; returns the metrics records."""
    validate(cfg)
    out_dir = Path(out_dir)
    exp = cfg.experiment
    tasks = tuple(exp.tasks) if exp.tasks else get_sequence(exp.sequence)
    sequence = exp.sequence if not exp.tasks else "+".join(tasks)
    run_id = cfg.run_id or out_dir.name
    atomic_write_text(out_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    writer = RunWriter(out_dir, cfg.logger.episode_logs, resume=exp.resume)
    profiler = Profiler()
    kwargs = env_kwargs(cfg)
    embedder = None if cfg.agent.name in ("oracle", "random") and not exp.baselines else build_embedder(cfg)
    recorder = None
    if cfg.video.enabled:
        from embodmem.video import EpisodeRecorder

        recorder = EpisodeRecorder(cfg.video, out_dir / "videos")

    main_name = str(cfg.agent.name.value if hasattr(cfg.agent.name, "value") else cfg.agent.name)
    has_memory = main_name in MEMORY_AGENTS
    runs: list[tuple[str, str]] = [(main_name, c) for c in exp.conditions] if has_memory else [(main_name, "single")]
    runs += [(b, "single") for b in exp.baselines if b != main_name]
    total = len(exp.world_seeds) * len(runs) * len(tasks)
    bar = tqdm(total=total, desc="episodes", unit="ep", disable=not cfg.logger.progress)
    start = str(exp.start.value if hasattr(exp.start, "value") else exp.start)

    for world_seed in exp.world_seeds:
        if exp.resume and world_done(writer, runs, sequence, int(world_seed), int(cfg.seed), len(tasks), exp.gem_eval):
            bar.update(len(runs) * len(tasks))
            continue
        env = build_env(cfg, tasks, int(world_seed))
        starts: list[tuple[int, int, int]] | None = None
        for name, condition in runs:
            agent = build_agent(name, cfg, embedder, env, cfg.seed)
            if hasattr(agent, "profiler"):
                agent.profiler = profiler
            if condition == "warm" and exp.load_memory:
                from embodmem.memory import AgentMemory

                agent.memory = AgentMemory.load(exp.load_memory, expect_dim=embedder.dim)
            spec = SequenceSpec(sequence, tasks, int(world_seed), int(cfg.seed), condition, start, starts)

            def on_episode(result, agent=agent, spec=spec):
                if recorder is not None:
                    recorder.finish(result)
                writer.write(result, kwargs)
                bar.update(1)
                if exp.gem_eval and spec.condition == "warm":
                    after = result.record["task_index"]
                    writer.write_records(gem_evaluations(env, agent, spec, run_id, after))

            if exp.gem_eval and condition == "warm":
                writer.write_records(gem_evaluations(env, agent, spec, run_id, 0))
            on_step = recorder.step if recorder is not None else None
            if recorder is not None:
                recorder.bind(env, agent)
            results = run_sequence(env, agent, spec, run_id, profiler, exp.sleep_between_tasks and condition == "warm", on_episode, on_step)
            if starts is None:
                starts = [tuple(r.log["start_pose"]) for r in results]
            if condition == "warm" and exp.save_memory and getattr(agent, "memory", None) is not None:
                agent.memory.save(out_dir / "memory" / f"world{world_seed}")
    bar.close()

    steps = sum(r["steps"] for r in writer.records if r["condition"] != "eval")
    profile = profiler.table(steps)
    atomic_write_json(out_dir / "profile.json", {"steps": steps, "sections": profile})
    from embodmem.report import print_report, print_table, write_summary

    result = write_summary(writer.records, out_dir, plots=cfg.logger.plots)
    print_report(result)
    print()
    print_table(profile, title=f"Where the time went ({steps} agent steps)")
    print(f"\noutputs: {out_dir}")
    return writer.records


def world_done(writer: RunWriter, runs: list[tuple[str, str]], sequence: str, world_seed: int, seed: int, n_tasks: int, gem: bool) -> bool:
    """Whether metrics.jsonl already holds every episode of this world (then resume skips it)."""
    base = {"sequence": sequence, "world_seed": world_seed, "seed": seed, "eval_after": None}
    keys = [episode_key({**base, "agent": a, "condition": c, "task_index": i + 1}) for a, c in runs for i in range(n_tasks)]
    if gem:
        keys += [
            episode_key({**base, "agent": a, "condition": "eval", "task_index": j + 1, "eval_after": after})
            for a, c in runs if c == "warm" for after in range(n_tasks + 1) for j in range(n_tasks)
        ]  # fmt: skip
    return all(k in writer.done for k in keys)


register_configs()


@hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")
def hydra_main(cfg: DictConfig) -> None:
    run(cfg, HydraConfig.get().runtime.output_dir)


def main() -> None:
    """Console entry point (``embodmem-run``)."""
    try:
        hydra_main()
    except ValueError as err:  # configuration errors: one clear line, no traceback
        print(f"embodmem-run: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
