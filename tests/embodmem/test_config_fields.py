"""Every config field is settable from the command line and reaches the object that uses it.

The test walks the schemas (the dataclasses registered in Hydra's ConfigStore: the agents', the VLM's,
the environment's, the memory's, the embedder's, the experiment's and the video's): for each field,
``group.field=<a valid value other than the composed default>`` must compose, pass validation, and
show up in the built object (the agent's config, the environment, the memory, the embedder, the run
plan, the writer, the recorder). A field added to a schema without a row in :data:`VALUES` fails
:func:`test_every_field_has_a_value`, so no setting can be left unreachable by accident.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from hydra import compose, initialize_config_module
from omegaconf import DictConfig

from embodmem.agents.config import ExplorerConfig, MemoryAgentConfig
from embodmem.agents.variants import get_variant
from embodmem.app import build_agent, build_embedder, build_env, build_memory, build_writer, experiment_plan
from embodmem.config import (
    AgentConfig,
    Config,
    ConfigError,
    EmbedderConfig,
    EnvConfig,
    EQAConfig,
    ExperimentConfig,
    MemoryConfig,
    VideoConfig,
    VLMConfig,
    WorldConfig,
    part_config,
    validate,
    world_changes,
)
from embodmem.embedding.checkpoints import ASSETS, DEFAULT_MODEL
from embodmem.envs.changes import WorldChanges
from embodmem.envs.tasks import SEQUENCES
from embodmem.eqa.config import ChangingEQAConfig
from embodmem.video import EpisodeRecorder

TEST_MODEL = "embodmem-test-clip"
"""The project's CLIP architecture under another name: a valid, non-default ``embedder.model``."""
KEY_ENV = "EMBODMEM_TEST_FIELDS_KEY"

