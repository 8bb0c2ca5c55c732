"""Episode videos: what the agent saw, where it went, what it recalled, frame by frame.

One job per module: :mod:`~embodmem.video.snapshots` (what a video is drawn from: the scene and a
small record per step), :mod:`~embodmem.video.panels` (drawing the frames),
:mod:`~embodmem.video.encoding` (H.264 .mp4 by default, VP9 .webm as an option, through PyAV) and
:mod:`~embodmem.video.recorder` (the runner's hook that decides which episodes become videos).
"""

from __future__ import annotations

from embodmem.video.encoding import CODECS, video_format, write_video
from embodmem.video.panels import caption, compose_frame, legend_strip, memory_panel, render_frames
from embodmem.video.recorder import EPISODE_CHOICES, EpisodeRecorder, episode_video_name
from embodmem.video.snapshots import MapSnapshot, Scene, StepRecord, retrievals_from_log

__all__ = [
    "CODECS",
    "EPISODE_CHOICES",
    "EpisodeRecorder",
    "MapSnapshot",
    "Scene",
    "StepRecord",
    "caption",
    "compose_frame",
    "episode_video_name",
    "legend_strip",
    "memory_panel",
    "render_frames",
    "retrievals_from_log",
    "video_format",
    "write_video",
]
