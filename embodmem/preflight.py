"""Check a command line before Hydra creates anything: one line per error, exit code 2.

``hydra.main`` creates the run (or sweep) directory and writes ``.hydra/`` before it calls the task
function, and it prints tracebacks for errors raised while composing. So ``embodmem-run`` first
composes the config from ``argv`` itself, exactly as Hydra will (same search path, same overrides,
every job of a ``-m`` sweep), validates each job and the output directory, and only then hands over.
Nothing here imports torch, open_clip or faiss's models; the error path stays fast.
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra._internal.hydra import Hydra
from hydra._internal.utils import create_config_search_path, get_args_parser
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.core.object_type import ObjectType
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

from embodmem.config import Config, ConfigError, hide_secrets, register_configs, validate

if TYPE_CHECKING:
    from embodmem.memory.snapshot import MemoryDesign

BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def one_line(text: str) -> str:
    """Collapse a multi-line message into one line.

    >>> one_line("Could not find 'agent/octopus'\\n\\nAvailable options:\\n\\tmemory")
    "Could not find 'agent/octopus' Available options: memory"
    """
    return " ".join(text.split())


def describe(err: BaseException) -> str:
    """One line for an error raised while composing or validating a config (no traceback)."""
    if isinstance(err, ConfigError):
        return str(err)
    if isinstance(err, OverrideParseException):
        reason = one_line(str(err).split("See https://")[0])
        return (
            f"bad override {err.override!r}: {reason}; syntax: https://hydra.cc/docs/advanced/override_grammar/basic/"
        )
    if isinstance(err, MissingConfigException) and err.missing_cfg_file and err.options is not None:
        group, _, option = err.missing_cfg_file.rpartition("/")
        line = f"{group}: {option!r} is not allowed; allowed: {', '.join(user_options(err.options))}"
        return line + (agent_group_hint() if group == "agent" else "")
    cause = err.__cause__ if isinstance(err.__cause__, OmegaConfBaseException) else err
    converted = re.match(r"Value '(.*)' of type '\w+' could not be converted to (\w+)", str(getattr(cause, "msg", "")))
    if isinstance(cause, OmegaConfBaseException) and cause.full_key and converted:
        kind = {"Integer": "an integer", "Float": "a number", "Boolean": "true or false"}
        allowed = kind.get(converted.group(2), converted.group(2))
        return f"{cause.full_key}: {converted.group(1)!r} is not allowed; allowed: {allowed}"
    if isinstance(cause, OmegaConfBaseException) and cause.full_key and "is not a ListConfig" in str(cause.msg):
        value = getattr(cause, "value", None)
        return f"{cause.full_key}: {value!r} is not allowed; allowed: a list, e.g. {cause.full_key}=[{value}]"
    if isinstance(cause, ConfigKeyError | ConfigAttributeError) and cause.full_key:
        section, _, _ = str(cause.full_key).rpartition(".")
        keys = keys_of(section)
        allowed = (
            f"keys of {section or 'the config'}: {', '.join(keys)}" if keys else f"{section} has no keys in this config"
        )
        return f"{cause.full_key}: no such key; {allowed}"
    if isinstance(cause, OmegaConfBaseException) and cause.full_key:
        return f"{cause.full_key}: {str(cause.msg).splitlines()[0]}"
    return one_line(str(err))


def keys_of(section: str) -> list[str]:
    """The schema's keys of a dotted section ('' for the top level)."""
    node = OmegaConf.structured(Config)
    selected = OmegaConf.select(node, section) if section else node
    return [str(k) for k in selected] if isinstance(selected, DictConfig) else []


def agent_group_hint() -> str:
    """What the refusal of an unknown ``agent=`` choice adds: the keys that take variants and
    plug-ins, and the installed plug-ins by name."""
    from embodmem.plugins import installed

    agents = ", ".join(sorted(installed("agent"))) or "none"
    memories = ", ".join(sorted(installed("memory"))) or "none"
    return (
        "; a memory variant is set with agent.variant=<name> (in a sweep: agent.variant=memory,memory_naive); "
        f"a plug-in with agent=<module:factory> or an installed name (agents: {agents}; memories: {memories}; "
        "embodmem-run --list-plugins)"
    )