VALUES: dict[str, Any] = {
    # agent: the explorer's and the memory agent's settings (agents/config.py), then the group's own
    "agent.detect_probability": 0.6,
    "agent.confirm_probability": 0.6,
    "agent.max_candidate_range_m": 30.0,
    "agent.look_range_cells": 3.0,
    "agent.clear_sight_share": 0.25,
    "agent.stop_range_cells": 1.0,
    "agent.centre_probability": 0.8,
    "agent.face_travel": False,
    "agent.reuse_below": 2.0,
    "agent.relocalise": False,
    "agent.relocalise_margin": 2.5,
    "agent.relocalise_min_hits": 5.0,
    "agent.relocalise_agree": 4,
    "agent.clean_background_stop": False,
    "agent.coverage_by_kind": False,
    "agent.confirm_centre_adjacent": False,
    "agent.centre_at_scale_for_instances": False,
    "agent.face_objects_in_fog": False,
    "agent.face_objects_across_view": False,
    "agent.fog_limited_look": True,
    "agent.look_beside_objects_in_fog": False,
    "agent.face_passing_objects_in_fog": False,
    "agent.passing_object_cells": 3.0,
    "agent.small_object_cells": 2,
    "agent.restart_when_stuck": False,
    "agent.seen_within_detection_range": True,
    "agent.memory_probability": 0.8,
    "agent.memory_k": 16,
    "agent.requery_every": 10,
    "agent.recheck_probability": 0.2,
    "agent.min_viewpoints": 3,
    "agent.visit_weak_sightings": False,
    "agent.support_scale": 2.5,
    "agent.place_radius": 1,
    "agent.extent_radius": 2,
    "agent.confirm_range_cells": 3.0,
    "agent.max_recall_rejections": 1,
    "agent.recall": False,
    "agent.carry_map": False,
    "agent.check_same_view": False,
    "agent.own_trail_only": False,
    "agent.contradict_by_map": False,
    "agent.recall_within_found_range": False,
    "agent.recall_where_recognised": False,
    "agent.name": "explorer",
    "agent.variant": "memory_no_map",
    "agent.memory": "embodmem.memory:AgentMemory",  # a plug-in memory (here the stock class by its path)
    "agent.plugin": "embodmem.agents.random_agent:RandomAgent",  # a plug-in agent
    # agent.vlm (agents/vlm/config.py)
    "agent.vlm.mode": "high",
    "agent.vlm.base_url": "http://127.0.0.1:9/v1",
    "agent.vlm.model": "another-vlm",
    "agent.vlm.api_key_env": KEY_ENV,
    "agent.vlm.timeout_s": 5.0,
    "agent.vlm.max_retries": 1,
    "agent.vlm.call_deadline_s": 30.0,
    "agent.vlm.max_silent_s": 60.0,
    "agent.vlm.max_total_s": 600.0,
    "agent.vlm.max_reply_bytes": 2**20,
    "agent.vlm.cache_max_bytes": 2**20,
    "agent.vlm.check_endpoint": False,
    "agent.vlm.backoff_base_s": 0.5,
    "agent.vlm.backoff_max_s": 10.0,
    "agent.vlm.jitter": 0.2,
    "agent.vlm.seed": 3,
    "agent.vlm.temperature": 0.5,
    "agent.vlm.max_tokens": 256,
    "agent.vlm.structured_output": False,
    "agent.vlm.extra_body": {"top_k": 5},
    "agent.vlm.image_format": "jpeg",
    "agent.vlm.jpeg_quality": 80,
    "agent.vlm.image_size": 128,
    "agent.vlm.image_detail": "low",
    "agent.vlm.views": ["image"],
    "agent.vlm.include_sonar": False,
    "agent.vlm.memory_k": 2,
    "agent.vlm.memory_thumbnails": False,
    "agent.vlm.include_map_summary": False,
    "agent.vlm.history_len": 3,
    "agent.vlm.default_action": "turn_right",
    "agent.vlm.low_level_actions": ["turn_left", "forward", "stop"],
    "agent.vlm.max_skill_steps": 10,
    "agent.vlm.max_consecutive_failures": 3,
    "agent.vlm.cache_dir": "<tmp>/vlm-cache",
    "agent.vlm.system_prompt": "You survey the seabed.",
    # env (envs/config.py)
    "env.size": 40,
    "env.cell_size_m": 4.0,
    "env.success_distance_m": 15.0,
    "env.max_steps": 300,
    "env.image_size": 32,
    "env.fov_deg": 90.0,
    "env.extra_views": ["image_left"],
    "env.topdown": True,
    "env.sonar_beams": 12,
    "env.sonar_fov_deg": 90.0,
    "env.sonar_range_m": 30.0,
    "env.sonar_noise_m": 0.5,
    "env.odometry_noise": 0.01,
    "env.odometry_drift_pct": 0.7,
    "env.odometry_carry": True,
    "env.sonar_dropout": 0.2,
    "env.view_range_m": 30.0,
    "env.deep_view_range_m": 20.0,
    "env.n_fish": 5,
    "env.obstacle_density": 0.05,
    "env.start_min_distance_m": 40.0,
    "env.instance_goals": True,
    # memory (embodmem/memory/config.py); dim is the embedder's, see test_memory_dim_is_the_embedders
    "memory.short_term_capacity": 16,
    "memory.consolidate_to": 8,
    "memory.index_factory": "SQfp16",
    "memory.nprobe": 8,
    "memory.byte_budget": 1_048_576,
    "memory.eviction": "least_used",
    "memory.train_min": 5000,
    "memory.pq_train_points": 64,
    "memory.train_sample": 20_000,
    "memory.drift_factor": 2.0,
    "memory.keep_thumbnails": True,
    "memory.thumbnail_size": 16,
    "memory.node_rule": "pose_or_embedding",
    "memory.node_distance": 2.0,
    "memory.node_similarity": 0.7,
    "memory.dedup_threshold": 0.9,
    "memory.dedup_distance": 2.0,
    "memory.dedup_same_task": True,
    "memory.seed": 1,
    "memory.faiss_threads": 2,
    "memory.raw_vectors": "disk",
    "memory.raw_dtype": "float32",
    "memory.raw_dir": "<tmp>",
    "memory.rerank": 16,
    "memory.update_policy": "overwrite",
    "memory.recency_half_life": 3.0,
    "memory.decay_floor": 0.5,
    "memory.contradiction_similarity": 0.8,
    "memory.update_view_cells": 2.0,
    # world.changes (envs/changes.py): a change of the default sequence (wreck, then barrel)
    "world.changes.name": "moved_drums",
    "world.changes.changes": [
        {
            "action": "move",
            "object": "barrel",
            "task": 2,
            "instance": 0,
            "step": 0,
            "to": "far",
            "variant": None,
            "distance": 1,
        }
    ],
    "world.changes.seed": 3,
    "world.changes.hoist": True,
    # embedder (embodmem/config.py)
    "embedder.model": TEST_MODEL,
    "embedder.pretrained": None,
    "embedder.device": "cpu:0",
    "embedder.batch_size": 8,
    "embedder.cache_size": 10,
    "embedder.threads": 2,
    "embedder.runtime": "torch",
    # experiment (embodmem/config.py)
    "experiment.sequence": "shallow_tour",
    "experiment.sequences": ["wreck_then_barrel", "deep_pair"],
    "experiment.tasks": ["barrel"],
    "experiment.world_seeds": [1002],
    "experiment.split": "custom",
    "experiment.variants": ["memory_no_recall"],
    "experiment.conditions": ["warm"],
    "experiment.baselines": ["oracle"],
    "experiment.start": "fixed0",
    "experiment.sleep_between_tasks": True,
    "experiment.poison_k": 2,
    "experiment.poison_place": "trail",
    "experiment.gem_eval": True,
    "experiment.save_memory": True,
    "experiment.load_memory": "<tmp>/saved-memory",
    "experiment.resume": True,
    "experiment.lanes": 3,
    # experiment.eqa: the question-answering mode (embodmem/config.py EQAConfig)
    "experiment.eqa.enabled": True,
    "experiment.eqa.questions": "test",
    "experiment.eqa.answerers": ["oracle"],
    "experiment.eqa.prior": "my_dev_questions.jsonl",
    "experiment.eqa.tours": 3,
    "experiment.eqa.vlm_frames": 4,
    # experiment.eqa.changing: questions over a changing world (embodmem/eqa/config.py ChangingEQAConfig)
    "experiment.eqa.changing.enabled": True,
    "experiment.eqa.changing.split": "calibration",
    "experiment.eqa.changing.worlds": 3,
    "experiment.eqa.changing.first": 1005,
    "experiment.eqa.changing.types": ["appearance", "abstention"],
    "experiment.eqa.changing.tasks": 3,
    "experiment.eqa.changing.leg_steps": 40,
    "experiment.eqa.changing.prior_worlds": 10,
    # video (embodmem/config.py)
    "video.enabled": True,
    "video.episodes": "failures",
    "video.fps": 5,
    "video.size": 64,
    "video.format": "webm",
    # the run
    "seed": 3,
    "run_id": "fields",
}
"""A valid value other than the composed default, for every field (``<tmp>``: the test's folder)."""

