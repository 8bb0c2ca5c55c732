"""Structured configs for the Hydra app: one dataclass per config group, registered in the ConfigStore.

Choices are Enums, so OmegaConf itself refuses a bad value and names the key and the allowed values;
:func:`validate` adds the checks types cannot express (ranges, names of tasks and sequences).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import (
    MISSING,  # noqa: F401
    DictConfig,
    ListConfig,
    OmegaConf,
)

from embodmem.agents.memory_agent import MemoryAgentConfig
from embodmem.agents.variants import VARIANTS
from embodmem.envs.tasks import SEQUENCES, TASKS
from embodmem.memory import MemoryConfig
from embodmem.poison import POISON_PLACES
from embodmem.splits import SPLIT_NAMES, check_worlds


class AgentName(str, Enum):
    memory = "memory"
    explorer = "explorer"
    oracle = "oracle"
    random = "random"
    vlm = "vlm"


class Start(str, Enum):
    fixed0 = "fixed0"
    fixed1 = "fixed1"
    random = "random"
    continue_ = "continue"


class EmbedderRuntime(str, Enum):
    auto = "auto"
    onnx = "onnx"
    torch = "torch"


class VideoFormat(str, Enum):
    mp4 = "mp4"
    webm = "webm"


class VideoEpisodes(str, Enum):
    all = "all"
    failures = "failures"
    first = "first"
    none = "none"


@dataclass
class EnvConfig:
    """The underwater world (see ``embodmem.envs.underwater.UnderwaterEnv``)."""

    size: int = 32
    """World side in cells (>= 24)."""
    cell_size_m: float = 5.0
    """Metres per cell."""
    success_distance_m: float = 10.0
    """Stop within this distance of a target instance to succeed (>= cell_size_m)."""
    max_steps: int = 400
    """Step budget per task."""
    image_size: int = 64
    """First-person camera side in pixels."""
    fov_deg: float = 75.0
    """Camera field of view."""
    extra_views: list[str] = field(default_factory=list)
    """Extra cameras: image_left, image_right, image_back."""
    topdown: bool = False
    """Add MiniGrid's egocentric top-down view to observations."""
    sonar_beams: int = 24
    """Beams in the sonar fan."""
    sonar_fov_deg: float = 120.0
    """Sonar fan width."""
    sonar_range_m: float = 40.0
    """Sonar maximum range."""
    sonar_noise_m: float = 0.0
    """Gaussian noise on sonar ranges."""
    odometry_noise: float = 0.0
    """Per-move drift of the reported pose, in cells."""
    view_range_m: float = 40.0
    """Visibility in shallow water."""
    deep_view_range_m: float = 25.0
    """Visibility in deep water."""
    n_fish: Optional[int] = None
    """Fish in the world (None: size^2 / 80)."""
    obstacle_density: float = 0.08
    """Share of cells covered by rock outcrops and reefs."""
    start_min_distance_m: float = 50.0
    """Random starts lie at least this far (shortest path) from the nearest success cell."""


@dataclass
class EmbedderConfig:
    """The CLIP embedder (open_clip)."""

    model: str = "embodmem-tiny-clip"
    """Any open_clip architecture name."""
    pretrained: Optional[str] = "default"
    """"default" (the project's own checkpoint), a local checkpoint path, or null (random weights)."""
    device: str = "cpu"
    """torch device."""
    batch_size: int = 64
    """Frames per forward pass."""
    cache_size: int = 50_000
    """Frames whose embeddings are cached by content."""
    threads: int = 1
    """torch / ONNX Runtime CPU threads (1: the agent embeds one frame at a time; more threads only spin)."""
    runtime: EmbedderRuntime = EmbedderRuntime.auto
    """Single frames: auto (ONNX Runtime when a graph exported from this checkpoint exists), onnx or torch."""