def plugin_overrides(argv: list[str], config_dir: Path) -> list[str]:
    """``argv`` with each plain ``agent=<value>`` that is no option of the ``agent`` group turned into
    the key that takes it: a memory variant -> ``agent.variant``, an agent plug-in (``module:factory``
    or installed under ``embodmem.agents``) -> ``agent.plugin``, a memory plug-in installed under
    ``embodmem.memories`` -> ``agent.memory``. Sweeps and anything else pass unchanged (Hydra refuses
    an unknown option, with :func:`agent_group_hint`).

    >>> plugin_overrides(["agent=memory_naive", "agent=pkg.mod:make", "seed=1"], Path("/nonexistent"))
    ['agent.variant=memory_naive', 'agent.plugin=pkg.mod:make', 'seed=1']
    """
    from embodmem.agents.variants import VARIANTS
    from embodmem.plugins import installed, is_import_path

    options = {p.stem for p in (config_dir / "agent").glob("*.yaml")}
    out = []
    for token in argv:
        key, eq, value = token.partition("=")
        if key != "agent" or not eq or "," in value or value in options:
            out.append(token)
        elif value in VARIANTS:
            out.append(f"agent.variant={value}")
        elif is_import_path(value) or value in installed("agent"):
            out.append(f"agent.plugin={value}")
        elif value in installed("memory"):
            out.append(f"agent.memory={value}")
        else:
            out.append(token)
    return out


def plugin_listing() -> str:
    """``embodmem-run --list-plugins``: the stock names and installed plug-ins of every kind."""
    from embodmem.agents.registry import AGENTS
    from embodmem.eqa.config import EQA_ANSWERERS
    from embodmem.plugins import listing

    return listing(
        {
            "memory": ["(null: the stock frame memory, embodmem.api.AgentMemory)"],
            "agent": list(AGENTS),
            "answerer": list(EQA_ANSWERERS),
        }
    )


class PreflightError(Exception):
    """The command line cannot run; ``str()`` is the one line to print."""


SCHEMA_PREFIX = "base_"
"""Config-group entries that are schemas (``base_agent``, ...; :func:`embodmem.config.register_configs`),
which the configs extend: not options a user picks."""


def user_options(options: Sequence[str]) -> list[str]:
    """A group's options as a user picks them: without the ``base_*`` schema entries.

    >>> user_options(["base_agent", "explorer", "memory"])
    ['explorer', 'memory']
    """
    return [o for o in options if not o.startswith(SCHEMA_PREFIX)]


def check_group_choices(hydra: Hydra, overrides: list[Override]) -> None:
    """Refuse a config-group choice that names a schema (``agent=base_agent``) or a file
    (``experiment=wreck_then_barrel.yaml``): Hydra accepts both and runs something unintended."""
    for override in overrides:
        group = override.key_or_group
        found = hydra.config_loader.get_group_options(group, results_filter=ObjectType.CONFIG)
        if not found:  # not a config group (a value such as seed=1)
            continue
        options = user_options(found)
        values = (
            list(override.sweep_string_iterator())
            if override.is_sweep_override()
            else [override.get_value_element_as_str()]
        )
        for value in values:
            if value.endswith(".yaml"):
                raise PreflightError(
                    f"{group}: {value!r} is not allowed; allowed: {', '.join(options)} "
                    f"(option names, without .yaml: {group}={value.removesuffix('.yaml')})"
                )
            if value.startswith(SCHEMA_PREFIX):
                raise PreflightError(
                    f"{group}: {value!r} is not allowed (a schema the configs extend); allowed: {', '.join(options)}"
                )


class _ArgumentParserError(Exception):
    """Hydra's argument parser refused the command line (instead of printing its usage and exiting)."""


def _raise(message: str) -> NoReturn:
    raise _ArgumentParserError(message)


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    """Hydra's own argument parser, whose errors become one :class:`PreflightError` line; an unknown
    ``--key value`` option gets the hint ``key=value`` (config values are set as overrides)."""
    parser = get_args_parser()
    parser.error = _raise  # type: ignore[method-assign]  # argparse's error() prints the usage and exits
    try:
        return parser.parse_args(argv)
    except _ArgumentParserError as err:
        for i, token in enumerate(argv):
            if not token.startswith("--") or token == "--" or f"{token.partition('=')[0]}" not in str(err):
                continue
            name, eq, value = token[2:].partition("=")
            if not eq:
                value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("-") else "VALUE"
            raise PreflightError(
                f"{token.partition('=')[0]}: not an option of embodmem-run; config values are set as "
                f"key=value, e.g. {name}={value} (embodmem-run --help lists the options)"
            ) from None
        raise PreflightError(f"{err}; embodmem-run --help lists the options") from None


