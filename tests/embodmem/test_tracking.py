"""Experiment trackers read back with their own readers: every scalar equals metrics.jsonl.

One tiny run (one world, 25-step episodes, plots on, the first episode's video) logs to every
tracker installed here; each test reads one tracker's files back. A tracker whose package is missing
is left out of the run and its test skips, naming the extra.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from embodmem.app import CONFIG_DIR, run
from embodmem.config import ConfigError, validate
from embodmem.metrics_record import EpisodeRecord
from embodmem.preflight import PreflightError
from embodmem.preflight import compose as checked_compose
from embodmem.tracking import MediaFile, TrackedRun, TrackerWarning
from embodmem.tracking.protocol import EpisodeScalars
from embodmem.tracking.scalars import episode_scalars, run_means, transfer_scalars

INSTALLED = [name for name in ("tensorboard", "wandb", "mlflow") if importlib.util.find_spec(name) is not None]
TINY = [
    "env.max_steps=25",
    "logger.progress=false",
    "logger.plots=true",
    "video.enabled=true",
    "video.episodes=first",
    "video.size=64",
]


def needs(extra: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        importlib.util.find_spec(extra) is None, reason=f"needs the {extra!r} package: pip install -e '.[{extra}]'"
    )


def _compose(overrides: list[str]):
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        return compose("config", overrides=overrides)


@dataclass
class TrackedRunDir:
    out: Path
    records: list[EpisodeRecord]
    lines: list[dict]

    def expected_episodes(self) -> dict[tuple[str, int], float]:
        """(tracker key, step) -> value for every numeric field of every metrics.jsonl line."""
        expected = {}
        for index, line in enumerate(self.lines):
            scalars = episode_scalars(index, EpisodeRecord.model_validate(line))
            for key, value in scalars.keyed().items():
                expected[(key, index)] = value
        return expected

    def expected_summary(self) -> dict[str, float]:
        import csv

        with open(self.out / "transfer.csv") as fh:
            rows = [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(fh)]
        return {**transfer_scalars(rows, ("success", "spl")), **run_means(self.records)}


def _number(text: str) -> object:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text or None


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> TrackedRunDir:
    if not INSTALLED:
        pytest.skip("no tracker installed: pip install -e '.[tensorboard]' (or [wandb], [mlflow])")
    out = tmp_path_factory.mktemp("tracked")
    backends = ",".join(["jsonl", *INSTALLED])
    records = run(_compose([*TINY, f"logger.backends=[{backends}]"]), out)
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(lines) == len(records) == 6
    return TrackedRunDir(out, list(records), lines)


@needs("tensorboard")
def test_tensorboard_event_files_hold_every_scalar_of_metrics_jsonl(tracked: TrackedRunDir) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tracked.out / "tensorboard"), size_guidance={"scalars": 0, "images": 0, "tensors": 0})
    events.Reload()
    logged = {(tag, e.step): e.value for tag in events.Tags()["scalars"] for e in events.Scalars(tag)}
    expected = tracked.expected_episodes()
    summary = tracked.expected_summary()
    expected.update({(key, len(tracked.lines)): value for key, value in summary.items()})
    assert set(logged) == set(expected)
    for key, value in expected.items():  # event files keep float32
        assert logged[key] == pytest.approx(np.float32(value), rel=1e-6, abs=1e-6), key
    assert any(k.startswith("transfer/ft_spl/memory/") for k in summary)
    # The resolved config in the HParams dashboard, in the run's own event file.
    hparams = events.PluginTagToContent("hparams")
    assert set(hparams) == {"_hparams_/experiment", "_hparams_/session_start_info", "_hparams_/session_end_info"}
    assert b"memory.short_term_capacity" in hparams["_hparams_/session_start_info"]
    images = events.Tags()["images"]
    assert "plot/transfer_wreck_then_barrel" in images
    video = next(tag for tag in images if tag.startswith("video/"))
    assert events.Images(video)[0].encoded_image_string[:6] == b"GIF89a"


@needs("wandb")
def test_wandb_offline_run_read_back_with_wandbs_reader(tracked: TrackedRunDir) -> None:
    from wandb.proto import wandb_internal_pb2
    from wandb.sdk.internal.datastore import DataStore

    (path,) = (tracked.out / "wandb").glob("offline-run-*/run-*.wandb")
    store = DataStore()
    store.open_for_scan(str(path))
    history: dict[tuple[str, int], float] = {}
    config: dict[str, object] = {}
    media: set[str] = set()
    while (data := store.scan_data()) is not None:
        record = wandb_internal_pb2.Record()
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        if kind == "history":
            items = {i.key or ".".join(i.nested_key): json.loads(i.value_json) for i in record.history.item}
            step = int(items.pop("_step"))
            for key, value in items.items():
                if key.startswith(("plot/", "video/")):
                    media.add(key.split(".")[0].split("/")[0])
                elif not key.startswith("_") and isinstance(value, int | float):
                    history[(key, step)] = value
        elif kind == "run":
            config.update({i.key: json.loads(i.value_json) for i in record.run.config.update})
    expected = tracked.expected_episodes()
    expected.update({(k, len(tracked.lines)): v for k, v in tracked.expected_summary().items()})
    assert set(history) == set(expected)
    for key, value in expected.items():
        assert history[key] == pytest.approx(value), key
    assert media == {"plot", "video"}
    assert config["memory.short_term_capacity"] == tracked_config(tracked)["memory"]["short_term_capacity"]


def tracked_config(tracked: TrackedRunDir) -> Mapping[str, Mapping[str, object]]:
    import yaml

    return yaml.safe_load((tracked.out / "config.yaml").read_text())


@needs("mlflow")
def test_mlflow_metric_histories_params_and_artifacts(tracked: TrackedRunDir) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tracked.out / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("embodmem")
    (mlrun,) = client.search_runs([experiment.experiment_id])
    assert mlrun.info.status == "FINISHED"
    expected = tracked.expected_episodes()
    expected.update({(k, len(tracked.lines)): v for k, v in tracked.expected_summary().items()})
    assert set(mlrun.data.metrics) == {key for key, _ in expected}
    for key in {key for key, _ in expected}:
        history = {(key, m.step): m.value for m in client.get_metric_history(mlrun.info.run_id, key)}
        assert history == pytest.approx({k: v for k, v in expected.items() if k[0] == key}), key
    assert mlrun.data.params["memory.short_term_capacity"] == str(
        tracked_config(tracked)["memory"]["short_term_capacity"]
    )
    artifacts = {a.path for folder in ("plots", "videos") for a in client.list_artifacts(mlrun.info.run_id, folder)}
    assert "plots/transfer_wreck_then_barrel.png" in artifacts
    assert any(a.startswith("videos/") for a in artifacts)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get_json(url: str) -> object:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


@needs("tensorboard")
def test_a_tensorboard_server_on_loopback_serves_the_scalars(tracked: TrackedRunDir) -> None:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(tracked.out), "--host", "127.0.0.1"]
        + ["--port", str(port), "--load_fast=false"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}/data/plugin/scalars"
        deadline = time.monotonic() + 60
        tags: dict = {}
        while time.monotonic() < deadline and not tags:
            try:
                tags = _get_json(f"{base}/tags")  # type: ignore[assignment]
            except OSError:
                time.sleep(0.5)
        assert "tensorboard" in tags, tags
        key = "spl/memory/warm/wreck_then_barrel/2-barrel"
        assert key in tags["tensorboard"]
        served = _get_json(f"{base}/scalars?run=tensorboard&tag={urllib.request.quote(key, safe='')}")
        expected = {step: v for (k, step), v in tracked.expected_episodes().items() if k == key}
        assert {step: value for _, step, value in served} == pytest.approx(expected)  # type: ignore[misc]
    finally:
        server.terminate()
        server.wait(timeout=30)


# --- bad input and failures ---------------------------------------------------------------------


def test_an_unknown_backend_lists_the_valid_ones() -> None:
    with pytest.raises(
        PreflightError, match=r"logger.backends='neptune' is unknown; allowed: jsonl, tensorboard, wandb"
    ):
        checked_compose(["logger.backends=[jsonl,neptune]"])


def test_a_backend_option_that_does_not_exist_names_the_key() -> None:
    with pytest.raises(PreflightError, match=r"logger.tensorboard.flush_sec: no such key; keys of logger.tensorboard"):
        checked_compose(["logger.tensorboard.flush_sec=5"])
    plugin = f"{__name__}:FailingTracker"
    cfg = _compose([])
    cfg.logger.backends = ["jsonl", plugin]
    cfg.logger.options = {plugin: {"colour": "red"}}
    with pytest.raises(ConfigError, match=rf"logger.options.{plugin}.colour: no such option of .*; allowed: limit"):
        validate(cfg)


def test_jsonl_cannot_be_left_out() -> None:
    with pytest.raises(PreflightError, match=r"'jsonl' is required"):
        checked_compose(["logger.backends=[tensorboard]"])


@pytest.mark.parametrize("extra", ["tensorboard", "wandb", "mlflow"])
def test_a_missing_package_is_refused_naming_the_extra(monkeypatch: pytest.MonkeyPatch, extra: str) -> None:
    monkeypatch.setitem(sys.modules, extra, None)  # what find_spec reports for a package not installed
    with pytest.raises(
        PreflightError, match=rf"needs the '{extra}' package; install it with: pip install 'embodmem\[{extra}\]'"
    ):
        checked_compose([f"logger.backends=[jsonl,{extra}]"])


def test_a_missing_package_stops_embodmem_run_before_any_output(tmp_path: Path) -> None:
    out = tmp_path / "never"
    code = (
        "import sys; sys.modules['mlflow'] = None; sys.argv = ['embodmem-run', 'logger.backends=[jsonl,mlflow]', "
        f"'hydra.run.dir={out}']; from embodmem.app import main; main()"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "embodmem-run: error: logger.backends='mlflow' needs the 'mlflow' package; install it with: "
        "pip install 'embodmem[mlflow]'"
    ]
    assert not out.exists()


class FailingTracker:
    """A plug-in tracker whose disk fills up at the second episode."""

    episodes: list[int] = []

    def __init__(self, run: TrackedRun, limit: int = 1) -> None:
        self.limit = limit

    def log_episode(self, episode: EpisodeScalars) -> None:
        if len(FailingTracker.episodes) >= self.limit:
            raise OSError(28, "No space left on device")
        FailingTracker.episodes.append(episode.index)

    def log_summary(self, scalars: Mapping[str, float], step: int) -> None:
        raise AssertionError("never called after a failure")

    def log_media(self, media: MediaFile) -> None:
        pass

    def close(self, failed: bool) -> None:
        raise AssertionError("never called after a failure")


def test_a_failing_tracker_is_reported_once_and_the_run_goes_on(tmp_path: Path) -> None:
    plugin = f"{__name__}:FailingTracker"
    FailingTracker.episodes.clear()
    cfg = _compose(["env.max_steps=25", "logger.progress=false", "logger.plots=false"])
    cfg.logger.backends = ["jsonl", plugin]
    cfg.logger.options = {plugin: {"limit": 1}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = run(cfg, tmp_path)
    failures = [w for w in caught if issubclass(w.category, TrackerWarning)]
    assert len(failures) == 1
    assert str(failures[0].message).startswith(f"logger.backends: {plugin} failed while logging an episode (OSError")
    assert FailingTracker.episodes == [0]
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == len(records) == 6


@needs("mlflow")
def test_an_unreachable_mlflow_server_is_a_warning_within_the_bounded_wait(tmp_path: Path) -> None:
    cfg = _compose(["env.max_steps=25", "logger.progress=false", "logger.plots=false", "experiment.baselines=[]"])
    cfg.logger.backends = ["jsonl", "mlflow"]
    cfg.logger.mlflow.tracking_uri = f"http://127.0.0.1:{_free_port()}"
    cfg.logger.mlflow.timeout_s = 2
    started = time.monotonic()
    with pytest.warns(TrackerWarning, match=r"logger.backends: mlflow failed while starting"):
        records = run(cfg, tmp_path)
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == len(records) == 4
    assert time.monotonic() - started < 120
