"""Check a command line before Hydra creates anything: one line per error, exit code 2.

``hydra.main`` creates the run (or sweep) directory and writes ``.hydra/`` before it calls the task
function, and it prints tracebacks for errors raised while composing. So ``embodmem-run`` first
composes the config from ``argv`` itself, exactly as Hydra will (same search path, same overrides,
every job of a ``-m`` sweep), validates each job and the output directory, and only then hands over.
Nothing here imports torch, open_clip or faiss's models; the error path stays fast.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra._internal.hydra import Hydra
from hydra._internal.utils import create_config_search_path, get_args_parser
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

from embodmem.config import Config, ConfigError, hide_secrets, validate

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
        return f"{group}: {option!r} is not allowed; allowed: {', '.join(err.options)}"
    cause = err.__cause__ if isinstance(err.__cause__, OmegaConfBaseException) else err
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


class PreflightError(Exception):
    """The command line cannot run; ``str()`` is the one line to print."""


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
    job = cfg.copy()
    with open_dict(job):
        del job["hydra"]
    validate(job)
    check_feasible(job)
    return cfg


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
        check_load_path(Path(exp.load_memory))


def check_load_path(path: Path) -> None:
    """``experiment.load_memory`` must hold a snapshot that ``experiment.save_memory`` wrote (its map
    manifest, and a memory manifest or a text log beside it), checked before the model loads.

    Raises:
        ConfigError: one line naming the key, the path and what is missing or broken.
    """
    from embodmem.memory.persistence import MAP_FORMAT, MemoryLoadError, read_manifest

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
        if (path / "memory").exists() or not (path / "textlog.json").is_file():
            read_manifest(path / "memory")
    except MemoryLoadError as err:
        raise ConfigError(f"{key}: {err}") from None


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


def check_command_line(argv: list[str], config_dir: Path, config_name: str = "config") -> None:
    """Compose and validate every job ``argv`` describes; raise :class:`PreflightError` with one line.

    Commands that write nothing (``--help``, ``--cfg``, ``--info``, shell completion) pass through.
    """
    args: argparse.Namespace = get_args_parser().parse_args(argv)
    if args.help or args.hydra_help or args.cfg or args.info or args.shell_completion:
        return
    if args.config_path is not None:
        config_dir = Path(__file__).parent / args.config_path  # as Hydra: relative to the app module

    config_name = args.config_name or config_name
    try:
        with _hydra(config_dir, args.config_dir) as hydra:
            parsed = OverridesParser.create().parse_overrides(list(args.overrides))  # syntax first, cheapest
            multirun = bool(args.multirun)
            if not multirun and any(o.is_sweep_override() for o in parsed):  # as Hydra decides
                multirun = hydra.get_mode(config_name, list(args.overrides)) == RunMode.MULTIRUN
            if not multirun:  # one job (unless the config itself sets hydra.mode=MULTIRUN)
                cfg = check_job(hydra, config_name, list(args.overrides), RunMode.RUN)
                multirun = cfg.hydra.mode == RunMode.MULTIRUN
            if multirun:
                for overrides in sweep_jobs(hydra, config_name, list(args.overrides)):
                    cfg = check_job(hydra, config_name, overrides, RunMode.MULTIRUN)
            out_key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
            check_output_dir(out_key, str(OmegaConf.select(cfg, out_key)))
    except PreflightError:
        raise
    except (HydraException, OmegaConfBaseException, ValueError) as err:
        raise PreflightError(hide_secrets(describe(err))) from None
