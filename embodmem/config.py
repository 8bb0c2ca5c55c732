"""Structured configs for the Hydra app: one dataclass per config group, registered in the ConfigStore.

Choices are Enums, so OmegaConf itself refuses a bad value and names the key and the allowed values;
:func:`validate` adds the checks types cannot express (ranges, names of tasks and sequences).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from embodmem.agents.memory_agent import MemoryAgentConfig
from embodmem.memory import MemoryConfig
from embodmem.envs.tasks import SEQUENCES, TASKS


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
    tasks: Optional[list[str]] = None
    """... or an explicit list of task names (overrides ``sequence``)."""
    world_seeds: list[int] = field(default_factory=lambda: [0])
    """Worlds to run in (each a different seabed)."""
    conditions: list[str] = field(default_factory=lambda: ["warm", "cold"])
    """For agents with memory: warm (carried over) and/or cold (reset per task)."""
    baselines: list[str] = field(default_factory=lambda: ["explorer"])
    """Memory-less agents run beside the main agent on the same starts (explorer, oracle, random)."""
    start: Start = Start.fixed0
    """Start of each task: fixed0, fixed1, random, or continue (where the last task ended)."""
    sleep_between_tasks: bool = False
    """Run the memory's offline consolidation between tasks (warm only)."""
    gem_eval: bool = False
    """Also evaluate every task after every task (fills the GEM matrix; n^2 extra episodes)."""
    save_memory: bool = False
    """Save the warm memory at the end to <run dir>/memory."""
    load_memory: Optional[str] = None
    """Start the warm condition from a memory saved by an earlier run (a directory)."""


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


def validate(cfg: Any) -> None:
    """Checks beyond types; every message names the key and what is allowed."""
    exp = cfg.experiment
    if exp.tasks:
        for t in exp.tasks:
            if t not in TASKS:
                raise ValueError(f"experiment.tasks: unknown task {t!r}; allowed: {', '.join(TASKS)}")
    elif exp.sequence not in SEQUENCES:
        raise ValueError(f"experiment.sequence={exp.sequence!r} is unknown; allowed: {', '.join(SEQUENCES)}")
    for c in exp.conditions:
        if c not in ("warm", "cold"):
            raise ValueError(f"experiment.conditions: {c!r} is not allowed; allowed: warm, cold")
    for b in exp.baselines:
        if b not in ("explorer", "oracle", "random"):
            raise ValueError(f"experiment.baselines: {b!r} is not allowed; allowed: explorer, oracle, random")
    if not exp.world_seeds:
        raise ValueError("experiment.world_seeds must name at least one world seed")
    for key in ("detect_probability", "confirm_probability", "memory_probability"):
        v = cfg.agent[key]
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"agent.{key}={v} must lie in [0, 1]")
    if cfg.agent.memory_k < 1:
        raise ValueError(f"agent.memory_k={cfg.agent.memory_k} must be >= 1")
    if cfg.env.max_steps < 1:
        raise ValueError(f"env.max_steps={cfg.env.max_steps} must be >= 1")
    if cfg.video.fps < 1 or cfg.video.size < 32:
        raise ValueError(f"video.fps={cfg.video.fps} must be >= 1 and video.size={cfg.video.size} >= 32")
