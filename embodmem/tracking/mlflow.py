"""MLflow: params, metric histories and artifacts through ``MlflowClient``.

Without ``logger.mlflow.tracking_uri`` the store is SQLite next to the runs
(``<sweep or run dir>/mlflow.db``, artifacts in ``mlartifacts/``): ``mlflow ui --backend-store-uri
sqlite:///<that file>`` shows every job of a multirun. A remote server gets at most
``logger.mlflow.timeout_s`` a request and no retries, so a dead server costs seconds, not minutes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from embodmem.tracking.protocol import EpisodeScalars, MediaFile, TrackedRun
from embodmem.tracking.settings import MLflowSettings

BATCH = 100
"""MLflow's largest batch of params in one request."""


class MLflowTracker:
    """One MLflow run per job in the experiment ``logger.mlflow.experiment``."""

    def __init__(self, run: TrackedRun, settings: MLflowSettings) -> None:
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(max(1, round(settings.timeout_s))))
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
        from mlflow import MlflowClient
        from mlflow.entities import Param

        local = settings.tracking_uri is None
        self.tracking_uri = settings.tracking_uri or f"sqlite:///{run.root_dir.resolve() / 'mlflow.db'}"
        self.client = MlflowClient(tracking_uri=self.tracking_uri)
        artifacts = (run.root_dir.resolve() / "mlartifacts").as_uri() if local else None
        experiment_id = self._experiment(settings.experiment, artifacts)
        tags = {"group": run.group or "", "job_num": str(run.job_num), "overrides": run.overrides}
        self.run_id = self.client.create_run(experiment_id, run_name=run.name, tags=tags).info.run_id
        params = [Param(key, str(value)[:6000]) for key, value in run.hparams.items()]
        for start in range(0, len(params), BATCH):
            self.client.log_batch(self.run_id, params=params[start : start + BATCH])

    def _experiment(self, name: str, artifacts: str | None) -> str:
        """The experiment's id, created if missing (a parallel job may create it first)."""
        for _ in range(3):
            found = self.client.get_experiment_by_name(name)
            if found is not None:
                return str(found.experiment_id)
            try:
                return str(self.client.create_experiment(name, artifact_location=artifacts))
            except Exception:
                time.sleep(0.2)
        raise RuntimeError(f"MLflow experiment {name!r} could not be found or created at {self.tracking_uri}")

    def _log(self, scalars: Mapping[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(key, value, now, step) for key, value in scalars.items()]
        for start in range(0, len(metrics), 1000):
            self.client.log_batch(self.run_id, metrics=metrics[start : start + 1000])

    def log_episode(self, episode: EpisodeScalars) -> None:
        self._log(episode.keyed(), episode.index)

    def log_summary(self, scalars: Mapping[str, float], step: int) -> None:
        self._log(scalars, step)

    def log_media(self, media: MediaFile) -> None:
        self.client.log_artifact(self.run_id, str(media.path), artifact_path=f"{media.kind}s")

    def close(self, failed: bool) -> None:
        self.client.set_terminated(self.run_id, "FAILED" if failed else "FINISHED")
