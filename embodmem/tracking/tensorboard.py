"""TensorBoard: scalars, the resolved config in the HParams dashboard, plots and episode videos.

Written with PyTorch's ``SummaryWriter`` (TensorBoard's own event-file writer behind it); one run
directory per job, so ``tensorboard --logdir <sweep dir>`` shows every job of a multirun side by side.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from embodmem.tracking.protocol import EpisodeScalars, MediaFile, TrackedRun
from embodmem.tracking.settings import TensorBoardSettings


class TensorBoardTracker:
    """Event files in ``<run dir>/tensorboard`` (or ``logger.tensorboard.log_dir``)."""

    def __init__(self, run: TrackedRun, settings: TensorBoardSettings) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.log_dir = Path(settings.log_dir) if settings.log_dir else run.out_dir / "tensorboard"
        self.settings = settings
        self.hparams = dict(run.hparams)
        self.writer = SummaryWriter(log_dir=str(self.log_dir), flush_secs=settings.flush_secs)
        self.writer.add_text("run/overrides", run.overrides or "(none)", 0)
        self.writer.add_text("run/name", f"{run.name} (group {run.group or 'none'}, job {run.job_num})", 0)

    def log_episode(self, episode: EpisodeScalars) -> None:
        for key, value in episode.keyed().items():
            self.writer.add_scalar(key, value, episode.index)

    def log_summary(self, scalars: Mapping[str, float], step: int) -> None:
        from torch.utils.tensorboard.summary import hparams

        for key, value in scalars.items():
            self.writer.add_scalar(key, value, step)
        metrics = {k: v for k, v in scalars.items() if k.startswith("run/")}
        # Written into this run's own event file (SummaryWriter.add_hparams would open another run).
        experiment, start, end = hparams(self.hparams, metrics)
        for summary in (experiment, start, end):
            self.writer._get_file_writer().add_summary(summary)

    def log_media(self, media: MediaFile) -> None:
        if media.kind == "plot":
            import cv2

            image = cv2.imread(str(media.path), cv2.IMREAD_COLOR)
            if image is not None:
                self.writer.add_image(media.name, image[:, :, ::-1].copy(), media.step, dataformats="HWC")
        elif self.settings.videos:
            self._add_gif(media)

    def _add_gif(self, media: MediaFile) -> None:
        """The video as an animated GIF image summary (what TensorBoard's image tab plays)."""
        import av
        from PIL import Image
        from tensorboard.compat.proto.summary_pb2 import Summary

        with av.open(str(media.path)) as container:
            stream = container.streams.video[0]
            fps = float(stream.average_rate or 10)
            frames = [frame.to_ndarray(format="rgb24") for frame in container.decode(stream)]
        if not frames:
            return
        picked = np.linspace(0, len(frames) - 1, min(len(frames), self.settings.video_frames)).round().astype(int)
        images = [Image.fromarray(frames[i]) for i in picked]
        duration_ms = int(1000 * len(frames) / fps / len(images))
        buffer = io.BytesIO()
        images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:], duration=duration_ms, loop=0)
        height, width = frames[0].shape[:2]
        image = Summary.Image(height=height, width=width, colorspace=3, encoded_image_string=buffer.getvalue())
        self.writer._get_file_writer().add_summary(
            Summary(value=[Summary.Value(tag=media.name, image=image)]), media.step
        )

    def close(self, failed: bool) -> None:
        self.writer.flush()
        self.writer.close()
