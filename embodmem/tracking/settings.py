"""The tracker settings (the ``logger`` group's backend parts) and the start-up checks on them.

Kept free of the trackers' own packages: the config layer and the preflight check import this module
to refuse a bad ``logger.backends`` before any work starts, without importing TensorBoard, W&B or
MLflow (a missing one is found with :func:`importlib.util.find_spec`, which imports nothing).

Example:
    >>> check_backends(["jsonl"], {})
    >>> try:
    ...     check_backends(["jsonl", "neptune"], {})
    ... except TrackingConfigError as error:
    ...     print(str(error).split(";")[0])
    logger.backends='neptune' is unknown
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from embodmem.plugins import PluginError, load_object

JSONL = "jsonl"
"""The backend that is always written: metrics.jsonl and the episode logs (the source of truth)."""


@dataclass(frozen=True)
class StockBackend:
    """A tracker shipped with embodmem: the package it needs and the extra that installs it."""

    name: str
    module: str
    """The top-level module its package installs (looked up, not imported, at start-up)."""
    extra: str
    """``pip install -e '.[EXTRA]'``."""
    target: str
    """``module:Class`` of its tracker (imported only when a run uses it)."""


STOCK_BACKENDS: dict[str, StockBackend] = {
    "tensorboard": StockBackend(
        "tensorboard", "tensorboard", "tensorboard", "embodmem.tracking.tensorboard:TensorBoardTracker"
    ),
    "wandb": StockBackend("wandb", "wandb", "wandb", "embodmem.tracking.wandb:WandbTracker"),
    "mlflow": StockBackend("mlflow", "mlflow", "mlflow", "embodmem.tracking.mlflow:MLflowTracker"),
}
"""The shipped trackers besides ``jsonl``, by the name ``logger.backends`` lists them under."""

STOCK_NAMES: tuple[str, ...] = (JSONL, *STOCK_BACKENDS)
"""Every name ``logger.backends`` accepts without a plug-in."""


@dataclass
class TensorBoardSettings:
    """TensorBoard event files (``tensorboard --logdir <run or sweep dir>`` finds every job's)."""

    log_dir: Optional[str] = None
    """Where the event files go (default: ``<run dir>/tensorboard``)."""
    flush_secs: int = 30
    """Seconds between flushes of the event file to disk."""
    videos: bool = True
    """Episode videos as animated images (TensorBoard shows no mp4; a GIF of up to ``video_frames``)."""
    video_frames: int = 60
    """Most frames of an episode video's GIF (evenly picked)."""


@dataclass
class WandbSettings:
    """Weights & Biases: offline unless ``mode`` says otherwise (``wandb sync`` uploads later)."""

    project: str = "embodmem"
    entity: Optional[str] = None
    mode: str = "offline"
    """offline, online or disabled (W&B's own modes)."""
    dir: Optional[str] = None
    """Where ``wandb/`` goes (default: the run directory)."""
    tags: list[str] = field(default_factory=list)


@dataclass
class MLflowSettings:
    """MLflow: a local SQLite store next to the runs unless ``tracking_uri`` names another."""

    tracking_uri: Optional[str] = None
    """Default ``sqlite:///<sweep or run dir>/mlflow.db`` (the jobs of a multirun share one store)."""
    experiment: str = "embodmem"
    timeout_s: float = 10.0
    """Longest wait for a remote server per request; past it the backend is dropped with a warning."""


MODES = ("offline", "online", "disabled")


class TrackingConfigError(ValueError):
    """A ``logger`` value the run cannot use: one line naming the key, the value and what is allowed."""


def check_backends(
    backends: Iterable[str], options: Mapping[str, Mapping[str, Any]], wandb_mode: str = "offline"
) -> None:
    """Refuse, before any work, an unknown backend, a stock one whose package is missing (naming the
    extra), a plug-in that does not load and plug-in options its class does not take.

    ``options`` maps a plug-in's name to its constructor's keyword arguments (``logger.options``).
    """
    names = list(backends)
    if JSONL not in names:
        raise TrackingConfigError(
            f"logger.backends={names}: 'jsonl' is required (metrics.jsonl is the run's record); "
            f"allowed: [jsonl, ...] with any of {', '.join(STOCK_BACKENDS)} or plug-ins"
        )
    for name in names:
        if names.count(name) > 1:
            raise TrackingConfigError(f"logger.backends: {name!r} is listed twice; allowed: each backend once")
        if name == JSONL:
            continue
        stock = STOCK_BACKENDS.get(name)
        if stock is not None:
            if importlib.util.find_spec(stock.module) is None:
                raise TrackingConfigError(
                    f"logger.backends={name!r} needs the {stock.module!r} package; "
                    f"install it with: pip install 'embodmem[{stock.extra}]'"
                )
            continue
        try:
            plugin = load_object("logger", name, STOCK_NAMES)
        except PluginError as error:
            raise TrackingConfigError(str(error)) from None
        check_plugin_options(name, plugin, options.get(name, {}))
    for name in options:
        if name not in names:
            raise TrackingConfigError(
                f"logger.options.{name}: no such backend in logger.backends; allowed: {', '.join(names)}"
            )
    if wandb_mode not in MODES:
        raise TrackingConfigError(f"logger.wandb.mode: {wandb_mode!r} is not allowed; allowed: {', '.join(MODES)}")


def check_plugin_options(name: str, plugin: object, options: Mapping[str, Any]) -> None:
    """Every key of ``logger.options.<name>`` is a keyword the plug-in's constructor takes."""
    if not callable(plugin):
        raise TrackingConfigError(f"logger.backends={name!r}: not a class or factory")
    try:
        signature = inspect.signature(plugin)
    except (TypeError, ValueError):
        return
    parameters = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    accepted = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)][1:]  # not the run
    for key in options:
        if key not in accepted:
            raise TrackingConfigError(
                f"logger.options.{name}.{key}: no such option of {name}; allowed: {', '.join(accepted) or 'none'}"
            )
