"""Turn camera frames and mission texts into unit vectors with an open_clip model.

Frames are embedded once: a cache keyed by the frame's bytes means an identical view (the robot
turning back to where it looked a moment ago) is never pushed through the network twice. Images are
preprocessed with torch ops on the whole batch (resize, normalise) rather than PIL per image: at
64x64 that is the difference between hundreds and thousands of frames per second.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from embodmem.embedding.model import DEFAULT_CHECKPOINT, DEFAULT_MODEL, create, tokenizer


class ClipEmbedder:
    """Batched, cached CLIP embeddings of images (uint8 RGB) and texts.

    Example:
        >>> emb = ClipEmbedder()                       # the project's own model, offline
        >>> import numpy as np
        >>> v = emb.embed_images(np.zeros((2, 64, 64, 3), np.uint8))
        >>> v.shape, round(float(np.linalg.norm(v[0])), 3)
        ((2, 128), 1.0)
    """

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        pretrained: str | Path | None = DEFAULT_CHECKPOINT,
        device: str = "cpu",
        batch_size: int = 64,
        cache_size: int = 50_000,
        threads: int | None = None,
        jit: bool = True,
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size} must be >= 1")
        if cache_size < 0:
            raise ValueError(f"cache_size={cache_size} must be >= 0")
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device={device!r} requested but CUDA is not available")
        if threads:
            torch.set_num_threads(threads)
        self.model_name = model_name
        self.pretrained = str(pretrained) if pretrained else None
        self.device = torch.device(device)
        self.model = create(model_name, pretrained, device=self.device)
        self.tokenize = tokenizer(model_name)
        size = self.model.visual.image_size
        self.image_size = int(size[0] if isinstance(size, (tuple, list)) else size)
        self.mean = torch.tensor(getattr(self.model.visual, "image_mean", None) or (0.48145466, 0.4578275, 0.40821073))
        self.std = torch.tensor(getattr(self.model.visual, "image_std", None) or (0.26862954, 0.26130258, 0.27577711))
        self.mean = self.mean.view(1, 3, 1, 1).to(self.device)
        self.std = self.std.view(1, 3, 1, 1).to(self.device)
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.jit = jit and self.device.type == "cpu"
        self._traced = None
        self._image_cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._text_cache: dict[str, np.ndarray] = {}
        self.dim = int(self.embed_texts(["probe"]).shape[1])
        self.cache_hits = 0
        self.frames_embedded = 0

    # ----------------------------------------------------------------- images

    def _preprocess(self, images: np.ndarray) -> torch.Tensor:
        x = torch.from_numpy(np.ascontiguousarray(images)).to(self.device).permute(0, 3, 1, 2).float().div_(255.0)
        if x.shape[-1] != self.image_size or x.shape[-2] != self.image_size:
            x = F.interpolate(x, size=(self.image_size, self.image_size), mode="bilinear", align_corners=False, antialias=True)
        return (x - self.mean) / self.std

    def _single_frame_encoder(self, x: torch.Tensor):
        """A traced, frozen copy of the image tower for batches of one frame (the agent's hot path).

        Eager PyTorch spends most of a one-frame forward pass dispatching ops; tracing once and
        freezing halves the time per frame. Other batch sizes use the eager model.
        """
        if self._traced is None:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                traced = torch.jit.trace(self.model.visual, x)
                self._traced = torch.jit.freeze(traced.eval())
        return self._traced

    @torch.inference_mode()
    def _encode_images(self, images: np.ndarray) -> np.ndarray:
        out = []
        for i in range(0, len(images), self.batch_size):
            x = self._preprocess(images[i : i + self.batch_size])
            if len(x) == 1 and self.jit:
                feats = F.normalize(self._single_frame_encoder(x)(x), dim=-1)
            else:
                feats = self.model.encode_image(x, normalize=True)
            out.append(feats.float().cpu().numpy())
        self.frames_embedded += len(images)
        return np.concatenate(out).astype(np.float32)

    def embed_images(self, images: np.ndarray) -> np.ndarray:
        """(N, H, W, 3) uint8 RGB -> (N, D) float32 unit vectors; repeated frames come from the cache."""
        images = np.asarray(images)
        if images.ndim == 3:
            images = images[None]
        if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8:
            raise ValueError(f"images must be (N, H, W, 3) uint8, got shape {images.shape} dtype {images.dtype}")
        if self.cache_size == 0:
            return self._encode_images(images)
        keys = [hashlib.blake2b(img.tobytes(), digest_size=16).digest() for img in images]
        todo: dict[bytes, int] = {}  # distinct uncached frames -> first index in the batch
        for i, k in enumerate(keys):
            if k not in self._image_cache and k not in todo:
                todo[k] = i
        fresh = dict(zip(todo, self._encode_images(images[list(todo.values())]))) if todo else {}
        self.cache_hits += len(images) - len(todo)
        rows = []
        for k in keys:
            v = fresh.get(k)
            if v is None:
                v = self._image_cache[k]
                self._image_cache.move_to_end(k)
            rows.append(v)
        self._image_cache.update(fresh)
        while len(self._image_cache) > self.cache_size:
            self._image_cache.popitem(last=False)
        return np.stack(rows)

    # ----------------------------------------------------------------- text

    @torch.inference_mode()
    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """List of strings -> (N, D) float32 unit vectors (cached per string)."""
        if isinstance(texts, str):
            raise ValueError("texts must be a list of strings, not a single string")
        missing = [t for t in dict.fromkeys(texts) if t not in self._text_cache]
        if missing:
            tokens = self.tokenize(missing).to(self.device)
            feats = self.model.encode_text(tokens, normalize=True).float().cpu().numpy()
            self._text_cache.update(zip(missing, feats))
        return np.stack([self._text_cache[t] for t in texts]).astype(np.float32)

    def embed_text(self, text: str) -> np.ndarray:
        """One string -> (D,) unit vector."""
        return self.embed_texts([text])[0]