@contextmanager
def config_store_shared_by_copies() -> Iterator[None]:
    """Hydra copies its config repository for every composition and every config group its help
    lists (about a hundred), and each copy deep-copies the ConfigStore singleton with every schema in
    it: seconds of ``--help``, a fifth of a second of each check here. Within this block the copies
    share the one instance: a copy that Hydra re-initialises fetches that very instance anyway (and
    Hydra's newer sources stop storing it), and loading a config copies its node, so nothing is
    written to the store through a copy and every composed config is the same."""
    setattr(ConfigStore, "__deepcopy__", lambda self, memo: self)  # noqa: B010 (ConfigStore defines none)
    try:
        yield
    finally:
        delattr(ConfigStore, "__deepcopy__")


@contextmanager
def _hydra(config_dir: Path, extra_config_dir: str | None) -> Iterator[Hydra]:
    """Hydra's own composer on the app's search path (plus ``--config-dir``), cleared afterwards."""
    search_path = create_config_search_path(f"file://{config_dir}")
    if extra_config_dir is not None:
        extra = os.path.abspath(extra_config_dir)
        if not os.path.isdir(extra):
            raise PreflightError(f"--config-dir: {extra!r} is not allowed; allowed: an existing directory")
        search_path.prepend(provider="command-line", path=f"file://{extra}")
    GlobalHydra.instance().clear()
    try:
        with config_store_shared_by_copies():
            yield Hydra.create_main_hydra2(task_name="app", config_search_path=search_path)
    finally:
        GlobalHydra.instance().clear()


def sweep_jobs(hydra: Hydra, config_name: str, overrides: list[str]) -> list[list[str]]:
    """The override list of every job a ``-m`` sweep launches, split as Hydra's basic sweeper splits them."""
    base = hydra.compose_config(
        config_name, overrides, run_mode=RunMode.MULTIRUN, with_log_configuration=False, validate_sweep_overrides=False
    )
    if base.hydra.sweeper.get("_target_") != BASIC_SWEEPER:  # another sweeper picks its own points
        parsed = OverridesParser.create().parse_overrides(overrides)
        return [[o for o, p in zip(overrides, parsed) if not p.is_sweep_override()]]
    params = [f"{k}={v}" for k, v in (base.hydra.sweeper.get("params") or {}).items()]
    return BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(params + overrides), None)[0]


def check_job(hydra: Hydra, config_name: str, overrides: list[str], mode: RunMode) -> DictConfig:
    """Compose one job as Hydra will and validate it; returns the config with its ``hydra`` node."""
    cfg = hydra.compose_config(config_name, overrides, run_mode=mode, with_log_configuration=False)
    job = _without_hydra(cfg)
    validate(job)
    check_feasible(job)
    return cfg


def _without_hydra(cfg: DictConfig) -> DictConfig:
    job = cfg.copy()
    with open_dict(job):
        del job["hydra"]
    return job


WORLD_SEED_LIMIT = 2**32
"""World seeds must lie in [0, 2**32): the world generator and the episode log hold them as uint32."""
POISON_MEMORY_SHARE = 0.5
"""The false memories of ``experiment.poison_k`` may need at most this share of the available memory."""


