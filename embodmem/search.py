"""What a searching sweeper maximises, and the rule it must keep: tune on dev worlds, never on test.

``embodmem-run -m hydra/sweeper=memory_search`` (Hydra's Optuna sweeper; docs/sweeps.md) runs trials of
memory settings; each job returns :func:`objective` of its records, the mean SPL of its warm episodes
(memory carried over from earlier tasks: what the memory settings change). The test split is for
reporting (:mod:`embodmem.splits`), so a searching sweeper on it is refused before the job runs.

Example:
    >>> from embodmem.metrics_record import EpisodeRecord
    >>> records = [EpisodeRecord.model_validate({"condition": c, "spl": s, "task_index": 1})
    ...            for c, s in (("warm", 0.5), ("warm", 0.25), ("cold", 1.0))]
    >>> objective(records)
    0.375
"""

from __future__ import annotations

from collections.abc import Sequence

from omegaconf import DictConfig

from embodmem.condition import Condition
from embodmem.config import ConfigError
from embodmem.metrics_record import EpisodeRecord

SEARCHING_SWEEPERS = ("optuna", "nevergrad", "ax")
"""Hydra sweepers that choose the next trial from earlier results (a grid does not)."""

SEARCH_SPLITS = ("dev", "calibration")
"""The splits a search may tune on."""


def objective(records: Sequence[EpisodeRecord]) -> float:
    """Mean SPL of the warm episodes (0.0 when there is none: a trial that ran nothing scores lowest)."""
    spl = [r.spl for r in records if r.condition is Condition.warm and r.spl is not None and not r.aborted]
    return sum(spl) / len(spl) if spl else 0.0


def is_searching(sweeper_target: str) -> bool:
    """Whether a sweeper's ``_target_`` is one that searches (rather than enumerates a grid)."""
    return any(name in sweeper_target.lower() for name in SEARCHING_SWEEPERS)


def check_search(cfg: DictConfig, sweeper_target: str) -> None:
    """Refuse a searching sweeper on worlds outside :data:`SEARCH_SPLITS` (one line, before any episode)."""
    if not is_searching(sweeper_target):
        return
    split = str(cfg.experiment.split)
    if split not in SEARCH_SPLITS:
        raise ConfigError(
            f"experiment.split: {split!r} is not allowed with a searching sweeper ({sweeper_target.rsplit('.', 1)[-1]}); "
            f"allowed: {', '.join(SEARCH_SPLITS)} (the test split reports the chosen settings, it never chooses them)"
        )
    if not cfg.experiment.conditions or "warm" not in list(cfg.experiment.conditions):
        raise ConfigError(
            f"experiment.conditions: {list(cfg.experiment.conditions)} is not allowed with a searching sweeper; "
            "allowed: a list with warm (the objective is the mean warm SPL)"
        )
