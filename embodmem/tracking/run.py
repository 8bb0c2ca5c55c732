"""A job's trackers from its config, and who the run is for them: name, group, job number and
overrides from the Hydra job."""

from __future__ import annotations

import atexit
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from embodmem.tracking.fanout import Trackers, open_trackers
from embodmem.tracking.protocol import TrackedRun
from embodmem.tracking.scalars import flat_hparams
from embodmem.tracking.settings import JSONL, MLflowSettings, TensorBoardSettings, WandbSettings


def tracked_run(cfg: DictConfig, out_dir: Path) -> TrackedRun:
    """The run as a dashboard names it. Inside a Hydra multirun: group = the sweep directory, name =
    its leaf and the job number; a single run (or a call without Hydra) is named by its directory."""
    from hydra.core.hydra_config import HydraConfig

    group: str | None = None
    job_num: int | None = None
    overrides = ""
    root = out_dir
    name = out_dir.name
    if HydraConfig.initialized():
        hydra = HydraConfig.get()
        overrides = str(hydra.job.override_dirname or "")
        if str(hydra.mode) == "RunMode.MULTIRUN":
            sweep = Path(hydra.sweep.dir)
            group, job_num, root = str(sweep), int(hydra.job.num), sweep
            name = f"{sweep.name}-{job_num}"
    config = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(config, dict)
    hparams = flat_hparams({str(k): v for k, v in config.items()})
    hparams["job.num"] = -1 if job_num is None else job_num
    hparams["job.overrides"] = overrides
    return TrackedRun(
        out_dir=out_dir, root_dir=root, name=name, group=group, job_num=job_num, overrides=overrides, hparams=hparams
    )


def open_run_trackers(cfg: DictConfig, out_dir: Path) -> Trackers:
    """The trackers ``cfg.logger.backends`` asks for, started for this job (checked at start-up by
    :func:`embodmem.tracking.settings.check_backends`). Closed by :meth:`Trackers.finish`; if the
    run stops on an error first, at exit, marked failed."""
    logger = cfg.logger
    settings = (
        TensorBoardSettings(**OmegaConf.to_container(logger.tensorboard, resolve=True)),  # type: ignore[arg-type]
        WandbSettings(**OmegaConf.to_container(logger.wandb, resolve=True)),  # type: ignore[arg-type]
        MLflowSettings(**OmegaConf.to_container(logger.mlflow, resolve=True)),  # type: ignore[arg-type]
    )
    options = OmegaConf.to_container(logger.options, resolve=True)
    assert isinstance(options, dict)
    names = [str(name) for name in logger.backends]
    run = tracked_run(cfg, out_dir) if names != [JSONL] else None
    if run is None:
        return Trackers(out_dir)
    trackers = open_trackers(names, {str(k): v for k, v in options.items()}, settings, run)
    atexit.register(trackers.close, True)
    return trackers
