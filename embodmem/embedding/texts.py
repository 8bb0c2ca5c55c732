"""The project's prompts through a checkpoint's text tower, computed once and stored beside it.

On the CPU a job embeds its frames with ONNX Runtime (:mod:`embodmem.embedding.export`). Its texts,
a mission and the recognisers' prompts, are then all that would still need torch and open_clip,
whose imports are about three seconds of every job's start. Every text the project's tasks,
recognisers and answerers ask for is made of a few phrases (the missions, the names of the kinds
and of their variants, open water, the seabed), so :func:`write_text_table` stores the vector of
each, computed by the text tower one string at a time exactly as the embedder computes it, in
``<checkpoint stem>.texts.npz``. The embedder answers those texts from the table and imports torch
only for another one (a user's own mission), which gives the same vector.

The table records the checkpoint's sha256 and the architecture's name: :func:`load_text_table`
ignores a table that does not match them, so a retrained model never answers with stale vectors.

    python -m embodmem.embedding.export      # the graphs and this table (the trainer runs it too)
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from embodmem.atomic import atomic_write_with
from embodmem.embedding.checkpoints import file_digest
from embodmem.envs.objects import KINDS, VARIANTS
from embodmem.envs.tasks import ALL_MISSIONS, IMAGE_MISSION

PROBE_TEXT = "probe"
"""The text an embedder without a table embeds at start-up to learn its output size."""


def project_texts() -> list[str]:
    """Every text the project's own tasks, recognisers and answerers embed: the missions; the names of
    the kinds, of their variants, of open water and of the seabed (a mission's negatives); and each
    name as ``a photo of ... underwater`` (zero-shot prompts).

    >>> texts = project_texts()
    >>> "open water" in texts and "a photo of the empty seabed underwater" in texts
    True
    """
    names = [k.phrase for k in KINDS] + [v.phrase for v in VARIANTS] + ["open water", "the empty seabed"]
    texts = [PROBE_TEXT, *ALL_MISSIONS, IMAGE_MISSION, *names, *(f"a photo of {n} underwater" for n in names)]
    return list(dict.fromkeys(texts))


def text_table_path(checkpoint: str | Path) -> Path:
    """Where the text table of ``checkpoint`` lives: beside it, ``<stem>.texts.npz``."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(f"{checkpoint.stem}.texts.npz")


@dataclass(frozen=True)
class TextTable:
    """Texts' vectors from one checkpoint's text tower, and that model's softmax temperature."""

    model_name: str
    logit_scale: float
    """The model's ``logit_scale.exp()``, which recognisers score with."""
    vectors: Mapping[str, np.ndarray]
    """Text -> its (D,) float32 unit vector (read-only)."""

    @property
    def dim(self) -> int:
        """The vectors' size, the embedder's output size."""
        return len(next(iter(self.vectors.values())))


def write_text_table(
    model_name: str, checkpoint: str | Path, texts: list[str], vectors: np.ndarray, logit_scale: float
) -> Path:
    """Store ``vectors`` ((N, D) float32, row i for ``texts[i]``) as ``checkpoint``'s table, atomically."""
    if len(texts) != len(vectors) or len(set(texts)) != len(texts):
        raise ValueError(f"texts: {len(texts)} strings (distinct: {len(set(texts))}) for {len(vectors)} vectors")
    arrays = {
        "texts": np.array(texts, dtype=str),
        "vectors": np.asarray(vectors, dtype=np.float32),
        "logit_scale": np.float64(logit_scale),
        "model_name": np.array(model_name),
        "checkpoint_sha256": np.array(file_digest(checkpoint)),
    }
    return atomic_write_with(text_table_path(checkpoint), lambda fh: np.savez(fh, **arrays))


def export_text_table(model_name: str, checkpoint: str | Path, texts: list[str] | None = None) -> Path:
    """Embed ``texts`` (default: :func:`project_texts`) with ``checkpoint``'s text tower, one string at
    a time as the embedder does, and store them as its table."""
    from embodmem.embedding.model import create, encode_text, tokenizer

    texts = project_texts() if texts is None else texts
    model, tokenize = create(model_name, checkpoint), tokenizer(model_name)
    vectors = np.stack([encode_text(model, tokenize([text])) for text in texts])
    return write_text_table(model_name, checkpoint, texts, vectors, float(model.logit_scale.detach().exp()))


def load_text_table(model_name: str, checkpoint: str | Path) -> TextTable | None:
    """``checkpoint``'s text table, or None when there is none, or it cannot be read, or it was made
    for another architecture or another version of the checkpoint (the texts then go through the
    text tower, which gives the same vectors)."""
    path = text_table_path(checkpoint)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as stored:
            if str(stored["model_name"]) != model_name or str(stored["checkpoint_sha256"]) != file_digest(checkpoint):
                return None
            texts, vectors, logit_scale = stored["texts"].tolist(), stored["vectors"], float(stored["logit_scale"])
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None
    if vectors.ndim != 2 or vectors.dtype != np.float32 or len(vectors) != len(texts) or not texts:
        return None
    vectors.flags.writeable = False
    return TextTable(model_name=model_name, logit_scale=logit_scale, vectors=dict(zip(texts, vectors)))
