"""What a tracker is handed and what it must do: the same values for TensorBoard, W&B, MLflow and a
lab's own plug-in, so every dashboard shows the same numbers under the same names.

A plug-in tracker is a class (``logger.backends=[jsonl,my_pkg.track:MyTracker]`` or an entry point in
the group ``embodmem.loggers``) built as ``MyTracker(run, **logger.options.<name>)`` that has the
methods of :class:`Tracker`.

Example:
    >>> tags = EpisodeTags(sequence="wreck_then_barrel", task_index=2, task="barrel", condition="warm", agent="memory")
    >>> EpisodeScalars(index=3, tags=tags, values={"spl": 0.5}).keyed()
    {'spl/memory/warm/wreck_then_barrel/2-barrel': 0.5}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

HParam = str | int | float | bool
"""A hyperparameter's value as every tracker stores it (lists and nulls become their YAML text)."""


def tracker_key(text: str) -> str:
    """``text`` in the characters every tracker accepts in a key (MLflow's are the fewest).

    >>> tracker_key("transfer/spl/memory/wreck+barrel/2-barrel/not seen")
    'transfer/spl/memory/wreck_barrel/2-barrel/not_seen'
    """
    return re.sub(r"[^A-Za-z0-9_.\-/]", "_", text)


@dataclass(frozen=True)
class TrackedRun:
    """Who this run is, for a tracker's dashboard (from the Hydra job: :func:`embodmem.tracking.run.tracked_run`)."""

    out_dir: Path
    """The job's output directory (metrics.jsonl, the episode logs)."""
    root_dir: Path
    """Where stores shared by the jobs of a multirun go (the sweep directory; ``out_dir`` for one run)."""
    name: str
    """The run's name in a dashboard: the sweep directory's leaf and the job number, or the run directory's name."""
    group: str | None
    """The jobs of one multirun share it (the sweep directory); None for a single run."""
    job_num: int | None
    overrides: str
    """Hydra's override string of the job (``memory.capacity=200,seed=1``), empty without overrides."""
    hparams: Mapping[str, HParam]
    """The resolved config, flattened to dotted keys, plus ``job.num`` and ``job.overrides``."""


@dataclass(frozen=True)
class EpisodeTags:
    """Where an episode sits in the run: what its scalars are keyed by in every tracker."""

    sequence: str
    task_index: int
    task: str
    condition: str
    agent: str
    """The agent or memory-agent variant."""

    def key(self, field: str) -> str:
        """``field/agent/condition/sequence/task_index-task``: TensorBoard groups the charts by field."""
        return tracker_key(f"{field}/{self.agent}/{self.condition}/{self.sequence}/{self.task_index}-{self.task}")


@dataclass(frozen=True)
class EpisodeScalars:
    """Every numeric field of one episode record, at the run's episode index."""

    index: int
    tags: EpisodeTags
    values: Mapping[str, float]

    def keyed(self) -> dict[str, float]:
        """The values under their tracker keys (:meth:`EpisodeTags.key`)."""
        return {self.tags.key(field): value for field, value in self.values.items()}


@dataclass(frozen=True)
class MediaFile:
    """A file a tracker shows or keeps: an episode's video or a report plot."""

    path: Path
    kind: Literal["video", "plot"]
    name: str
    """Its key in the tracker (``video/<episode name>``, ``plot/<file stem>``)."""
    step: int


class Tracker(Protocol):
    """One experiment tracker. Each method may raise: the fan-out (:class:`embodmem.tracking.fanout.Trackers`)
    reports the first failure as a warning naming the backend and stops calling it."""

    def log_episode(self, episode: EpisodeScalars) -> None:
        """Log one episode's scalars at ``episode.index``."""

    def log_summary(self, scalars: Mapping[str, float], step: int) -> None:
        """Log the end-of-run values (the transfer table, the run means) at ``step``."""

    def log_media(self, media: MediaFile) -> None:
        """Show or keep an episode video or a report plot."""

    def close(self, failed: bool) -> None:
        """Flush and finish the run (``failed``: the experiment stopped on an error)."""
