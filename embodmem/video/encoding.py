"""Encoding RGB frames into a video file with PyAV (FFmpeg's libraries, shipped in the ``av`` wheel).

Two formats, chosen by the file's extension:

- ``.mp4``: H.264 (libx264), yuv420p, faststart (index first): plays in every browser, in slides
  and in video players, and starts while it downloads. The default.
- ``.webm``: VP9 (libvpx-vp9) with its realtime settings (``deadline=realtime``, ``cpu-used=8``,
  ``row-mt``): smaller files at the same speed class, for pages that prefer WebM.

Both are set for speed, so that recording a run costs little next to running it: libx264's
``ultrafast`` preset at a constant quantiser takes 0.7-0.9 ms of CPU per default frame
(768 x 364) with the colour conversion (``benchmarks/bench_video.py --codecs``), VP9 realtime
about twice that; OpenCV's VP9 writer, used before, managed about 16 frames/s. Encoding runs on a
worker thread while the next frames are drawn (see :func:`_encode`).

The file is written through :func:`embodmem.atomic.atomic_write_with`: it appears complete or not
at all.

Example:
    >>> import numpy as np, tempfile, pathlib
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(folder.name) / "clip.mp4"
    >>> write_video(path, (np.full((48, 64, 3), 10 * i, np.uint8) for i in range(5)), fps=5)
    5
    >>> video_format(path)
    'mp4'
    >>> folder.cleanup()
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import av
import cv2
import numpy as np

from embodmem.atomic import atomic_write_with


@dataclass(frozen=True)
class Codec:
    """How one container format is encoded."""

    container: str
    """FFmpeg muxer name."""
    encoder: str
    """FFmpeg encoder name."""
    options: dict[str, str] = field(default_factory=dict)
    """Encoder options (FFmpeg's names)."""
    container_options: dict[str, str] = field(default_factory=dict)
    """Muxer options (FFmpeg's names)."""


CODECS: dict[str, Codec] = {
    "mp4": Codec("mp4", "libx264", {"preset": "ultrafast", "qp": "18"}, {"movflags": "+faststart"}),
    "webm": Codec(
        "webm", "libvpx-vp9", {"deadline": "realtime", "cpu-used": "8", "row-mt": "1", "crf": "32", "b": "0"}
    ),
}
"""Extension -> encoder settings. H.264 runs at a constant quantiser: with ``crf``, x264 also rates
each frame's complexity on a half-size copy, a fifth to a third of the encoding's CPU at
``ultrafast``, and on these frames ``qp=18`` keeps about the error of ``crf=23`` in smaller files (``benchmarks/
bench_video.py --codecs``). VP9 keeps ``crf`` (``b=0``: pure constant quality). MP4 is written
``+faststart``: the index (``moov``) before the frames (``mdat``), so a browser starts playing before
the whole file has arrived (the muxer moves the index in a second pass over the file, at the end)."""
PIPELINE_DEPTH = 8
"""Frames converted and waiting for the encoder thread at most."""
PIXEL_FORMAT = "yuv420p"
"""The chroma layout browsers decode (4:4:4 H.264 plays in none)."""


def video_format(path: str | os.PathLike[str]) -> str:
    """``mp4`` or ``webm`` from a file name.

    Raises:
        ValueError: for any other extension.
    """
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in CODECS:
        raise ValueError(f"{path}: video files must end in {', '.join('.' + e for e in CODECS)}")
    return ext


def write_video(
    path: str | os.PathLike[str], frames: Iterable[np.ndarray], fps: int = 10, codec: Codec | None = None
) -> int:
    """Encode RGB frames into ``path`` (format from its extension) atomically; returns the frame count.

    All frames must have the size of the first, and even sides (yuv420p halves the chroma).
    ``codec`` replaces the format's settings in :data:`CODECS` (benchmarks compare settings).

    Raises:
        RuntimeError: when the encoder fails (message from FFmpeg).
        ValueError: when no frames are given, or a frame has another size or odd sides.
    """
    settings = codec or CODECS[video_format(path)]
    count = 0

    def encode(fh: BinaryIO) -> None:
        nonlocal count
        count = _encode(fh, settings, frames, fps)

    if fps < 1:
        raise ValueError(f"fps={fps} must be >= 1")
    try:
        atomic_write_with(path, encode)
    except av.FFmpegError as err:
        raise RuntimeError(f"{path}: {settings.encoder} failed: {err}") from err
    return count


def _yuv420p(rgb: np.ndarray) -> np.ndarray:
    """An RGB frame as yuv420p planes, converted by OpenCV (BT.601, limited range, as FFmpeg's
    default): about three times faster than FFmpeg's swscale, which was half the encoding time."""
    return cv2.cvtColor(np.ascontiguousarray(rgb, dtype=np.uint8), cv2.COLOR_RGB2YUV_I420)


def _encode(fh: BinaryIO, codec: Codec, frames: Iterable[np.ndarray], fps: int) -> int:
    """Encode on a worker thread while the caller's generator draws the next frames.

    PyAV lets go of the GIL inside FFmpeg's encoder, so drawing (Python and OpenCV) and encoding
    overlap when a second core is free; a frame is handed over only after its colour conversion, in order, and at
    most ``PIPELINE_DEPTH`` wait, so memory stays bounded and an encoder error surfaces at once.
    """
    it = iter(frames)
    first = next(it, None)
    if first is None:
        raise ValueError("no frames to write")
    shape = first.shape
    h, w = shape[:2]
    if first.ndim != 3 or shape[2] != 3 or h % 2 or w % 2:
        raise ValueError(f"frames must be (H, W, 3) RGB with even H and W, got {shape}")
    n = 0
    with av.open(fh, mode="w", format=codec.container, container_options=dict(codec.container_options)) as container:
        stream = container.add_stream(codec.encoder, rate=fps, options=dict(codec.options))
        assert isinstance(stream, av.VideoStream)
        stream.width, stream.height, stream.pix_fmt = w, h, PIXEL_FORMAT
        pending: deque[Future[None]] = deque()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="video-encode") as worker:
            for frame in itertools.chain([first], it):
                if frame.shape != shape:
                    raise ValueError(f"frame {n} has shape {frame.shape}, the first had {shape}")
                pending.append(worker.submit(_encode_planes, container, stream, _yuv420p(frame)))
                n += 1
                while len(pending) > PIPELINE_DEPTH:
                    pending.popleft().result()
            while pending:
                pending.popleft().result()
        container.mux(stream.encode(None))
    return n


def _encode_planes(container: av.container.OutputContainer, stream: av.VideoStream, planes: np.ndarray) -> None:
    """On the worker: encode one frame's yuv420p planes (PyAV wraps them without a copy) and mux its packets."""
    container.mux(stream.encode(av.VideoFrame.from_numpy_buffer(planes, format=PIXEL_FORMAT)))
