"""Structured configs for the Hydra app: one dataclass per config group, registered in the ConfigStore.

The groups are the parts' own settings classes, registered directly (as Habitat-lab does): ``env`` is
:class:`~embodmem.envs.config.EnvConfig`, ``memory`` :class:`~embodmem.memory.config.MemoryConfig`,
``agent`` extends :class:`~embodmem.agents.config.MemoryAgentConfig` with the agent's name, variant and
the VLM's :class:`~embodmem.agents.vlm.config.VLMConfig`. Every field is settable from the command line
and documented once, where it is defined; the YAML files in ``configs/`` hold only what differs.

Choices are Enums (:class:`Choice`), so OmegaConf itself refuses a bad value and names the key and the
allowed values; :func:`validate` adds the checks types cannot express (ranges, names of tasks and
sequences), mostly by building each part's config, which checks itself.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Optional, TypeVar

from hydra.core.config_store import ConfigStore
from omegaconf import (
    MISSING,  # noqa: F401
    DictConfig,
    OmegaConf,
)

from embodmem.agents.config import MemoryAgentConfig
from embodmem.agents.registry import baseline_names, get_agent_spec
from embodmem.agents.variants import VARIANTS
from embodmem.agents.vlm.config import VLMConfig
from embodmem.checks import Range, items
from embodmem.condition import REQUESTABLE
from embodmem.devices import device_refusal
from embodmem.envs.changes import ChangeError, WorldChanges, check_changes
from embodmem.envs.config import EnvConfig
from embodmem.envs.tasks import INSTANCE_GOALS, SEQUENCES, TASKS, get_task
from embodmem.eqa.config import EQA_ANSWERERS, EQAConfig, resolve_answerer
from embodmem.eqa.files import QuestionFileError, load_questions, question_file
from embodmem.memory.config import MemoryConfig
from embodmem.plugins import KINDS, PluginError, installed, is_import_path
from embodmem.splits import SPLIT_NAMES, check_worlds
from embodmem.tracking.settings import (
    MLflowSettings,
    TensorBoardSettings,
    TrackingConfigError,
    WandbSettings,
    check_backends,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")

__all__ = [
    "AgentConfig",
    "Config",
    "ConfigError",
    "EQAConfig",
    "EmbedderConfig",
    "EnvConfig",
    "ExperimentConfig",
    "LoggerConfig",
    "MemoryConfig",
    "Range",
    "VLMConfig",
    "VideoConfig",
    "WorldConfig",
    "register_configs",
    "validate",
]


class Choice(str, Enum):
    """A config choice: compares, prints and serialises as its plain string value.

    >>> str(Start.continue_), f"{Start.continue_}", Start.continue_ == "continue"
    ('continue', 'continue', True)
    """

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class AgentName(Choice):
    memory = "memory"
    explorer = "explorer"
    oracle = "oracle"
    random = "random"
    vlm = "vlm"


class PoisonPlace(Choice):
    far = "far"
    trail = "trail"


class Start(Choice):
    fixed0 = "fixed0"
    fixed1 = "fixed1"
    random = "random"
    continue_ = "continue"


class EmbedderRuntime(Choice):
    auto = "auto"
    onnx = "onnx"
    torch = "torch"


class VideoFormat(Choice):
    mp4 = "mp4"
    webm = "webm"


class VideoEpisodes(Choice):
    all = "all"
    failures = "failures"
    first = "first"
    none = "none"


@dataclass
class EmbedderConfig:
    """The CLIP embedder (open_clip)."""

    model: str = "embodmem-tiny-clip"
    """Any open_clip architecture name."""
    pretrained: Optional[str] = "default"
    """"default" (the project's own checkpoint), "variants" (the same CLIP trained to tell appearance
    variants apart, for instance goals), a local checkpoint path, or null (random weights)."""
    device: str = "auto"
    """auto, cpu, cuda, cuda:N or mps (torch's names); auto: CUDA when torch sees a GPU (frame batches
    then in float16), else the CPU (torch is asked only where a GPU driver is present)."""
    batch_size: int = 64
    """Frames per forward pass."""
    cache_size: int = 50_000
    """Frames whose embeddings are cached by content."""
    threads: int = 1
    """torch / ONNX Runtime CPU threads (1: the agent embeds one frame at a time; more threads only spin)."""
    runtime: EmbedderRuntime = EmbedderRuntime.auto
    """Single frames: auto (ONNX Runtime when a graph exported from this checkpoint exists), onnx or torch."""


@dataclass
class AgentConfig(MemoryAgentConfig):
    """Which policy runs; the memory agent's and the explorer's settings (inherited from
    :class:`~embodmem.agents.config.MemoryAgentConfig`, documented there) configure every agent built
    from them: the memory agent and its variants, the explorer baseline, the VLM agent's navigator."""

    name: AgentName = AgentName.memory
    """memory, explorer, oracle, random or vlm."""
    variant: str = "memory"
    """Memory-agent variant when name=memory (embodmem.agents.variants): memory, memory_no_recall,
    memory_no_map, memory_no_consolidation, memory_fifo_only, textlog. A variant's own settings
    (e.g. ``recall=False``) take precedence over the fields above."""
    vlm: VLMConfig = field(default_factory=VLMConfig)
    """The VLM policy (embodmem.agents.vlm.config.VLMConfig) when name=vlm."""
    memory: Optional[str] = None
    """A plug-in memory for the main memory agent (and the VLM's navigator) in place of the stock
    frame memory: ``module:Class`` or a name installed under ``embodmem.memories`` (docs/plugins.md).
    The run's rows carry its name (``<variant>+<name>`` for a variant other than memory)."""
    plugin: Optional[str] = None
    """A plug-in agent run as the main agent instead of ``name``: ``module:factory`` or a name installed
    under ``embodmem.agents`` (``agent=<it>`` on the command line sets this key)."""


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
    conditions: list[str] = field(default_factory=lambda: [c.value for c in REQUESTABLE])
    """For agents with memory: warm (carried over) and/or cold (reset per task); see
    :class:`embodmem.condition.Condition`."""
    baselines: list[str] = field(default_factory=lambda: ["explorer"])
    """Memory-less agents run beside the main agent on the same starts (explorer, oracle, random)."""
    start: Start = Start.random
    """Start of each task: random (drawn from ``seed``: a free cell at least env.start_min_distance_m
    from the target; the same for every agent and condition), fixed0, fixed1, or continue."""
    sleep_between_tasks: bool = False
    """Run the memory's offline consolidation between tasks (warm only)."""
    poison_k: int = 0
    """False memories implanted before each task after the first, warm only (embodmem.poison)."""
    poison_place: PoisonPlace = PoisonPlace.far
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
    lanes: int = 0
    """0: the runs (sequence x world x agent x condition) one after another. N >= 1: up to N runs
    advance together, one step each per round, the frames their agents embed going through the
    embedder in one batched call (embodmem.lockstep): faster, and the same records for the same N,
    but a batched forward pass may round an embedding's last bits differently (docs/experiments/speed.md, "Lockstep runs")."""
    eqa: EQAConfig = field(default_factory=EQAConfig)
    """Question answering from memory (``experiment=eqa``; embodmem.eqa)."""


