"""Which compute device the embedder may use, answered without importing torch where it can be.

Importing torch takes seconds, and a job on the CPU needs none of it (:mod:`embodmem.embedding.texts`).
Whether torch could reach a GPU at all is first a question for the machine's driver: without NVIDIA's
CUDA library or AMD's ROCm device, ``torch.cuda.is_available()`` is False and torch need not be
asked. So ``device=auto`` on a machine without a GPU driver, and the check of a device the config
names (before any work starts), cost no torch import; a GPU asked for where there is one does.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys

DEVICE_FORMS = "auto, cpu, cuda, cuda:N or mps"
"""The device names ``embedder.device`` accepts (torch's names for them)."""


_CPU = r"cpu(:\d+)?"
_DEVICE = rf"auto|{_CPU}|cuda(:\d+)?|mps"


def is_cpu(device: str) -> bool:
    """Whether ``device`` names the CPU (``cpu``, ``cpu:N``): where the ONNX graphs run.

    >>> is_cpu("cpu:0"), is_cpu("cuda")
    (True, False)
    """
    return re.fullmatch(_CPU, device) is not None


def gpu_driver_present() -> bool:
    """Whether this machine has a driver through which torch could reach a GPU: NVIDIA's CUDA library
    (``libcuda``, ``nvcuda.dll``) loads, or AMD's ROCm device (``/dev/kfd``) exists."""
    if sys.platform == "darwin":
        return False
    if os.path.exists("/dev/kfd"):
        return True
    try:
        ctypes.CDLL("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")
    except OSError:
        return False
    return True


def cuda_device_count() -> int:
    """How many CUDA devices torch sees (0 without a GPU driver, and then torch is not imported)."""
    if not gpu_driver_present():
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def resolve_device(device: str) -> str:
    """``"auto"``: ``"cuda"`` when torch sees a GPU, else ``"cpu"``; any other device as given.

    >>> resolve_device("cpu")
    'cpu'
    """
    if device == "auto":
        return "cuda" if cuda_device_count() > 0 else "cpu"
    return device


def usable_devices() -> list[str]:
    """The devices the embedder can use on this machine: auto and cpu, and each GPU torch sees
    (``cuda``, ``cuda:N``; ``mps`` on a Mac). Asks torch only where a GPU driver is present."""
    count = cuda_device_count()
    gpus = ["cuda", *(f"cuda:{i}" for i in range(count))] if count else []
    return ["auto", "cpu", *gpus, *(["mps"] if _mps_available() else [])]


def device_refusal(device: str) -> str | None:
    """What may be asked for instead, when ``device`` is not a device name of :data:`DEVICE_FORMS` or
    names a GPU this machine does not have; None when it may be used.

    >>> device_refusal("cpu") is None, device_refusal("gpu")
    (True, 'auto, cpu, cuda, cuda:N or mps')
    """
    if not re.fullmatch(_DEVICE, device):
        return DEVICE_FORMS
    if device.startswith(("cuda", "mps")):
        usable = usable_devices()
        if device not in usable:
            return ", ".join(usable) + (" (this machine has no GPU that torch can use)" if len(usable) == 2 else "")
    return None


def _mps_available() -> bool:
    """Apple's GPU through torch's ``mps`` backend (macOS only: torch is asked there alone)."""
    if sys.platform != "darwin":
        return False
    import torch

    return bool(torch.backends.mps.is_available())
