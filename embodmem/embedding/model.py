"""Building open_clip models: the project's own small CLIP, or any open_clip architecture.

The default model, ``embodmem-tiny-clip`` (a 4-layer, width-64 ViT with 8-pixel patches at 64x64 and
a 2-layer text tower, 128-d embeddings), is an ordinary open_clip architecture: its config is
registered with ``open_clip.add_model_config`` and its weights load through ``pretrained=PATH``,
exactly as a user's ViT-B-32 checkpoint would.
"""

from __future__ import annotations

from pathlib import Path

import open_clip
import torch

ASSETS = Path(__file__).resolve().parent.parent / "assets"
DEFAULT_MODEL = "embodmem-tiny-clip"
DEFAULT_CHECKPOINT = ASSETS / "embodmem-tiny-clip.pt"

_registered = False


def register_configs() -> None:
    """Make the project's architectures known to open_clip (idempotent)."""
    global _registered
    if not _registered:
        open_clip.add_model_config(ASSETS / f"{DEFAULT_MODEL}.json")
        _registered = True


def create(model_name: str, pretrained: str | Path | None, device: str | torch.device = "cpu") -> torch.nn.Module:
    """Create an open_clip model in eval mode.

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
    if pretrained is not None and ("/" in str(pretrained) or str(pretrained).endswith((".pt", ".bin", ".safetensors"))):
        if not Path(pretrained).is_file():
            raise ValueError(f"checkpoint {str(pretrained)!r} does not exist")
    model = open_clip.create_model(model_name, pretrained=str(pretrained) if pretrained else None, device=device)
    model.eval()
    return model


def tokenizer(model_name: str):
    """open_clip's tokenizer for ``model_name`` (the default BPE vocabulary ships with open_clip)."""
    register_configs()
    return open_clip.get_tokenizer(model_name)


def save_checkpoint(model: torch.nn.Module, path: str | Path, half: bool = True) -> Path:
    """Save a state dict open_clip can load with ``pretrained=path`` (fp16 by default: half the bytes)."""
    from embodmem.atomic import atomic_write_with

    state = {k: (v.half() if half and v.is_floating_point() else v) for k, v in model.state_dict().items()}
    return atomic_write_with(path, lambda fh: torch.save(state, fh))