WITH: dict[str, list[str]] = {"memory.rerank": ["memory.raw_vectors=disk"]}
"""Overrides a field's value needs beside it to pass validation (re-ranking reads the raw vectors on disk)."""

SCHEMAS: dict[str, type] = {
    "agent": AgentConfig,
    "agent.vlm": VLMConfig,
    "env": EnvConfig,
    "memory": MemoryConfig,
    "embedder": EmbedderConfig,
    "experiment": ExperimentConfig,
    "experiment.eqa": EQAConfig,
    "experiment.eqa.changing": ChangingEQAConfig,
    "video": VideoConfig,
    "world": WorldConfig,
    "world.changes": WorldChanges,
}
NOT_SETTABLE = {"memory.dim"}
"""Set by the app from the embedder (test_memory_dim_is_the_embedders)."""
TOP_LEVEL = ("seed", "run_id")


def schema_keys() -> set[str]:
    keys = {f"{prefix}.{f.name}" for prefix, schema in SCHEMAS.items() for f in dataclasses.fields(schema)}
    top = {f.name for f in dataclasses.fields(Config)}
    assert top - set(SCHEMAS) - {"logger"} == set(TOP_LEVEL)
    return (
        (keys | set(TOP_LEVEL))
        - {"agent.vlm", "experiment.eqa", "experiment.eqa.changing", "world.changes"}
        - NOT_SETTABLE
    )


