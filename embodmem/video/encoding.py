"""Encoding RGB frames into a video file with PyAV (FFmpeg's libraries, shipped in the ``av`` wheel).

Two formats, chosen by the file's extension:

- ``.mp4``: H.264 (libx264), yuv420p: plays in every browser, in slides and in video players.
  The default.
- ``.webm``: VP9 (libvpx-vp9) with its realtime settings (``deadline=realtime``, ``cpu-used=8``,
  ``row-mt``): smaller files at the same speed class, for pages that prefer WebM.

Both are set for speed, so that recording a run costs little next to running it: libx264's
``ultrafast`` preset takes about 1 ms of CPU per default frame (768 x 364), VP9 realtime about
twice that; OpenCV's VP9 writer, used before, managed about 16 frames/s. :class:`VideoEncoder`
encodes on a worker thread while the caller draws the next frames.

The file is written atomically (:func:`embodmem.atomic.atomic_write_bytes`): it appears complete
or not at all.

Example:
    >>> import numpy as np, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "clip.mp4"
    >>> write_video(path, (np.full((48, 64, 3), 10 * i, np.uint8) for i in range(5)), fps=5)
    5
    >>> video_format(path)
    'mp4'
"""

from __future__ import annotations

import contextlib
import io
import os
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import av
import cv2
import numpy as np

from embodmem.atomic import atomic_write_bytes


@dataclass(frozen=True)
class Codec:
    """How one container format is encoded."""

    container: str
    """FFmpeg muxer name."""
    encoder: str
    """FFmpeg encoder name."""
    options: dict[str, str] = field(default_factory=dict)
    """Encoder options (FFmpeg's names)."""


CODECS: dict[str, Codec] = {
    "mp4": Codec("mp4", "libx264", {"preset": "ultrafast", "qp": "18"}),
    "webm": Codec(
        "webm", "libvpx-vp9", {"deadline": "realtime", "cpu-used": "8", "row-mt": "1", "crf": "32", "b": "0"}
    ),
}
"""Extension -> encoder settings. H.264 runs at a constant quantiser: with ``crf`` x264 also rates
each frame's complexity on a half-size copy, about a third of its time at ``ultrafast``, and on
these frames ``qp=18`` gives the size and the error of ``crf=23`` (``benchmarks/bench_video.py
--codecs``). VP9 keeps ``crf`` (``b=0``: pure constant quality)."""
PIPELINE_DEPTH = 16
"""Frames handed to the encoder thread and not yet encoded, at most."""
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