def available_memory_bytes() -> int:
    """Memory the run may use: ``MemAvailable`` (Linux), else the physical memory."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def poison_bytes(cfg: DictConfig) -> int:
    """An estimate of the bytes ``experiment.poison_k`` false memories need: at implant time the k
    chosen frames (and a copy), their embeddings; then, kept in memory for the rest of the sequence,
    one record per frame (vector, thumbnail, metadata) for each task after the first."""
    k = int(cfg.experiment.poison_k)
    image = int(cfg.env.image_size) ** 2 * 3
    vector = int(cfg.memory.dim) * 4
    thumbnail = int(cfg.memory.thumbnail_size) ** 2 * 3
    exp = cfg.experiment
    from embodmem.envs.tasks import get_sequence

    names = list(exp.sequences) or [exp.sequence]
    longest = len(exp.tasks) if exp.tasks else max(len(get_sequence(n)) for n in names)
    tasks = max(1, longest - 1)
    per_frame = 2 * image + 3 * vector + 3 * 8 + tasks * (vector + thumbnail + 64)
    return k * per_frame


def check_feasible(cfg: DictConfig) -> None:
    """Values the types and ranges allow but the run cannot carry out; raises ConfigError (one line)
    before any work: world seeds beyond the generator's range, a poison size that cannot fit in memory."""
    exp = cfg.experiment
    beyond = [int(w) for w in exp.world_seeds if int(w) >= WORLD_SEED_LIMIT]
    if beyond:
        raise ConfigError.bad_value(
            "experiment.world_seeds",
            beyond[0],
            f"integers in [0, 2**32 - 1 = {WORLD_SEED_LIMIT - 1}] (uint32 world seeds)",
        )
    if int(exp.poison_k):
        need = poison_bytes(cfg)
        have = available_memory_bytes()
        if need > POISON_MEMORY_SHARE * have:
            most = int(int(exp.poison_k) * POISON_MEMORY_SHARE * have / need)
            raise ConfigError.bad_value(
                "experiment.poison_k",
                int(exp.poison_k),
                f"at most about {most} on this machine (the false memories need about {need / 2**30:.1f} GiB; "
                f"{have / 2**30:.1f} GiB available)",
            )
    if exp.load_memory is not None:
        check_load_path(Path(exp.load_memory), run_memory_designs(cfg))


def run_memory_designs(cfg: DictConfig) -> dict[str, MemoryDesign]:
    """The memory class of every run of ``cfg`` that carries frame memory (run name -> design), for
    the check that a snapshot to load was saved by the same class; plug-ins are imported for it."""
    from embodmem.agents.registry import get_agent_spec
    from embodmem.memory.snapshot import STOCK_DESIGN, MemoryDesign
    from embodmem.plugins import describe, load_object

    agent = cfg.agent
    main = None
    if agent.plugin is None and agent.name == "memory":
        main = str(agent.variant) if agent.memory is None else (
            str(agent.memory) if agent.variant == "memory" else f"{agent.variant}+{agent.memory}"
        )  # fmt: skip
    designs = {}
    for name in [main, *cfg.experiment.variants]:
        if name is None:
            continue
        variant = get_agent_spec(name, "experiment.variants").variant
        if variant is None or variant.textlog:
            continue
        if variant.memory_class is None:
            designs[name] = STOCK_DESIGN
            continue
        target = load_object("memory", variant.memory_class)
        if inspect.isclass(target):
            version = getattr(target, "version", None)
            designs[name] = MemoryDesign(describe(target), None if version is None else str(version))
    return designs


def check_load_path(path: Path, designs: Mapping[str, MemoryDesign] | None = None) -> None:
    """``experiment.load_memory`` must hold a snapshot that ``experiment.save_memory`` wrote (its map
    manifest, and a memory manifest or a text log beside it), checked before the model loads.

    Raises:
        ConfigError: one line naming the key, the path and what is missing or broken.
    """
    from embodmem.memory.persistence import MAP_FORMAT, MemoryLoadError, read_manifest
    from embodmem.memory.snapshot import STOCK_DESIGN, read_memory_design

    designs = designs or {}

    key = "experiment.load_memory"
    if not (path / "manifest.json").is_file():
        hint = ""
        worlds = sorted(p.name for p in path.glob("*/manifest.json"))[:3] if path.is_dir() else []
        if worlds:
            hint = f" (it holds saved worlds: {', '.join(str(Path(w).parent) for w in worlds)}; name one)"
        raise ConfigError.bad_value(
            key, str(path), f"a directory saved by experiment.save_memory, with its manifest.json{hint}"
        )
    try:
        read_manifest(path, MAP_FORMAT)
        design = read_memory_design(path)
        if design == STOCK_DESIGN or (design is None and not (path / "textlog.json").is_file()):
            read_manifest(path / "memory")
    except MemoryLoadError as err:
        raise ConfigError(f"{key}: {err}") from None
    for name, run in designs.items():
        problem = None if design is None else design.refusal(run)
        if problem is not None:
            raise ConfigError(f"{key}: {path}: {problem} ({name!r}); load it into a run of that memory class")