@dataclass
class LoggerConfig:
    """What a run writes besides metrics.jsonl."""

    episode_logs: bool = True
    """Per-episode JSON logs (enough to replay the episode)."""
    progress: bool = True
    """Progress bars."""
    plots: bool = True
    """PNG plots at the end of the run."""
    backends: list[str] = field(default_factory=lambda: ["jsonl"])
    """Where the run is logged: jsonl (metrics.jsonl, always) plus any of tensorboard, wandb, mlflow,
    or a plug-in (``module:Class`` or an ``embodmem.loggers`` entry point); docs/tracking.md."""
    tensorboard: TensorBoardSettings = field(default_factory=TensorBoardSettings)
    wandb: WandbSettings = field(default_factory=WandbSettings)
    mlflow: MLflowSettings = field(default_factory=MLflowSettings)
    options: dict[str, Any] = field(default_factory=dict)
    """A plug-in tracker's keyword arguments, by its name in ``backends``."""


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
class WorldConfig:
    """How the world of a sequence behaves beyond what ``env`` builds."""

    changes: WorldChanges = field(default_factory=WorldChanges)
    """The ``world/changes`` group (embodmem.envs.changes.WorldChanges): objects moved, removed,
    added, re-dressed or drifting between (or during) the tasks; ``none`` keeps the world static."""


def unchecked_schema(schema: type) -> Any:
    """The schema node of a part from its declared defaults, without building the part: the memory's
    own checks need FAISS (it parses the index factory), which composing and refusing a command line
    must not import. :func:`validate` builds the part from the composed values, checks and all."""
    return OmegaConf.structured(schema)


