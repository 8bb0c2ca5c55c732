"""Shared helpers of the video and replay tests."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np


def decode(path: Path) -> list[np.ndarray]:
    """Every frame of a video file, as OpenCV decodes it."""
    cap = cv2.VideoCapture(str(path))
    assert cap.isOpened(), f"OpenCV cannot open {path}"
    frames = []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        frames.append(frame)
    cap.release()
    return frames