def check_output_dir(key: str, path: str) -> None:
    """The run directory must be creatable: nearest existing ancestor a writable directory."""
    target = Path(path).expanduser().absolute()
    ancestor = target
    while not ancestor.exists():
        ancestor = ancestor.parent
    if target.exists() and not target.is_dir():
        raise PreflightError(f"{key}: {path!r} is not allowed; allowed: a directory (this is a file)")
    if not ancestor.is_dir():
        raise PreflightError(f"{key}: {path!r} is not allowed; allowed: a writable directory ({ancestor} is a file)")
    try:  # os.access says yes to root on read-only or pseudo file systems: try a real write
        with tempfile.TemporaryFile(dir=ancestor):
            pass
    except OSError as err:
        raise PreflightError(
            f"{key}: {path!r} is not allowed; allowed: a writable directory ({ancestor}: {err.strerror})"
        ) from None


def check_command_line(argv: list[str], config_dir: Path, config_name: str = "config") -> list[DictConfig]:
    """Compose and validate every job ``argv`` describes; raise :class:`PreflightError` with one line.

    Commands that write nothing (``--help``, ``--cfg``, ``--info``, shell completion) pass through
    (and return no job).

    Returns:
        each job's composed config (with its ``hydra`` node: the launcher says where it will run),
        for checks that need a service.
    """
    argv = plugin_overrides(argv, config_dir)
    args = parse_arguments(argv)
    if args.help or args.hydra_help or args.cfg or args.info or args.shell_completion:
        return []
    if args.config_path is not None:
        config_dir = Path(__file__).parent / args.config_path  # as Hydra: relative to the app module

    config_name = args.config_name or config_name
    try:
        with _hydra(config_dir, args.config_dir) as hydra:
            parsed = OverridesParser.create().parse_overrides(list(args.overrides))  # syntax first, cheapest
            check_group_choices(hydra, parsed)
            multirun = bool(args.multirun)
            if not multirun and any(o.is_sweep_override() for o in parsed):  # as Hydra decides
                multirun = hydra.get_mode(config_name, list(args.overrides)) == RunMode.MULTIRUN
            if not multirun:  # one job (unless the config itself sets hydra.mode=MULTIRUN)
                cfg = check_job(hydra, config_name, list(args.overrides), RunMode.RUN)
                multirun = cfg.hydra.mode == RunMode.MULTIRUN
                jobs = [cfg]
            if multirun:
                jobs = [
                    check_job(hydra, config_name, overrides, RunMode.MULTIRUN)
                    for overrides in sweep_jobs(hydra, config_name, list(args.overrides))
                ]
                cfg = jobs[-1]
            out_key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
            check_output_dir(out_key, str(OmegaConf.select(cfg, out_key)))
            return jobs
    except PreflightError:
        raise
    except (HydraException, OmegaConfBaseException, ValueError) as err:
        raise PreflightError(hide_secrets(describe(err))) from None


def compose(overrides: Sequence[str] = (), config_name: str = "config") -> DictConfig:
    """The job config ``embodmem-run OVERRIDES`` would run, with the same checks, from Python
    (``embodmem.compose``): Hydra's composer on the shipped configs (version_base 1.3, no warning),
    then the group choices and every value checked, so a bad value fails here, not mid-run.

    >>> import embodmem
    >>> embodmem.compose(["agent=explorer", "env.max_steps=50"]).env.max_steps
    50
    >>> embodmem.compose(["env.max_steps=-5"])
    Traceback (most recent call last):
    ...
    embodmem.preflight.PreflightError: env.max_steps: -5 is not allowed; allowed: an integer >= 1

    Raises:
        PreflightError: one line naming the key, the value and what is allowed (as ``embodmem-run``).
    """
    import embodmem.configs

    register_configs()
    overrides = plugin_overrides(list(overrides), Path(embodmem.configs.__file__).resolve().parent)
    try:
        with _hydra(Path(embodmem.configs.__file__).resolve().parent, None) as hydra:
            parsed = OverridesParser.create().parse_overrides(overrides)
            sweeps = [o.input_line for o in parsed if o.is_sweep_override()]
            if sweeps:
                raise PreflightError(f"{sweeps[0]}: a sweep; compose() makes one job (run sweeps with embodmem-run -m)")
            check_group_choices(hydra, parsed)
            return _without_hydra(check_job(hydra, config_name, overrides, RunMode.RUN))
    except PreflightError:
        raise
    except (HydraException, OmegaConfBaseException, ValueError) as err:
        raise PreflightError(hide_secrets(describe(err))) from None