@dataclass
class Config:
    """The whole run."""

    env: EnvConfig = field(default_factory=EnvConfig)
    world: WorldConfig = field(default_factory=WorldConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    memory: MemoryConfig = field(default_factory=lambda: unchecked_schema(MemoryConfig))
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    experiment: ExperimentConfig = field(default_factory=ExperimentConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    video: VideoConfig = field(default_factory=VideoConfig)
    seed: int = 0
    """Episode seed (fish, particles, random starts, noise)."""
    run_id: Optional[str] = None
    """Label of the run (default: the output directory's name)."""


def register_configs() -> None:
    """Put the schemas into Hydra's ConfigStore (the YAML files in configs/ extend them); once a
    process: the store keeps them, and building the nodes is most of the config layer's start."""
    cs = ConfigStore.instance()
    if "config_schema.yaml" in cs.repo:
        return
    cs.store(name="config_schema", node=Config)
    cs.store(group="env", name="base_env", node=EnvConfig)
    cs.store(group="world/changes", name="base_world_changes", node=WorldChanges)
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


RANGES: dict[str, Range] = {
    "seed": Range(0, integer=True),
    "experiment.world_seeds": Range(0, integer=True),  # lists: every item
    "experiment.poison_k": Range(0, integer=True),
    "experiment.lanes": Range(0, 4096, integer=True),
    "embedder.batch_size": Range(1, integer=True),
    "embedder.cache_size": Range(0, integer=True),
    "embedder.threads": Range(1, integer=True),
    "video.fps": Range(1, 120, integer=True),
    "video.size": Range(32, 2048, integer=True),
    "experiment.eqa.tours": Range(1, integer=True),
    "experiment.eqa.vlm_frames": Range(1, 64, integer=True),
}
"""Numeric keys of this module's own groups and their allowed ranges (None values of optional keys are
not checked); ``env``, ``agent`` and ``memory`` check their own fields (:data:`PART_CONFIGS`)."""

CHOICES: dict[str, Callable[[], Iterable[str]]] = {
    "experiment.sequence": lambda: SEQUENCES,
    "experiment.tasks": lambda: TASKS,
    "experiment.conditions": lambda: tuple(c.value for c in REQUESTABLE),
    "experiment.baselines": baseline_names,
    "experiment.sequences": lambda: SEQUENCES,
    "experiment.variants": lambda: VARIANTS,
    "experiment.split": lambda: SPLIT_NAMES,
    "agent.variant": lambda: VARIANTS,
    "experiment.eqa.answerers": lambda: EQA_ANSWERERS,
}
"""String keys (or lists of strings) and the names they may take; Enums are checked by OmegaConf."""
PLUGIN_KEYS: dict[str, Literal["agent", "memory", "any", "answerer"]] = {
    "experiment.variants": "any",
    "experiment.baselines": "agent",
    "experiment.eqa.answerers": "answerer",
    "agent.memory": "memory",
    "agent.plugin": "agent",
}
"""Keys that also take plug-ins (embodmem.plugins: ``module:Class`` or an installed name) beyond
their :data:`CHOICES`, and which kind: each is imported and checked against its protocol."""
ALSO_ALLOWED: dict[str, tuple[Callable[[], Iterable[str]], str]] = {
    "experiment.tasks": (
        lambda: INSTANCE_GOALS,
        "or an instance goal description.<task>.<variant> / image.<task>.<variant>",
    ),
}
"""Names a key also takes beyond :data:`CHOICES`, too many to list, and how the refusal says so."""

NON_EMPTY = ("experiment.tasks", "experiment.world_seeds", "experiment.conditions", "experiment.eqa.answerers")
"""Lists that must name at least one item when set (``experiment.tasks=null`` means: use the sequence)."""

PART_CONFIGS: tuple[tuple[str, type], ...] = (
    ("env", EnvConfig),
    ("agent", MemoryAgentConfig),
    ("agent.vlm", VLMConfig),
    ("memory", MemoryConfig),
)
"""Groups whose dataclass checks its own fields when built: (key, the class built from the group)."""


def check_known_keys(node: DictConfig, schema: type, prefix: str = "") -> None:
    """Refuse keys the schema lacks (``+key=value`` additions bypass OmegaConf's own check)."""
    names = [f.name for f in dataclasses.fields(schema)]
    for key in node:
        full = f"{prefix}{key!s}"
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


def part_config(key: str, schema: type[T], cfg: DictConfig) -> T:
    """The part's config built from the group at ``key`` (the fields ``schema`` has): the part's own
    checks run, and their message names the config key (``EnvConfig.size`` -> ``env.size``)."""
    values = OmegaConf.to_container(OmegaConf.select(cfg, key), resolve=True)
    assert isinstance(values, dict)
    names = {f.name for f in dataclasses.fields(schema)}
    try:
        return schema(**{str(k): v for k, v in values.items() if k in names})
    except ValueError as err:
        message = str(err).replace(f"{schema.__name__}.", f"{key}.").split(": Error in ")[0]  # drop FAISS's C++ trace
        raise ConfigError(hide_secrets(message)) from None


def check_plugin(key: str, name: str, stock: Iterable[str] = ()) -> None:
    """A plug-in named at ``key`` imports and has its protocol's methods (ConfigError, one line); a
    name that is neither ``stock`` nor installed nor a path lists every allowed one."""
    kind = PLUGIN_KEYS[key]
    groups = {
        "agent": ("agent",),
        "memory": ("memory",),
        "any": ("agent", "memory"),
        "answerer": ("answerer", "memory"),
    }
    found = {g: sorted(installed(g)) for g in groups[kind]}
    if not is_import_path(name) and "+" not in name and not any(name in names for names in found.values()):
        plugins = ", ".join(f"{KINDS[g].group}: {', '.join(n) or 'none'}" for g, n in found.items())
        allowed = (", ".join(stock) + "; " if stock else "") + f"installed plug-ins: {plugins}"
        raise ConfigError.bad_value(key, name, f"{allowed}; or a 'module:Class' path (embodmem-run --list-plugins)")
    try:
        if kind == "answerer":
            resolve_answerer(name)
        else:
            get_agent_spec(name, key, kind)
    except PluginError as err:
        raise ConfigError(str(err)) from None


def _check_key_env(cfg: DictConfig) -> None:
    """``agent.vlm.api_key_env``: the NAME of a variable, never a key put where its name belongs."""
    key_env = cfg.agent.vlm.api_key_env
    if key_env is not None and not (isinstance(key_env, str) and ENV_VAR_NAME.fullmatch(key_env)):
        raise ConfigError.bad_value(
            "agent.vlm.api_key_env",
            key_env,
            "null or the NAME of an environment variable holding the key (A-Z, 0-9, _), never the key itself",
        )


def _check_memory_dim(cfg: DictConfig) -> None:
    """``memory.dim`` is the embedder's output size, which the app sets: an override would be ignored."""
    if cfg.memory.dim != MemoryConfig.dim:
        raise ConfigError.bad_value(
            "memory.dim", cfg.memory.dim, f"{MemoryConfig.dim}, the default (the app sets the embedder's output size)"
        )


def _check_stop_range(cfg: DictConfig) -> None:
    """Agents stop to confirm a target from up to ``agent.stop_range_cells`` away: never farther than
    the task counts as success."""
    radius = cfg.env.success_distance_m / cfg.env.cell_size_m
    if cfg.agent.stop_range_cells > radius + 1e-9:
        raise ConfigError.bad_value(
            "agent.stop_range_cells",
            cfg.agent.stop_range_cells,
            f"a number in [1, env.success_distance_m / env.cell_size_m = {radius:g}]",
        )


def _check_lanes(cfg: DictConfig) -> None:
    """Videos follow one episode at a time: lanes that advance together would interleave their frames."""
    if cfg.experiment.lanes and cfg.video.enabled:
        raise ConfigError.bad_value(
            "experiment.lanes", cfg.experiment.lanes, "0 (one run at a time) when video.enabled=true"
        )


def _check_instance_goals(cfg: DictConfig) -> None:
    """Description and image goals need the world with variants, set in ``env`` so that episode logs
    (which record the env settings) replay the same world for every task of the sequence."""
    exp = cfg.experiment
    sources = [("experiment.tasks", list(items(exp.tasks)) if exp.tasks is not None else [])]
    sources += [
        (f"{key} {seq!r}", list(SEQUENCES[seq]))
        for key, seqs in (("experiment.sequence", [exp.sequence]), ("experiment.sequences", items(exp.sequences)))
        for seq in seqs
        if seq in SEQUENCES
    ]
    for source, names in sources:
        goals = [n for n in names if n in INSTANCE_GOALS]
        if goals and not cfg.env.instance_goals:
            raise ConfigError.bad_value(
                "env.instance_goals", False, f"true: {source} holds instance goals (first: {goals[0]})"
            )


def world_changes(cfg: DictConfig) -> WorldChanges:
    """The ``world.changes`` group as its dataclass (the env applies it)."""
    node = OmegaConf.select(cfg, "world.changes")
    if node is None:
        return WorldChanges()
    changes = OmegaConf.to_object(node)
    assert isinstance(changes, WorldChanges)
    return changes


def _check_world_changes(cfg: DictConfig) -> None:
    """Every change fits every sequence and world of the run (one line naming the change), before any work."""
    changes = world_changes(cfg)
    if not changes.active:
        return
    exp = cfg.experiment
    if exp.sequences:
        sequences = [SEQUENCES[s] for s in exp.sequences]
    elif exp.tasks:
        sequences = [tuple(exp.tasks)]
    else:
        sequences = [SEQUENCES[exp.sequence]]
    env = part_config("env", EnvConfig, cfg)
    variants = env.instance_goals or any(get_task(t).instance_goal for tasks in sequences for t in tasks)
    try:
        for tasks in sequences:
            check_changes(
                changes,
                tasks,
                [int(w) for w in exp.world_seeds],
                env.size,
                env.obstacle_density,
                variants,
                env.step_budget,
            )
    except ChangeError as err:
        raise ConfigError(str(err)) from None


def validate(cfg: DictConfig) -> None:
    """Every check types cannot express; raises :class:`ConfigError` (one line) at the first bad value."""
    check_known_keys(cfg, Config)
    for key in NON_EMPTY:
        value = OmegaConf.select(cfg, key)
        if value is not None and len(value) == 0:
            raise ConfigError.bad_value(key, [], "a non-empty list")
    for key, allowed in CHOICES.items():
        names = tuple(allowed())
        extra, extra_text = ALSO_ALLOWED.get(key, (tuple, ""))
        for item in items(OmegaConf.select(cfg, key)):
            if key in PLUGIN_KEYS and item is not None and item not in names:
                check_plugin(key, item, names)
                continue
            if item is not None and item not in names and item not in tuple(extra()):
                if key == "experiment.tasks" and isinstance(item, str) and item.count(".") == 2:
                    try:  # an instance goal: say which part is wrong (modality, task or variant)
                        get_task(item)
                    except ValueError as err:
                        raise ConfigError(f"{key}: {item!r}: {err}") from None
                raise ConfigError.bad_value(key, item, ", ".join(names) + (f"; {extra_text}" if extra_text else ""))
    for key, rng in RANGES.items():
        for item in items(OmegaConf.select(cfg, key)):
            if item is not None and not rng.allows(item):
                raise ConfigError.bad_value(key, item, rng.describe())
    for key in ("agent.memory", "agent.plugin"):
        value = OmegaConf.select(cfg, key)
        if value is not None:
            check_plugin(key, str(value))
    if cfg.agent.memory is not None and VARIANTS[cfg.agent.variant].textlog:
        raise ConfigError.bad_value(
            "agent.memory",
            cfg.agent.memory,
            f"null with agent.variant={cfg.agent.variant} (a text log keeps no frames)",
        )
    _check_key_env(cfg)
    _check_memory_dim(cfg)
    _check_stop_range(cfg)
    _check_instance_goals(cfg)
    _check_lanes(cfg)
    try:  # trackers: known names, installed packages, plug-in options (before any work)
        check_backends(cfg.logger.backends, cfg.logger.options, str(cfg.logger.wandb.mode))
    except TrackingConfigError as err:
        raise ConfigError(str(err)) from None
    _check_world_changes(cfg)
    for key, schema in PART_CONFIGS:
        part_config(key, schema, cfg)
    load = cfg.experiment.load_memory
    if load is not None and not Path(load).is_dir():
        raise ConfigError.bad_value(
            "experiment.load_memory", load, "null or an existing directory saved by experiment.save_memory"
        )
    refusal = device_refusal(str(cfg.embedder.device))
    if refusal is not None:
        raise ConfigError.bad_value("embedder.device", cfg.embedder.device, refusal)
    pretrained = cfg.embedder.pretrained
    if pretrained not in (None, "default", "variants") and not Path(pretrained).is_file():
        raise ConfigError.bad_value(
            "embedder.pretrained", pretrained, "default, variants, null (random weights) or an existing checkpoint file"
        )
    exp = cfg.experiment
    try:
        check_worlds(exp.split, [int(w) for w in exp.world_seeds])
    except ValueError as err:
        raise ConfigError(str(err)) from None
    if exp.eqa.enabled:
        _check_eqa_files(exp.eqa)
        part_config("experiment.eqa", EQAConfig, cfg)  # its own checks: the changing-world settings


def _check_eqa_files(eqa: DictConfig) -> None:
    """The question files of ``experiment=eqa`` load (format, version, checksum, every line), and the
    blind answerer's prior is not the test split's."""
    if eqa.prior in ("test", "attr_test"):
        raise ConfigError.bad_value("experiment.eqa.prior", eqa.prior, "dev, attr_dev or a question file of dev worlds")
    for key in ("questions", "prior"):
        try:
            load_questions(question_file(str(eqa[key])))
        except QuestionFileError as err:
            raise ConfigError(f"experiment.eqa.{key}: {err}") from None
