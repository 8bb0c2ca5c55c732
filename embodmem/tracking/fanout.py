"""The run's trackers behind one object: every call goes to each, and a tracker that fails is
reported once, as a warning naming it, and left out for the rest of the run. metrics.jsonl is
written by the runner before any tracker is called, so it stays complete whatever they do.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from embodmem.metrics_record import EpisodeRecord, episode_name
from embodmem.plugins import load_object
from embodmem.tracking.protocol import MediaFile, TrackedRun, Tracker
from embodmem.tracking.scalars import episode_scalars, run_means, transfer_scalars
from embodmem.tracking.settings import (
    JSONL,
    STOCK_BACKENDS,
    STOCK_NAMES,
    MLflowSettings,
    TensorBoardSettings,
    WandbSettings,
)
from embodmem.transfer import TableRow


class TrackerWarning(UserWarning):
    """A tracker failed during the run; the run went on without it."""


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}"[:300]


class Trackers:
    """The fan-out to the run's trackers (``logger.backends`` besides ``jsonl``)."""

    def __init__(self, run_dir: Path, trackers: Sequence[tuple[str, Tracker]] = ()) -> None:
        self.run_dir = run_dir
        """The run directory the records' file fields (``video``) are relative to."""
        self.trackers: dict[str, Tracker] = dict(trackers)
        self.failed: list[str] = []
        """Backends that failed, in order (each was warned about once)."""
        self.closed = False

    @property
    def names(self) -> list[str]:
        return list(self.trackers)

    def _fail(self, name: str, what: str, error: BaseException) -> None:
        self.trackers.pop(name, None)
        self.failed.append(name)
        warnings.warn(
            f"logger.backends: {name} failed while {what} ({_one_line(error)}); the run goes on without it "
            "and metrics.jsonl stays complete",
            TrackerWarning,
            stacklevel=3,
        )

    def _each(self, what: str, call: Callable[[Tracker], object]) -> None:
        for name, tracker in list(self.trackers.items()):
            try:
                call(tracker)
            except Exception as error:  # a tracker's failure is never the run's
                self._fail(name, what, error)

    def log_episode(self, index: int, record: EpisodeRecord) -> None:
        """The runner's hook: one finished episode (written to metrics.jsonl already) at ``index``."""
        if not self.trackers or record.aborted:
            return
        scalars = episode_scalars(index, record)
        self._each("logging an episode", lambda t: t.log_episode(scalars))
        if record.video:
            video = MediaFile(self.run_dir / record.video, "video", f"video/{episode_name(record.plain())}", index)
            if video.path.is_file():
                self._each("logging a video", lambda t: t.log_media(video))

    def finish(
        self,
        records: Sequence[EpisodeRecord],
        transfer: Iterable[TableRow],
        metrics: Sequence[str],
        files: Iterable[Path],
    ) -> None:
        """The end of the run: the transfer table and run means, the report's plots; then close."""
        step = len(records)
        summary = {**transfer_scalars(transfer, metrics), **run_means(records)}
        self._each("logging the summary", lambda t: t.log_summary(summary, step))
        plots = [MediaFile(path, "plot", f"plot/{path.stem}", step) for path in files if path.suffix == ".png"]

        def log_plots(tracker: Tracker) -> None:
            for plot in plots:
                tracker.log_media(plot)

        self._each("logging the plots", log_plots)
        self.close(failed=False)

    def close(self, failed: bool) -> None:
        """Finish every tracker's run once (``failed``: the experiment stopped on an error)."""
        if self.closed:
            return
        self.closed = True
        self._each("closing", lambda t: t.close(failed))


def open_trackers(
    backends: Iterable[str],
    options: Mapping[str, Mapping[str, Any]],
    settings: tuple[TensorBoardSettings, WandbSettings, MLflowSettings],
    run: TrackedRun,
) -> Trackers:
    """Start each backend of ``logger.backends`` but ``jsonl`` (written by the runner itself). One
    that fails to start is reported like a failure during the run: a warning, and the run goes on."""
    trackers = Trackers(run.out_dir)
    by_name: dict[str, Any] = dict(zip(STOCK_BACKENDS, settings))
    for name in backends:
        if name == JSONL:
            continue
        try:
            if name in STOCK_BACKENDS:
                factory = load_object("logger", STOCK_BACKENDS[name].target, STOCK_NAMES)
                assert callable(factory)
                tracker = factory(run, by_name[name])
            else:
                factory = load_object("logger", name, STOCK_NAMES)
                assert callable(factory)
                tracker = factory(run, **dict(options.get(name, {})))
        except Exception as error:
            trackers._fail(name, "starting", error)
            continue
        trackers.trackers[name] = tracker
    return trackers
