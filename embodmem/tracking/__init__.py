"""Experiment trackers: the run's episodes, transfer table, config, videos and plots in TensorBoard,
Weights & Biases, MLflow or a lab's own tracker, next to metrics.jsonl (always written, the record).

``logger.backends=[jsonl,tensorboard,wandb,mlflow]`` picks them (any combination; docs/tracking.md).
Each stock tracker's package is an optional extra, checked at start-up (:mod:`.settings`); the
modules that import them load only when a run uses them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from embodmem.lazy import lazy_attributes

if TYPE_CHECKING:
    from embodmem.tracking.fanout import Trackers, TrackerWarning, open_trackers
    from embodmem.tracking.protocol import EpisodeScalars, EpisodeTags, MediaFile, TrackedRun, Tracker
    from embodmem.tracking.settings import (
        STOCK_NAMES,
        MLflowSettings,
        TensorBoardSettings,
        TrackingConfigError,
        WandbSettings,
        check_backends,
    )

_HOMES = {
    **dict.fromkeys(("Trackers", "TrackerWarning", "open_trackers"), "embodmem.tracking.fanout"),
    **dict.fromkeys(
        ("EpisodeScalars", "EpisodeTags", "MediaFile", "TrackedRun", "Tracker"), "embodmem.tracking.protocol"
    ),
    **dict.fromkeys(
        (
            "STOCK_NAMES",
            "MLflowSettings",
            "TensorBoardSettings",
            "TrackingConfigError",
            "WandbSettings",
            "check_backends",
        ),
        "embodmem.tracking.settings",
    ),
}
"""Where each name lives: the config checks read ``settings`` alone, without the fan-out's records
(pydantic)."""
__getattr__ = lazy_attributes(__name__, _HOMES)

__all__ = [
    "STOCK_NAMES",
    "EpisodeScalars",
    "EpisodeTags",
    "MLflowSettings",
    "MediaFile",
    "TensorBoardSettings",
    "TrackedRun",
    "Tracker",
    "TrackerWarning",
    "Trackers",
    "TrackingConfigError",
    "WandbSettings",
    "check_backends",
    "open_trackers",
]
