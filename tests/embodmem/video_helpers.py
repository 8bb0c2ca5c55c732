"""Shared helpers of the video and replay tests: reading back what was written, with PyAV."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np


def decode(path: Path) -> list[np.ndarray]:
    """Every frame of a video file, decoded by FFmpeg, as RGB arrays."""
    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


@dataclass(frozen=True)
class VideoInfo:
    """What a player sees in a video file."""

    container: str
    codec: str
    pix_fmt: str
    width: int
    height: int
    fps: float
    frames: int
    """Frames actually decoded (not the header's claim)."""


def probe(path: Path) -> VideoInfo:
    """The container, codec, pixel format, size and rate of a video, and how many frames decode."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        ctx = stream.codec_context
        frames = sum(1 for _ in container.decode(stream))
        return VideoInfo(
            container.format.name,
            ctx.name,
            str(ctx.pix_fmt),
            ctx.width,
            ctx.height,
            float(stream.average_rate or 0),
            frames,
        )