@dataclass
class AgentConfig:
    """Which policy runs, and its thresholds."""

    name: AgentName = AgentName.memory
    """memory, explorer, oracle, random or vlm."""
    # Defaults come from the agents' own configs: the calibrated values live in one place.
    detect_probability: float = MemoryAgentConfig.detect_probability
    """P(target) of the current frame above which the agent approaches (calibrated: benchmarks/calibrate.py)."""
    confirm_probability: float = MemoryAgentConfig.confirm_probability
    """P(target) next to the candidate above which the agent stops."""
    memory_probability: float = MemoryAgentConfig.memory_probability
    """P(target) of a remembered frame above which the memory agent goes there (calibrated)."""
    memory_k: int = MemoryAgentConfig.memory_k
    """Frames retrieved per memory query."""
    requery_every: int = MemoryAgentConfig.requery_every
    """Steps between memory queries while exploring."""
    variant: str = "memory"
    """Memory-agent variant when name=memory (embodmem.agents.variants): memory, memory_no_recall,
    memory_no_map, memory_no_consolidation, memory_fifo_only, textlog."""
    min_viewpoints: int = MemoryAgentConfig.min_viewpoints
    """Viewpoints at which a remembered place counts as fully confirmed (fewer rank lower)."""
    place_radius: int = MemoryAgentConfig.place_radius
    """Cells within which recalled votes count for one place."""
    confirm_range_cells: float = MemoryAgentConfig.confirm_range_cells
    """A recalled place this close, in view and unoccluded, must show the target, or it is rejected."""
    max_recall_rejections: int = MemoryAgentConfig.max_recall_rejections
    """Recalled places rejected in one task after which the robot only explores."""
    reuse_below: float = MemoryAgentConfig.reuse_below
    """Reuse the last frame's embedding when the new frame differs by less than this (mean abs
    difference of 16x16 thumbnails, 0-255); 0 embeds every frame."""
    vlm: Optional[Any] = None
    """VLM policy settings (embodmem.agents.vlm.VLMConfig fields) when name=vlm."""


@dataclass
class ExperimentConfig:
    """What to run: a named task sequence over world seeds, in which conditions."""

    sequence: str = "wreck_then_barrel"
    """A named sequence (embodmem.envs.tasks.SEQUENCES) ..."""
    sequences: list[str] = field(default_factory=list)
    """... or several named sequences, each run over every world (the benchmark suite)."""
    tasks: Optional[list[str]] = None
    """... or an explicit list of task names (overrides ``sequence``)."""
    world_seeds: list[int] = field(default_factory=lambda: [1000])
    """Worlds to run in (each a different seabed); they must belong to ``split``."""
    split: str = "dev"
    """World split of ``world_seeds`` (embodmem.splits): dev, test, calibration, ..., or custom."""
    variants: list[str] = field(default_factory=list)
    """Memory-agent variants run warm and cold beside the main agent (ablations)."""
    conditions: list[str] = field(default_factory=lambda: ["warm", "cold"])
    """For agents with memory: warm (carried over) and/or cold (reset per task)."""
    baselines: list[str] = field(default_factory=lambda: ["explorer"])
    """Memory-less agents run beside the main agent on the same starts (explorer, oracle, random)."""
    start: Start = Start.random
    """Start of each task: random (drawn from ``seed``: a free cell at least env.start_min_distance_m
    from the target; the same for every agent and condition), fixed0, fixed1, or continue."""
    sleep_between_tasks: bool = False
    """Run the memory's offline consolidation between tasks (warm only)."""
    poison_k: int = 0
    """False memories implanted before each task after the first, warm only (embodmem.poison)."""
    poison_place: str = "far"
    """Where false memories claim to have been seen: "far" (random free cells far from the target)
    or "trail" (cells the robot really passed in earlier tasks, far from the target: the harder case)."""
    gem_eval: bool = False
    """Also evaluate every task after every task (fills the GEM matrix; n^2 extra episodes)."""
    save_memory: bool = False
    """Save the warm memory at the end to <run dir>/memory."""
    load_memory: Optional[str] = None
    """Start the warm condition from a memory saved by an earlier run (a directory)."""
    resume: bool = False
    """Re-run into an output directory that holds a partial run: episodes already in metrics.jsonl
    are not written again (a world whose episodes are all there is skipped; in a partly done world
    every sequence is re-simulated, so warm memory and starts match an uninterrupted run)."""


