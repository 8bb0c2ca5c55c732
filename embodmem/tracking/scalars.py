"""The values every tracker logs, computed once from the run's own records and report.

Example:
    >>> from embodmem.metrics_record import EpisodeRecord
    >>> record = EpisodeRecord.model_validate({"agent": "memory", "condition": "warm", "sequence": "s",
    ...     "task_index": 1, "task": "wreck", "spl": 0.5, "steps": 12, "target_seen": True, "start_pose": [1, 2, 0]})
    >>> episode_scalars(0, record).keyed()
    {'spl/memory/warm/s/1-wreck': 0.5, 'steps/memory/warm/s/1-wreck': 12.0, 'target_seen/memory/warm/s/1-wreck': 1.0}
    >>> flat_hparams({"memory": {"capacity": 200, "tiers": [1, 2]}, "run_id": None})
    {'memory.capacity': 200, 'memory.tiers': '[1, 2]', 'run_id': 'null'}
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence

from embodmem.condition import Condition
from embodmem.metrics_record import EpisodeRecord
from embodmem.tracking.protocol import EpisodeScalars, EpisodeTags, HParam, tracker_key
from embodmem.transfer import TableRow

TAG_FIELDS = ("sequence", "task_index", "task", "condition", "agent")
"""Record fields that tag an episode rather than measure it."""

SUMMARY_MEANS = ("success", "spl", "soft_spl", "steps")
"""Fields averaged per agent and condition at the end of the run (the HParams table's metrics)."""


def episode_scalars(index: int, record: EpisodeRecord) -> EpisodeScalars:
    """Every numeric field of ``record`` (agent statistics included; booleans as 0/1), tagged."""
    plain = record.plain()
    condition = record.condition.value if record.condition is not None else "none"
    tags = EpisodeTags(
        sequence=str(record.sequence),
        task_index=int(record.task_index or 0),
        task=str(record.task),
        condition=condition,
        agent=str(record.agent),
    )
    values = {
        field: float(value)
        for field, value in plain.items()
        if field not in TAG_FIELDS and isinstance(value, int | float) and not _is_nan(value)
    }
    return EpisodeScalars(index=index, tags=tags, values=values)


def _is_nan(value: float) -> bool:
    return isinstance(value, float) and math.isnan(value)


def transfer_scalars(rows: Iterable[TableRow], metrics: Sequence[str]) -> dict[str, float]:
    """The printed transfer table's numbers: ``transfer/<column>/<agent>/<sequence>/<task>/<seen>``.

    ``metrics`` are the table's metrics (success, spl); each gives its warm and cold means, forward
    transfer (warm - cold) and its normalised form, and the steps ratio comes along.
    """
    columns = [f"{m}_{part}" for m in metrics for part in ("warm", "cold")]
    columns += [f"ft_{m}" for m in metrics] + [f"ft_norm_{m}" for m in metrics] + ["steps_ratio", "n_seeds"]
    out: dict[str, float] = {}
    for row in rows:
        where = f"{row.get('agent')}/{row.get('sequence')}/{row.get('task_index')}-{row.get('task')}/{row.get('seen')}"
        for column in columns:
            value = row.get(column)
            if isinstance(value, int | float) and not _is_nan(value):
                out[tracker_key(f"transfer/{column}/{where}")] = float(value)
    return out


def run_means(records: Iterable[EpisodeRecord]) -> dict[str, float]:
    """Means of :data:`SUMMARY_MEANS` per agent and condition: ``run/<field>/<agent>/<condition>``
    (the metrics a multirun's jobs are compared by in TensorBoard's HParams table)."""
    sums: dict[str, list[float]] = {}
    for record in records:
        if record.aborted or record.condition is Condition.eval:
            continue
        condition = record.condition.value if record.condition is not None else "none"
        for field in SUMMARY_MEANS:
            value = getattr(record, field)
            if isinstance(value, int | float):
                sums.setdefault(tracker_key(f"run/{field}/{record.agent}/{condition}"), []).append(float(value))
    return {key: sum(values) / len(values) for key, values in sorted(sums.items())}


def flat_hparams(config: Mapping[str, object], prefix: str = "") -> dict[str, HParam]:
    """A resolved config as dotted keys; lists, dicts inside lists and nulls as JSON text."""
    out: dict[str, HParam] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flat_hparams(value, f"{name}."))
        elif isinstance(value, bool | int | float | str):
            out[name] = value
        else:
            out[name] = json.dumps(value, default=str)
    return out
