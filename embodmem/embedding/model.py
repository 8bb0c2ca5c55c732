"""Building open_clip models: the project's own small CLIP, or any open_clip architecture.

The default model, ``embodmem-tiny-clip`` (a 4-layer, width-64 ViT with 16-pixel patches at 64x64 and
a 2-layer text tower, 128-d embeddings), is an ordinary open_clip architecture: its config is
registered with ``open_clip.add_model_config`` and its weights load through ``pretrained=PATH``,
exactly as a user's ViT-B-32 checkpoint would.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from embodmem.embedding.checkpoints import ASSETS, DEFAULT_MODEL
from embodmem.lazy import import_refused

with import_refused("wandb"):  # timm (under open_clip) imports wandb when installed: seconds, never used here
    import open_clip

_registered = False

#: open_clip's normalisation, used when a model's config does not name its own.
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


def register_configs() -> None:
    """Make the project's architectures known to open_clip (idempotent)."""
    global _registered
    if not _registered:
        open_clip.add_model_config(ASSETS / f"{DEFAULT_MODEL}.json")
        _registered = True


def create(model_name: str, pretrained: str | Path | None, device: str | torch.device = "cpu") -> Any:
    """Create an open_clip model (a ``CLIP``: open_clip is untyped) in eval mode.

    Args:
        model_name: any open_clip architecture (``ViT-B-32``, ``embodmem-tiny-clip`` ...).
        pretrained: a local checkpoint path, an open_clip pretrained tag (needs the network), or
            ``None`` for random weights.

    Raises:
        ValueError: unknown architecture (the message lists a few valid ones) or missing checkpoint.
    """
    register_configs()
    if model_name not in open_clip.list_models():
        sample = ", ".join([DEFAULT_MODEL] + [m for m in open_clip.list_models() if m.startswith("ViT-B")][:4])
        raise ValueError(f"unknown open_clip architecture {model_name!r}; e.g. {sample}")
    is_path = pretrained is not None and (
        "/" in str(pretrained) or str(pretrained).endswith((".pt", ".bin", ".safetensors"))
    )
    if is_path and not Path(str(pretrained)).is_file():
        raise ValueError(f"checkpoint {str(pretrained)!r} does not exist")
    model = open_clip.create_model(model_name, pretrained=str(pretrained) if pretrained else None, device=device)
    model.eval()
    return model


def tokenizer(model_name: str) -> Callable[[list[str]], torch.Tensor]:
    """open_clip's tokenizer for ``model_name`` (the default BPE vocabulary ships with open_clip)."""
    register_configs()
    return open_clip.get_tokenizer(model_name)


def encode_text(model: Any, tokens: torch.Tensor) -> np.ndarray:
    """One string's ``tokens`` (1 x context, from :func:`tokenizer`) through ``model``'s text tower
    -> its (D,) float32 unit vector.

    One string at a time: a batch's matrix products may round the last bits differently for each
    batch size, so a string's vector would depend on which other strings were asked for with it.
    Alone, it is a function of the string (texts are few: a mission and its prompts)."""
    with torch.inference_mode():
        return model.encode_text(tokens, normalize=True).float().cpu().numpy()[0]


def save_checkpoint(model: torch.nn.Module, path: str | Path, half: bool = True) -> Path:
    """Save a state dict open_clip can load with ``pretrained=path`` (fp16 by default: half the bytes)."""
    from embodmem.atomic import atomic_write_with

    state = {k: (v.half() if half and v.is_floating_point() else v) for k, v in model.state_dict().items()}
    return atomic_write_with(path, lambda fh: torch.save(state, fh))


class FrameEncoder(torch.nn.Module):
    """Camera frames as the environment gives them (uint8, N x H x W x 3) -> unit image vectors.

    One module holds the whole path (scale, resize, normalise, image tower, L2-normalise) so that
    the embedder, the trainer and the exported ONNX graph cannot drift apart.
    """

    mean: torch.Tensor
    std: torch.Tensor

    def __init__(self, visual: Any):
        """``visual``: an open_clip image tower (``model.visual``)."""
        super().__init__()
        self.visual = visual
        size = visual.image_size
        self.image_size = int(size[0] if isinstance(size, (tuple, list)) else size)
        self.register_buffer("mean", torch.tensor(getattr(visual, "image_mean", None) or CLIP_MEAN).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(getattr(visual, "image_std", None) or CLIP_STD).view(1, 3, 1, 1))

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        x = frames.permute(0, 3, 1, 2).float() / 255.0
        if x.shape[-2:] != (self.image_size, self.image_size):
            x = F.interpolate(
                x, size=(self.image_size, self.image_size), mode="bilinear", align_corners=False, antialias=True
            )
        return F.normalize(self.visual((x - self.mean) / self.std), dim=-1)