@dataclass
class LoggerConfig:
    """What a run writes besides metrics.jsonl."""

    episode_logs: bool = True
    """Per-episode JSON logs (enough to replay the episode)."""
    progress: bool = True
    """Progress bars."""
    plots: bool = True
    """PNG plots at the end of the run."""


@dataclass
class VideoConfig:
    """Episode videos."""

    enabled: bool = False
    """Record videos."""
    episodes: VideoEpisodes = VideoEpisodes.all
    """Which episodes: all, failures, first, none."""
    fps: int = 10
    """Frames per second."""
    size: int = 256
    """Height of the main panels in pixels."""
    format: VideoFormat = VideoFormat.mp4
    """mp4 (H.264, plays in browsers and slides) or webm (VP9, realtime settings)."""


@dataclass
class Config:
    """The whole run."""

    env: EnvConfig = field(default_factory=EnvConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    experiment: ExperimentConfig = field(default_factory=ExperimentConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    video: VideoConfig = field(default_factory=VideoConfig)
    seed: int = 0
    """Episode seed (fish, particles, random starts, noise)."""
    run_id: Optional[str] = None
    """Label of the run (default: the output directory's name)."""


def register_configs() -> None:
    """Put the schemas into Hydra's ConfigStore (the YAML files in configs/ extend them)."""
    cs = ConfigStore.instance()
    cs.store(name="config_schema", node=Config)
    cs.store(group="env", name="base_env", node=EnvConfig)
    cs.store(group="agent", name="base_agent", node=AgentConfig)
    cs.store(group="memory", name="base_memory", node=MemoryConfig)
    cs.store(group="embedder", name="base_embedder", node=EmbedderConfig)
    cs.store(group="experiment", name="base_experiment", node=ExperimentConfig)
    cs.store(group="logger", name="base_logger", node=LoggerConfig)
    cs.store(group="video", name="base_video", node=VideoConfig)


# --- Validation: checks beyond types, before any work starts -------------------------------------
# Table-driven: a new field gets its check by adding one row to RANGES, CHOICES or NON_EMPTY.


class ConfigError(ValueError):
    """A value the run cannot use; the message is one line naming the key, the value and what is allowed."""

    @classmethod
    def bad_value(cls, key: str, value: Any, allowed: str) -> ConfigError:
        return cls(f"{key}: {shown(key, value)} is not allowed; allowed: {allowed}")


_SECRET_KEY = re.compile(r"api_key|token|secret|password", re.IGNORECASE)
_SECRET_VALUE = re.compile(r"\b(sk|pk|rk|hf|gh[pousr])[-_][A-Za-z0-9_\-]{6,}")


def mask(text: str) -> str:
    """A secret as its first three characters and its length, never in full.

    >>> mask("sk-proj-abcdefghijklmnop")
    'sk-... (24 characters)'
    """
    return f"{text[:3]}... ({len(text)} characters)"


def shown(key: str, value: Any) -> str:
    """``repr`` of a value for an error message; values of secret-looking keys are masked."""
    if isinstance(value, str) and _SECRET_KEY.search(key) and not ENV_VAR_NAME.fullmatch(value):
        return mask(value)
    return hide_secrets(repr(value))


def hide_secrets(message: str) -> str:
    """Mask anything shaped like an API key (``sk-...``, ``hf_...``) in a message about to be printed.

    >>> hide_secrets("agent.vlm.api_key_env='sk-abcdefghij12' is invalid")
    "agent.vlm.api_key_env='sk-... (15 characters)' is invalid"
    """
    return _SECRET_VALUE.sub(lambda m: mask(m.group(0)), message)


ENV_VAR_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,127}")
"""What ``agent.vlm.api_key_env`` may hold: the NAME of a variable, upper case (a key never is)."""


@dataclass(frozen=True)
class Range:
    """Allowed numbers: ``low``/``high`` inclusive unless ``low_open``; ``integer`` refuses floats.

    >>> Range(24, 512, integer=True).describe()
    'an integer in [24, 512]'
    >>> Range(0, low_open=True).allows(0.0)
    False
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    integer: bool = False

    def allows(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or value <= self.high

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        if self.low is not None and self.high is not None:
            return f"{kind} in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}]"
        if self.low is not None:
            return f"{kind} {'>' if self.low_open else '>='} {self.low:g}"
        return f"{kind} <= {self.high:g}" if self.high is not None else kind


RANGES: dict[str, Range] = {
    "seed": Range(0, integer=True),
    "experiment.world_seeds": Range(0, integer=True),  # lists: every item
    "env.size": Range(24, 512, integer=True),
    "env.cell_size_m": Range(0, low_open=True),
    "env.success_distance_m": Range(0, low_open=True),
    "env.max_steps": Range(1, integer=True),
    "env.image_size": Range(16, 512, integer=True),
    "env.fov_deg": Range(10, 170),
    "env.sonar_beams": Range(0, 512, integer=True),
    "env.sonar_fov_deg": Range(0, 360, low_open=True),
    "env.sonar_range_m": Range(0, low_open=True),
    "env.sonar_noise_m": Range(0),
    "env.odometry_noise": Range(0),
    "env.view_range_m": Range(0, low_open=True),
    "env.deep_view_range_m": Range(0, low_open=True),
    "env.n_fish": Range(0, integer=True),
    "env.obstacle_density": Range(0, 0.3),
    "embedder.batch_size": Range(1, integer=True),
    "embedder.cache_size": Range(0, integer=True),
    "embedder.threads": Range(1, integer=True),
    "agent.detect_probability": Range(0, 1),
    "agent.confirm_probability": Range(0, 1),
    "agent.memory_probability": Range(0, 1),
    "agent.memory_k": Range(1, integer=True),
    "agent.requery_every": Range(1, integer=True),
    "agent.reuse_below": Range(0, 255),
    "experiment.poison_k": Range(0, integer=True),
    "env.start_min_distance_m": Range(0),
    "agent.min_viewpoints": Range(1, integer=True),
    "agent.place_radius": Range(0, integer=True),
    "agent.confirm_range_cells": Range(0),
    "agent.max_recall_rejections": Range(0, integer=True),
    "video.fps": Range(1, 120, integer=True),
    "video.size": Range(32, 2048, integer=True),
}
"""Numeric keys and their allowed ranges (None values of optional keys are not checked)."""


def _extra_views() -> tuple[str, ...]:
    from embodmem.envs.underwater import EXTRA_VIEWS

    return tuple(EXTRA_VIEWS)


CHOICES: dict[str, Callable[[], Iterable[str]]] = {
    "experiment.sequence": lambda: SEQUENCES,
    "experiment.tasks": lambda: TASKS,
    "experiment.conditions": lambda: ("warm", "cold"),
    "experiment.baselines": lambda: ("explorer", "oracle", "random"),
    "env.extra_views": _extra_views,
    "experiment.sequences": lambda: SEQUENCES,
    "experiment.variants": lambda: VARIANTS,
    "experiment.split": lambda: SPLIT_NAMES,
    "experiment.poison_place": lambda: POISON_PLACES,
    "agent.variant": lambda: VARIANTS,
}
"""String keys (or lists of strings) and the names they may take; Enums are checked by OmegaConf."""

NON_EMPTY = ("experiment.tasks", "experiment.world_seeds", "experiment.conditions")
"""Lists that must name at least one item when set (``experiment.tasks=null`` means: use the sequence)."""


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, ListConfig | list | tuple) else [value]


def check_known_keys(node: DictConfig, schema: type, prefix: str = "") -> None:
    """Refuse keys the schema lacks (``+key=value`` additions bypass OmegaConf's own check)."""
    names = [f.name for f in dataclasses.fields(schema)]
    for key in node:
        full = f"{prefix}{key}"
        if full == "hydra":
            continue
        if key not in names:
            section = prefix.rstrip(".") or "the config"
            value = OmegaConf.select(node, str(key), throw_on_resolution_failure=False)
            raise ConfigError(
                f"{full}: no such key (value {shown(full, value)}); keys of {section}: {', '.join(names)}"
            )
        child_type = OmegaConf.get_type(node, str(key))
        if child_type is not None and dataclasses.is_dataclass(child_type):
            check_known_keys(node[key], child_type, f"{full}.")


def _check_vlm(cfg: Any) -> None:
    """``agent.vlm``: no key put where its NAME belongs; known fields; VLMConfig's own checks for vlm runs."""
    from embodmem.agents.vlm.config import VLMConfig

    vlm = cfg.agent.vlm
    if vlm is None:
        return
    key_env = vlm.get("api_key_env")
    if key_env is not None and not (isinstance(key_env, str) and ENV_VAR_NAME.fullmatch(key_env)):
        raise ConfigError.bad_value(
            "agent.vlm.api_key_env",
            key_env,
            "null or the NAME of an environment variable holding the key (A-Z, 0-9, _), never the key itself",
        )
    names = [f.name for f in dataclasses.fields(VLMConfig)]
    for key in vlm:
        if key not in names:
            raise ConfigError(f"agent.vlm.{key}: no such key; keys of agent.vlm: {', '.join(names)}")
    if cfg.agent.name == AgentName.vlm:
        try:
            VLMConfig.from_dict(vlm)
        except ValueError as err:
            raise ConfigError(hide_secrets(str(err).replace("VLMConfig.", "agent.vlm."))) from None


def _check_memory(cfg: Any) -> None:
    """MemoryConfig's own checks (at the default dimension; the embedder's is known only once it loads)."""
    fields = OmegaConf.to_container(cfg.memory, resolve=True)
    assert isinstance(fields, dict)
    try:
        MemoryConfig(**fields)
    except ValueError as err:
        message = str(err).replace("MemoryConfig.", "memory.").split(": Error in ")[0]  # drop FAISS's C++ trace
        raise ConfigError(message) from None


def validate(cfg: Any) -> None:
    """Every check types cannot express; raises :class:`ConfigError` (one line) at the first bad value."""
    check_known_keys(cfg, Config)
    for key in NON_EMPTY:
        value = OmegaConf.select(cfg, key)
        if value is not None and len(value) == 0:
            raise ConfigError.bad_value(key, [], "a non-empty list")
    for key, allowed in CHOICES.items():
        names = tuple(allowed())
        for item in _items(OmegaConf.select(cfg, key)):
            if item is not None and item not in names:
                raise ConfigError.bad_value(key, item, ", ".join(names))
    for key, rng in RANGES.items():
        for item in _items(OmegaConf.select(cfg, key)):
            if item is not None and not rng.allows(item):
                raise ConfigError.bad_value(key, item, rng.describe())
    env = cfg.env
    if env.success_distance_m < env.cell_size_m:
        raise ConfigError.bad_value(
            "env.success_distance_m", env.success_distance_m, f"a number >= env.cell_size_m ({env.cell_size_m:g})"
        )
    load = cfg.experiment.load_memory
    if load is not None and not Path(load).is_dir():
        raise ConfigError.bad_value(
            "experiment.load_memory", load, "null or an existing directory saved by experiment.save_memory"
        )
    pretrained = cfg.embedder.pretrained
    if pretrained not in (None, "default") and not Path(pretrained).is_file():
        raise ConfigError.bad_value(
            "embedder.pretrained", pretrained, "default, null (random weights) or an existing checkpoint file"
        )
    exp = cfg.experiment
    try:
        check_worlds(exp.split, [int(w) for w in exp.world_seeds])
    except ValueError as err:
        raise ConfigError(str(err)) from None
    _check_memory(cfg)
    _check_vlm(cfg)
