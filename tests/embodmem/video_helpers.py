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


def mp4_boxes(path: Path) -> list[str]:
    """The top-level box types of an MP4 file in file order (ISO/IEC 14496-12: 32-bit size, 4-char
    type; size 1: a 64-bit size follows; size 0: to the end of the file), as ``ffprobe -v trace`` lists them."""
    data = path.read_bytes()
    kinds, i = [], 0
    while i + 8 <= len(data):
        size, kind = int.from_bytes(data[i : i + 4], "big"), data[i + 4 : i + 8].decode("latin-1")
        if size == 1:
            size = int.from_bytes(data[i + 8 : i + 16], "big")
        elif size == 0:
            size = len(data) - i
        if size < 8:
            raise ValueError(f"{path}: box {kind!r} at byte {i} has size {size}")
        kinds.append(kind)
        i += size
    if i != len(data):
        raise ValueError(f"{path}: the boxes end at byte {i}, the file at {len(data)}")
    return kinds


def assert_faststart(path: Path) -> None:
    """``moov`` (the index) before ``mdat`` (the frames): a browser plays the file while it downloads."""
    kinds = mp4_boxes(path)
    assert "moov" in kinds and "mdat" in kinds, kinds
    assert kinds.index("moov") < kinds.index("mdat"), f"{path}: {kinds} (moov after mdat: not faststart)"