class VideoEncoder:
    """Encodes frames as they come, on a worker thread, into memory; :meth:`save` writes the file.

    The caller goes on drawing the next frame while the worker encodes this one: FFmpeg lets go
    of the GIL, so the two overlap when a second core is free. Frames are encoded in order and at most ``PIPELINE_DEPTH``
    wait, so memory stays bounded and an encoder error surfaces at the next :meth:`add` or at
    :meth:`save`. The encoded bytes stay in memory (about 4 kB a frame at the default size) until
    :meth:`save` writes them atomically, so an encoder that is never saved leaves nothing on disk;
    :meth:`close` (or leaving its ``with`` block) stops its thread.

    Args:
        fmt: ``mp4`` or ``webm`` (:data:`CODECS`).
        fps: frames per second (>= 1).
        codec: other encoder settings for ``fmt`` than :data:`CODECS`' (benchmarks compare them).

    Raises:
        ValueError: for an unknown format or ``fps < 1``.
    """

    def __init__(self, fmt: str, fps: int, codec: Codec | None = None):
        if fmt not in CODECS:
            raise ValueError(f"video format {fmt!r}: allowed: {', '.join(CODECS)}")
        if fps < 1:
            raise ValueError(f"fps={fps} must be >= 1")
        self.format = fmt
        self.codec = codec or CODECS[fmt]
        self.fps = fps
        self.frames = 0
        """Frames handed over so far."""
        self._buffer = io.BytesIO()
        self._container: av.container.OutputContainer | None = None
        self._stream: av.VideoStream | None = None
        self._shape: tuple[int, ...] | None = None
        self._worker: ThreadPoolExecutor | None = None
        self._pending: deque[Future[None]] = deque()
        self._closed = False

    def __enter__(self) -> VideoEncoder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, frame: np.ndarray) -> None:
        """Hand over the next RGB frame: (H, W, 3) uint8 with even H and W, the size of the first.

        The frame is converted to yuv420p here (OpenCV), so the caller may reuse its array; the
        worker thread encodes the converted planes.

        Raises:
            RuntimeError: when the encoder failed on an earlier frame (message from FFmpeg).
            ValueError: for a frame of another size or odd sides, or a closed encoder.
        """
        if self._closed:
            raise ValueError("the video encoder is closed")
        if self._shape is None:
            self._open(frame)
        elif frame.shape != self._shape:
            raise ValueError(f"frame {self.frames} has shape {frame.shape}, the first had {self._shape}")
        assert self._worker is not None
        self._pending.append(self._worker.submit(self._encode, _yuv420p(frame)))
        self.frames += 1
        while len(self._pending) > PIPELINE_DEPTH:
            self._wait(self._pending.popleft())

    def save(self, path: str | os.PathLike[str]) -> int:
        """Finish the video and write it to ``path`` atomically; returns the frame count. Closes the encoder.

        Raises:
            RuntimeError: when the encoder fails (message from FFmpeg).
            ValueError: when no frames were given, or ``path``'s extension names another format.
        """
        try:
            if video_format(path) != self.format:
                raise ValueError(f"{path}: this encoder writes .{self.format} files")
            if self._container is None or self._stream is None:
                raise ValueError("no frames to write")
            while self._pending:
                self._wait(self._pending.popleft())
            try:
                self._container.mux(self._stream.encode(None))
                self._container.close()
            except av.FFmpegError as err:
                raise RuntimeError(f"{self.codec.encoder} failed: {err}") from err
            self._container = None
            atomic_write_bytes(path, self._buffer.getvalue())
            return self.frames
        finally:
            self.close()

    def close(self) -> None:
        """Stop the worker and drop what was encoded and not saved."""
        if self._closed:
            return
        self._closed = True
        for future in self._pending:
            future.cancel()
        if self._worker is not None:
            self._worker.shutdown(wait=True)
        self._pending.clear()
        if self._container is not None:
            with contextlib.suppress(av.FFmpegError, OSError):
                self._container.close()
            self._container = None
        self._buffer = io.BytesIO()

    def _open(self, first: np.ndarray) -> None:
        shape = first.shape
        if first.ndim != 3 or shape[2] != 3 or shape[0] % 2 or shape[1] % 2:
            raise ValueError(f"frames must be (H, W, 3) RGB with even H and W, got {shape}")
        container = av.open(self._buffer, mode="w", format=self.codec.container)
        stream = container.add_stream(self.codec.encoder, rate=self.fps, options=dict(self.codec.options))
        assert isinstance(stream, av.VideoStream)
        stream.width, stream.height, stream.pix_fmt = shape[1], shape[0], PIXEL_FORMAT
        self._container, self._stream, self._shape = container, stream, shape
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="video-encode")

    def _encode(self, planes: np.ndarray) -> None:
        """On the worker: encode one frame's yuv420p planes (PyAV wraps them without a copy)."""
        assert self._container is not None and self._stream is not None
        frame = av.VideoFrame.from_numpy_buffer(planes, format=PIXEL_FORMAT)
        self._container.mux(self._stream.encode(frame))

    def _wait(self, future: Future[None]) -> None:
        try:
            future.result()
        except av.FFmpegError as err:
            raise RuntimeError(f"{self.codec.encoder} failed: {err}") from err


def write_video(path: str | os.PathLike[str], frames: Iterable[np.ndarray], fps: int = 10) -> int:
    """Encode RGB frames into ``path`` (format from its extension) atomically; returns the frame count.

    All frames must have the size of the first, and even sides (yuv420p halves the chroma).

    Raises:
        RuntimeError: when the encoder fails (message from FFmpeg).
        ValueError: when no frames are given, or a frame has another size or odd sides.
    """
    with VideoEncoder(video_format(path), fps) as encoder:
        try:
            for frame in frames:
                encoder.add(frame)
            return encoder.save(path)
        except RuntimeError as err:
            if isinstance(err.__cause__, av.FFmpegError):
                raise RuntimeError(f"{path}: {err}") from err.__cause__
            raise


def _yuv420p(rgb: np.ndarray) -> np.ndarray:
    """An RGB frame as yuv420p planes, converted by OpenCV (BT.601, limited range, as FFmpeg's
    default): about three times faster than FFmpeg's swscale, which was half the encoding time."""
    return cv2.cvtColor(np.ascontiguousarray(rgb, dtype=np.uint8), cv2.COLOR_RGB2YUV_I420)
