"""Weights & Biases: offline by default (``wandb sync <run dir>/wandb/offline-run-*`` uploads later).

The jobs of a multirun share a group (the sweep directory), so W&B's run table groups them.
"""

from __future__ import annotations

from collections.abc import Mapping

from embodmem.tracking.protocol import EpisodeScalars, MediaFile, TrackedRun
from embodmem.tracking.settings import WandbSettings


class WandbTracker:
    """One W&B run per job, its files in ``<run dir>/wandb`` (or ``logger.wandb.dir``)."""

    def __init__(self, run: TrackedRun, settings: WandbSettings) -> None:
        import wandb

        directory = settings.dir or str(run.out_dir)
        self.run = wandb.init(
            project=settings.project,
            entity=settings.entity,
            mode=settings.mode,  # type: ignore[arg-type]  # one of MODES: checked at start-up
            dir=directory,
            name=run.name,
            group=run.group,
            job_type="embodmem-run",
            tags=list(settings.tags),
            notes=run.overrides or None,
            config=dict(run.hparams),
            reinit="create_new",
            settings=wandb.Settings(silent=True, console="off", x_disable_stats=True),
        )

    def log_episode(self, episode: EpisodeScalars) -> None:
        self.run.log(episode.keyed(), step=episode.index)

    def log_summary(self, scalars: Mapping[str, float], step: int) -> None:
        self.run.log(dict(scalars), step=step)

    def log_media(self, media: MediaFile) -> None:
        import wandb

        item = wandb.Image(str(media.path)) if media.kind == "plot" else wandb.Video(str(media.path))
        self.run.log({media.name: item}, step=media.step)

    def close(self, failed: bool) -> None:
        self.run.finish(exit_code=1 if failed else 0)
