"""Where the project's CLIP checkpoints live, and how a file exported from one is tied to it.

Light on purpose (no torch): the embedder reads these names and checks the files beside a checkpoint
(its ONNX graphs, its text table) before it knows whether it needs torch at all.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

ASSETS = Path(__file__).resolve().parent.parent / "assets"
DEFAULT_MODEL = "embodmem-tiny-clip"
DEFAULT_CHECKPOINT = ASSETS / "embodmem-tiny-clip.pt"
VARIANTS_CHECKPOINT = ASSETS / "embodmem-tiny-clip-variants.pt"
"""The same architecture trained on worlds with appearance variants and captions that name them
(``python -m embodmem.embedding.train --variants only``): it tells a capsized ship from an
upright one. ``embedder.pretrained=variants`` selects it; the default checkpoint is unchanged, so
every category figure stays as it was."""
NAMED_CHECKPOINTS = {"default": DEFAULT_CHECKPOINT, "variants": VARIANTS_CHECKPOINT}


def file_digest(path: str | Path) -> str:
    """sha256 of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
