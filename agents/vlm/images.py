"""Frames <-> base64 data URLs, the way OpenAI-compatible servers take images.

Observations are RGB; OpenCV encodes BGR, so the channel order is swapped on the way in and out.
A local model behind :class:`embodmem.agents.vlm.policy.CallablePolicy` receives the same messages as a
server and can get its pixels back with :func:`decode_data_url` or :func:`message_images`.

Example:
    >>> import numpy as np
    >>> url = encode_image(np.zeros((4, 6, 3), np.uint8))
    >>> url.startswith("data:image/png;base64,"), decode_data_url(url).shape
    (True, (4, 6, 3))
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from typing import Literal

import cv2
import numpy as np
from openai.types.chat import ChatCompletionContentPartImageParam, ChatCompletionMessageParam
from openai.types.chat.chat_completion_content_part_image_param import ImageURL

_MIME = {"png": "image/png", "jpeg": "image/jpeg"}
_DETAILS: dict[str, Literal["auto", "low", "high"]] = {"auto": "auto", "low": "low", "high": "high"}
"""The ``detail`` levels OpenAI-compatible servers take for an image."""


def encode_image(image: np.ndarray, fmt: str = "png", *, quality: int = 90, size: int | None = None) -> str:
    """Encode an (H, W, 3) uint8 RGB frame as a ``data:`` URL.

    Args:
        image: RGB frame (grayscale (H, W) is accepted and sent as is).
        fmt: ``png`` or ``jpeg``.
        quality: JPEG quality (ignored for PNG).
        size: resize to ``size`` x ``size`` first (nearest for upscaling keeps the pixel-art crisp,
            area for downscaling avoids aliasing).

    Raises:
        ValueError: on an unsupported format or array shape / dtype.
    """
    if fmt not in _MIME:
        raise ValueError(f"image format {fmt!r} is not one of {sorted(_MIME)}")
    arr = np.asarray(image)
    if arr.dtype != np.uint8 or arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] != 3):
        raise ValueError(f"expected an (H, W, 3) uint8 image, got shape {arr.shape} dtype {arr.dtype}")
    if size is not None and arr.shape[:2] != (size, size):
        interp = cv2.INTER_NEAREST if size >= max(arr.shape[:2]) else cv2.INTER_AREA
        arr = cv2.resize(arr, (size, size), interpolation=interp)
    if arr.ndim == 3:
        arr = cv2.cvtColor(np.ascontiguousarray(arr), cv2.COLOR_RGB2BGR)
    params = [cv2.IMWRITE_JPEG_QUALITY, int(quality)] if fmt == "jpeg" else []
    ok, buf = cv2.imencode(".png" if fmt == "png" else ".jpg", arr, params)
    if not ok:  # pragma: no cover - OpenCV only fails on unsupported arrays, checked above
        raise ValueError(f"OpenCV could not encode an image of shape {arr.shape} as {fmt}")
    return f"data:{_MIME[fmt]};base64,{base64.b64encode(buf.tobytes()).decode('ascii')}"


def decode_data_url(url: str) -> np.ndarray:
    """Decode a ``data:image/...;base64,`` URL back to an (H, W, 3) uint8 RGB array.

    Raises:
        ValueError: if ``url`` is not a base64 image data URL or does not decode.
    """
    head, sep, payload = url.partition(",")
    if not sep or not head.startswith("data:image/") or not head.endswith(";base64"):
        raise ValueError(f"not a base64 image data URL: {url[:40]!r}...")
    buf = np.frombuffer(base64.b64decode(payload), dtype=np.uint8)
    bgr = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    if bgr is None:
        raise ValueError(f"data URL {head!r} does not decode to an image")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def image_part(url: str, detail: str | None = None) -> ChatCompletionContentPartImageParam:
    """An OpenAI ``image_url`` content part for a data URL.

    Raises:
        ValueError: ``detail`` is not one of ``auto``, ``low``, ``high`` (or ``None``).
    """
    image_url: ImageURL = {"url": url}
    if detail is not None:
        if detail not in _DETAILS:
            raise ValueError(f"image detail {detail!r} is not one of {list(_DETAILS)} (agent.vlm.image_detail)")
        image_url["detail"] = _DETAILS[detail]
    return {"type": "image_url", "image_url": image_url}


def message_images(messages: Iterable[ChatCompletionMessageParam]) -> Iterator[np.ndarray]:
    """Yield every image in chat ``messages`` as an RGB array, in order (for local models)."""
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if part.get("type") == "image_url":
                yield decode_data_url(part["image_url"]["url"])