def override(key: str, value: Any) -> str:
    """``key=value`` in Hydra's override grammar."""

    def text(v: Any) -> str:
        if v is None:
            return "null"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, list):
            return "[" + ",".join(text(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ",".join(f"{k}:{text(x)}" for k, x in v.items()) + "}"
        if isinstance(v, str):
            return json.dumps(v)
        return repr(v)

    return f"{key}={text(value)}"


@pytest.fixture(scope="module")
def test_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The project's CLIP architecture registered with open_clip under :data:`TEST_MODEL`."""
    import open_clip

    folder = tmp_path_factory.mktemp("model")
    shutil.copy(ASSETS / f"{DEFAULT_MODEL}.json", folder / f"{TEST_MODEL}.json")
    open_clip.add_model_config(folder / f"{TEST_MODEL}.json")
    yield TEST_MODEL
    torch.set_num_threads(1)  # embedder.threads=2 sets it process-wide


@pytest.fixture(scope="module")
def embedder() -> Any:
    return build_embedder(compose_job([]))


def compose_job(overrides: list[str]) -> DictConfig:
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        return compose("config", overrides=overrides)


def test_every_field_has_a_value() -> None:
    keys = schema_keys()
    assert set(VALUES) == keys, {"missing": sorted(keys - set(VALUES)), "stale": sorted(set(VALUES) - keys)}


def reached(key: str, cfg: DictConfig, tmp: Path, embedder: Any) -> Any:
    """The value of ``key`` as the object that uses it holds it."""
    group, _, name = key.rpartition(".")
    env = build_env(cfg, ("wreck",), 1001)
    if group == "agent.vlm":
        return getattr(build_agent("vlm", cfg, embedder, env, 0).config, name)
    if group == "agent":
        plan = experiment_plan(cfg, tmp)
        if name in ("name", "memory", "plugin"):
            return plan.runs[0][0]  # the main agent runs first (a plug-in's rows carry its name)
        if name == "variant":
            return build_agent(plan.runs[0][0], cfg, embedder, env, 0).name
        agent = build_agent("memory", cfg, embedder, env, 0)
        assert isinstance(agent.config, MemoryAgentConfig)
        if name in {f.name for f in dataclasses.fields(ExplorerConfig)}:  # the explorer baseline too
            assert getattr(build_agent("explorer", cfg, embedder, env, 0).config, name) == getattr(agent.config, name)
        return getattr(agent.config, name)
    if group == "env":
        return getattr(env.config, name)
    if group == "memory":
        return getattr(build_memory(cfg, 128, get_variant("memory")).config, name)
    if group == "embedder":
        e = build_embedder(cfg)
        seen = {"model": e.model_name, "pretrained": e.pretrained, "device": str(e.device), "runtime": e.runtime}
        return seen[name] if name in seen else getattr(e, name)
    if group == "experiment.eqa":
        return getattr(part_config("experiment.eqa", EQAConfig, cfg), name)
    if group == "experiment.eqa.changing":
        return getattr(part_config("experiment.eqa", EQAConfig, cfg).changing, name)
    if group == "world.changes":
        if name == "changes":  # what the env applies
            return [dataclasses.asdict(c) for c in env.changes.changes] if env.changes is not None else []
        return getattr(world_changes(cfg), name)
    if group == "video":
        recorder = EpisodeRecorder(cfg.video, tmp / "videos")
        return getattr(recorder, name)
    plan = experiment_plan(cfg, tmp)
    runs = dict.fromkeys(plan.runs)
    by_field = {
        "seed": plan.seed,
        "run_id": plan.run_id,
        "sequence": [name for name, _ in plan.sequences][0],
        "sequences": [name for name, _ in plan.sequences],
        "tasks": list(plan.sequences[0][1]),
        "world_seeds": plan.world_seeds,
        "split": plan.split,
        "variants": [a for a in dict.fromkeys(a for a, c in runs if c in ("warm", "cold")) if a != plan.runs[0][0]],
        "conditions": sorted({c for a, c in runs if a == "memory"}),
        "baselines": [a for a, c in runs if c == "single"],
        "start": plan.start,
        "sleep_between_tasks": plan.sleep_between_tasks,
        "poison_k": plan.poison_k,
        "poison_place": plan.poison_place,
        "gem_eval": plan.gem_eval,
        "save_memory": plan.save_memory_dir == tmp / "memory",
        "load_memory": str(plan.load_memory),
        "resume": build_writer(cfg, tmp / "run").resume,
        "lanes": plan.lanes,
    }
    return by_field[name]


@pytest.mark.parametrize("key", sorted(VALUES))
def test_the_field_reaches_its_object(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, test_model: str, embedder: Any
) -> None:
    value = VALUES[key]
    if isinstance(value, str) and value.startswith("<tmp>"):
        value = value.replace("<tmp>", str(tmp_path))
    monkeypatch.setenv(KEY_ENV, "test-key")
    (tmp_path / "saved-memory").mkdir()
    base = compose_job([])
    default = base
    for part in key.split("."):
        default = default[part]
    assert default != value, f"{key}: {value!r} is the composed default; the test needs another value"
    cfg = compose_job([*WITH.get(key, []), override(key, value)])
    validate(cfg)
    got = reached(key, cfg, tmp_path, embedder)
    assert got == value, f"{key}={value!r} composed, but the object that uses it holds {got!r}"
    if key == "experiment.sequence":
        assert experiment_plan(cfg, tmp_path).sequences[0][1] == SEQUENCES["shallow_tour"]


def test_memory_dim_is_the_embedders() -> None:
    """memory.dim is the embedder's output size, set by the app: an override is refused in one line."""
    with pytest.raises(ConfigError, match=r"^memory.dim: 64 is not allowed; allowed: 128, the default"):
        validate(compose_job(["memory.dim=64"]))


def test_instance_goals_need_the_world_with_variants() -> None:
    """A run holding description or image goals without env.instance_goals is refused in one line;
    with it, and with the variants CLIP named, it validates."""
    with pytest.raises(
        ConfigError,
        match=r"^env.instance_goals: False is not allowed; allowed: true: experiment.sequence .goat_wreck_barrel. holds",
    ):
        validate(compose_job(["experiment.sequence=goat_wreck_barrel"]))
    validate(
        compose_job(
            ["experiment.sequence=goat_wreck_barrel", "env.instance_goals=true", "embedder.pretrained=variants"]
        )
    )
    with pytest.raises(
        ConfigError,
        match=r"^experiment.tasks: 'video.barrel.red': goal modality 'video' is unknown; allowed: description, image",
    ):
        validate(compose_job(["experiment.tasks=[video.barrel.red]", "env.instance_goals=true"]))


def test_memory_rows_build_their_agents() -> None:
    """keep-everything and naive retrieval are real agents on the memory agent's skeleton."""
    from embodmem.agents.memory_agent import MemoryAgent
    from embodmem.agents.naive_agent import NaiveRetrievalAgent

    cfg = compose_job(["env.instance_goals=true"])
    embedder = build_embedder(cfg)
    env = build_env(cfg, ("description.barrel.red",), 1000)
    naive = build_agent("memory_naive", cfg, embedder, env, 0)
    keep = build_agent("memory_keep_all", cfg, embedder, env, 0)
    assert isinstance(naive, NaiveRetrievalAgent) and type(keep) is MemoryAgent
    assert keep.frame_memory.config.index_factory == "Flat" and keep.frame_memory.config.byte_budget is None
    assert keep.frame_memory.config.consolidate_to == keep.frame_memory.config.short_term_capacity
