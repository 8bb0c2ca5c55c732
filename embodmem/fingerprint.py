"""The run directory's config fingerprint: a resume must run the very experiment that was started.

Why: resuming with another ``env.max_steps`` (or any setting that changes results) used to append
records of a different experiment to the old ones, silently. The composed config, less the keys that
may change between a run and its resume (:data:`RESUME_MAY_CHANGE`: progress bars, plots, how the VLM
server is reached and how long to wait for it), is flattened to dotted keys and stored with its
sha256 in ``fingerprint.json`` before any work. A resume compares and refuses, in one line naming the
keys that differ, when they do not match.

Example:
    >>> from omegaconf import OmegaConf
    >>> a = fingerprint(OmegaConf.create({"env": {"max_steps": 60}, "logger": {"progress": True}}))
    >>> b = fingerprint(OmegaConf.create({"env": {"max_steps": 30}, "logger": {"progress": False}}))
    >>> differing_keys(a, b)
    ['env.max_steps']
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from embodmem.atomic import atomic_write_text
from embodmem.config import ConfigError
from embodmem.metrics_record import METRICS_FILE

FINGERPRINT_FILE = "fingerprint.json"

RESUME_MAY_CHANGE: tuple[str, ...] = (
    "experiment.resume",
    "logger.progress",
    "logger.plots",
    "agent.vlm.base_url",
    "agent.vlm.api_key_env",
    "agent.vlm.timeout_s",
    "agent.vlm.max_retries",
    "agent.vlm.call_deadline_s",
    "agent.vlm.max_silent_s",
    "agent.vlm.max_total_s",
    "agent.vlm.check_endpoint",
    "agent.vlm.backoff_base_s",
    "agent.vlm.backoff_max_s",
    "agent.vlm.jitter",
    "agent.vlm.max_consecutive_failures",
    "agent.vlm.max_reply_bytes",
    "agent.vlm.cache_dir",
    "agent.vlm.cache_max_bytes",
)
"""Config keys (or key prefixes) a resume may change: none of them changes what an episode records
(they say how progress is shown, and where and how patiently the VLM server is asked). Every other key
must be equal (docs/runs.md, "Resume")."""


class Fingerprint(BaseModel):
    """``fingerprint.json``: the composed config less :data:`RESUME_MAY_CHANGE`, flat, and its sha256."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    values: dict[str, str]
    """Dotted key -> the value as canonical JSON."""


def _flatten(node: Any, prefix: str, out: dict[str, str]) -> None:
    if isinstance(node, dict) and node:
        for key, value in node.items():
            _flatten(value, f"{prefix}.{key}" if prefix else str(key), out)
    elif not any(prefix == k or prefix.startswith(k + ".") for k in RESUME_MAY_CHANGE):
        out[prefix] = json.dumps(node, sort_keys=True, separators=(",", ":"), default=str)


def fingerprint(cfg: DictConfig) -> Fingerprint:
    """The fingerprint of a composed config (interpolations resolved)."""
    values: dict[str, str] = {}
    _flatten(OmegaConf.to_container(cfg, resolve=True), "", values)
    digest = hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()
    return Fingerprint(sha256=digest, values=values)


def differing_keys(saved: Fingerprint, now: Fingerprint) -> list[str]:
    """Keys whose values differ (or that only one side has), sorted."""
    keys = set(saved.values) | set(now.values)
    return sorted(k for k in keys if saved.values.get(k) != now.values.get(k))


def check_resume(out_dir: Path, cfg: DictConfig) -> None:
    """Refuse to resume ``out_dir`` with a config other than the one it was started with.

    Raises:
        ConfigError: one line naming the keys that differ (with both values for the first few), or
            saying the directory holds records but no fingerprint.
    """
    path = out_dir / FINGERPRINT_FILE
    if not path.exists():
        if (out_dir / METRICS_FILE).exists():
            raise ConfigError(
                f"experiment.resume=true: {out_dir} holds {METRICS_FILE} but no {FINGERPRINT_FILE}, so it cannot be "
                "checked that it was made with this config; resume only a run directory this version started"
            )
        return
    try:
        saved = Fingerprint.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as err:
        first = err.errors(include_url=False)[0]["msg"] if isinstance(err, ValidationError) else str(err)
        raise ConfigError(f"experiment.resume=true: {path} is unreadable ({first}); it cannot be resumed") from None
    now = fingerprint(cfg)
    if saved.sha256 == now.sha256:
        return
    keys = differing_keys(saved, now)
    shown = "; ".join(
        f"{k} was {saved.values.get(k, '(absent)')}, now {now.values.get(k, '(absent)')}" for k in keys[:4]
    )
    more = f" (and {len(keys) - 4} more)" if len(keys) > 4 else ""
    raise ConfigError(
        f"experiment.resume=true: {out_dir} was started with another config: {shown}{more}; resume with the same "
        "settings or start a new run directory (only logger.progress, logger.plots and how the VLM server is "
        "reached may change: docs/runs.md, Resume)"
    )


def check_new_run(out_dir: Path) -> None:
    """Refuse to start a new run (``experiment.resume=false``) in a directory that holds records of an
    earlier one: its records would be appended to those, and tables read from the directory would
    mix the two runs (an ablation run written where the core run was doubled its memory records).

    Raises:
        ConfigError: one line naming the directory and the two ways on.
    """
    metrics = out_dir / METRICS_FILE
    if metrics.exists() and metrics.stat().st_size > 0:
        raise ConfigError(
            f"experiment.resume=false: {metrics} already holds records of an earlier run, which a new run would mix "
            "with its own; continue that run with experiment.resume=true (same settings), or write to another "
            "directory (hydra.run.dir, hydra.sweep.dir, or a benchmark script's --out)"
        )


def write_fingerprint(out_dir: Path, cfg: DictConfig) -> Path:
    """Store the fingerprint of ``cfg`` in ``out_dir`` (atomically)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(out_dir / FINGERPRINT_FILE, fingerprint(cfg).model_dump_json(indent=1) + "\n")
