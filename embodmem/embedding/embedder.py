"""Turn camera frames and mission texts into unit vectors with an open_clip model.

Frames are embedded once: a cache keyed by the frame's bytes (their 128-bit xxh3 hash) means an identical view (the robot
turning back to where it looked a moment ago) is never pushed through the network twice. Batches are
preprocessed with torch ops on the whole batch (:class:`FrameEncoder`) rather than PIL per image: at
64x64 that is the difference between hundreds and thousands of frames per second. Single frames, one
per agent step, go through the same graph exported to ONNX Runtime (:mod:`embodmem.embedding.export`),
which at batch 1 is several times faster than PyTorch's eager dispatch. Several frames at once (the
lockstep runner filling the cache with many worlds' frames, :meth:`ClipEmbedder.cache_frames`, or an
implant of K frames) go through a second graph that takes batches, whose rows do not depend on the
batch. Torch runs frames only where no graph was exported from the checkpoint, or on a GPU.

On a GPU (``device="auto"`` finds one, or ``"cuda"``) batches run through torch in float16
(``precision="auto"``): every frame's vector stays within the cosine tolerance
:data:`HALF_COSINE_TOLERANCE` of the float32 one and the retrieval answers agree as
``benchmarks/throughput.py`` measures (its results file).
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from embodmem.devices import is_cpu, resolve_device
from embodmem.embedding.checkpoints import DEFAULT_CHECKPOINT, DEFAULT_MODEL
from embodmem.embedding.export import load_frame_session
from embodmem.embedding.texts import PROBE_TEXT, TextTable, load_text_table

#: How single frames (the agent's hot path) are embedded: "auto" uses ONNX Runtime when a graph
#: exported from this checkpoint exists, "onnx" insists on it, "torch" never uses it.
RUNTIMES = ("auto", "onnx", "torch")
#: Frame batches' arithmetic: "auto" is float16 on CUDA and float32 elsewhere.
PRECISIONS = ("auto", "fp32", "fp16")
HALF_COSINE_TOLERANCE = 1e-3
"""float16 frame vectors lie within this cosine distance of the float32 ones (1 - cosine)."""


class ClipEmbedder:
    """Batched, cached CLIP embeddings of images (uint8 RGB) and texts.

    On the CPU, with the graphs and the text table exported from the checkpoint (the project's own
    ship with it), frames run through ONNX Runtime and the project's texts come from the table
    (:mod:`embodmem.embedding.texts`): torch and open_clip are imported only when something else is
    asked for (a text the table lacks, a frame no graph takes), and give the same vectors then.

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
        runtime: str = "auto",
        precision: str = "auto",
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size} must be >= 1")
        if cache_size < 0:
            raise ValueError(f"cache_size={cache_size} must be >= 0")
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime={runtime!r} is not one of {', '.join(RUNTIMES)}")
        if precision not in PRECISIONS:
            raise ValueError(f"precision={precision!r} is not one of {', '.join(PRECISIONS)}")
        self.model_name = model_name
        self.pretrained = str(pretrained) if pretrained else None
        self.device = resolve_device(device)
        """The torch device's name (``cpu``, ``cuda:0`` ...)."""
        self.on_cpu = is_cpu(self.device)
        self.half = precision == "fp16" or (precision == "auto" and self.device.startswith("cuda"))
        """Frame batches through torch in float16 (autocast); texts stay float32."""
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.runtime = runtime
        self.threads = threads or 1
        self._torch_threads = threads
        self._model: Any = None  # the open_clip model, its frame encoder and tokenizer, once built
        self._encoder: Any = None
        self._tokenize: Any = None
        self._sessions: dict[tuple[int, int, bool], object] = {}  # (H, W, batched) -> ONNX Runtime session or None
        self._image_cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._text_cache: dict[str, np.ndarray] = {}
        self._table: TextTable | None = None
        if self.on_cpu and runtime != "torch" and self.pretrained and Path(self.pretrained).is_file():
            self._table = load_text_table(model_name, self.pretrained)
        if self._table is None:
            self._build()  # torch will be needed: build now, so that a bad model or device is refused at once
        self.dim = self._table.dim if self._table is not None else int(self.embed_texts([PROBE_TEXT]).shape[1])
        self.cache_hits = 0
        self.frames_embedded = 0

    def _build(self) -> None:
        """Import torch and open_clip and build the model, its frame encoder and tokenizer."""
        import torch

        from embodmem.embedding.model import FrameEncoder, create, tokenizer

        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device={self.device!r} requested but CUDA is not available")
        self.device = str(torch.device(self.device))
        if self._torch_threads:
            torch.set_num_threads(self._torch_threads)
        self._model = create(self.model_name, self.pretrained, device=self.device)
        self._encoder = FrameEncoder(self._model.visual).to(self.device).eval()
        self._tokenize = tokenizer(self.model_name)

    @property
    def model(self) -> Any:
        """The open_clip model (built on first use when the embedder started without it)."""
        if self._model is None:
            self._build()
        return self._model

    @property
    def encoder(self) -> Any:
        """The :class:`~embodmem.embedding.model.FrameEncoder` that torch runs frames through."""
        if self._encoder is None:
            self._build()
        return self._encoder

    @property
    def tokenize(self) -> Callable[[list[str]], Any]:
        """open_clip's tokenizer for the model (strings -> a tensor of token ids)."""
        if self._tokenize is None:
            self._build()
        return self._tokenize

    @property
    def image_size(self) -> int:
        """The image tower's input side in pixels (frames of other sizes are resized to it)."""
        return int(self.encoder.image_size)

    @property
    def logit_scale(self) -> float:
        """The model's learnt softmax temperature (CLIP's ``logit_scale.exp()``): recognisers score with it."""
        if self._table is not None:
            return self._table.logit_scale
        return float(self.model.logit_scale.detach().exp())

    # ----------------------------------------------------------------- images

    def _frame_session(self, height: int, width: int, batched: bool = False) -> Any:
        """The ONNX Runtime session for single frames of this size (``batched``: for batches), or None
        (then torch runs them).

        Only on CPU, only for a graph exported from this very checkpoint (its sha256 is checked).
        """
        key = (height, width, batched)
        if key not in self._sessions:
            session = None
            if self.runtime != "torch" and self.on_cpu and self.pretrained and height == width:
                session = (
                    load_frame_session(self.pretrained, height, self.threads, batched)
                    if Path(self.pretrained).is_file()
                    else None
                )
            if session is None and self.runtime == "onnx" and not batched:
                raise ValueError(
                    f"runtime='onnx' but no ONNX graph for {self.pretrained!r} at {height}x{width} px; "
                    "export one with python -m embodmem.embedding.export"
                )
            self._sessions[key] = session
        return self._sessions[key]

    def _encode_images(self, images: np.ndarray) -> np.ndarray:
        """What :meth:`embed_images` runs: one frame through the one-frame graph, several through the
        batch graph (:meth:`_encode_batch`), so that on the CPU a frame's vector is the same whether it
        came in a batch of 2 or of 64."""
        return self._encode_one(images) if len(images) == 1 else self._encode_batch(images)

    def _encode_one(self, images: np.ndarray) -> np.ndarray:
        """One frame through the one-frame graph; through torch where none was exported from this checkpoint."""
        session = self._frame_session(*images.shape[1:3])
        if session is None:
            return self._encode_torch(images)
        self.frames_embedded += 1
        return session.run(None, {"frame": np.ascontiguousarray(images)})[0]

    def _encode_torch(self, images: np.ndarray) -> np.ndarray:
        """The frames through torch, :attr:`batch_size` at a time (in float16 when :attr:`half`)."""
        import torch

        self.frames_embedded += len(images)
        encoder = self.encoder
        out = []
        with torch.inference_mode():
            for i in range(0, len(images), self.batch_size):
                batch = torch.from_numpy(np.ascontiguousarray(images[i : i + self.batch_size])).to(self.device)
                with self._precision():
                    out.append(encoder(batch).float().cpu().numpy())
        return np.concatenate(out).astype(np.float32)

    def _precision(self) -> contextlib.AbstractContextManager[object]:
        """float16 autocast when :attr:`half`, else nothing."""
        if self.half:
            import torch

            return torch.autocast(self.device.split(":")[0], dtype=torch.float16)
        return contextlib.nullcontext()

    def _encode_batch(self, images: np.ndarray) -> np.ndarray:
        """The frames through the batch graph, :attr:`batch_size` at a time, when one was exported from
        this checkpoint (its rows do not depend on what else is in the batch); else through torch."""
        session = self._frame_session(images.shape[1], images.shape[2], batched=True)
        if session is None:
            return self._encode_one(images) if len(images) == 1 else self._encode_torch(images)
        self.frames_embedded += len(images)
        chunks = [images[i : i + self.batch_size] for i in range(0, len(images), self.batch_size)]
        return np.concatenate([session.run(None, {"frame": np.ascontiguousarray(c)})[0] for c in chunks])

    def embed_images(self, images: np.ndarray) -> np.ndarray:
        """(N, H, W, 3) uint8 RGB -> (N, D) float32 unit vectors; repeated frames come from the cache."""
        return self._cached(images, self._encode_images)

    def cache_frames(self, images: np.ndarray) -> None:
        """Embed the frames of ``images`` not in the cache yet, in one pass, and keep them there: the
        one-frame :meth:`embed_images` calls that follow find them (the lockstep runner,
        :mod:`embodmem.lockstep`). Even one frame goes through the batch graph here (:meth:`_encode_batch`)."""
        if self.cache_size:
            self._cached(images, self._encode_batch)

    def _cached(self, images: np.ndarray, encode: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """``encode`` the distinct frames of ``images`` that are not in the cache; all rows, cached."""
        images = np.asarray(images)
        if images.ndim == 3:
            images = images[None]
        if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8:
            raise ValueError(f"images must be (N, H, W, 3) uint8, got shape {images.shape} dtype {images.dtype}")
        if self.cache_size == 0:
            return encode(images)
        if len(images) == 1:  # the agents' one frame per step, which the lockstep pass has cached
            key = xxhash.xxh3_128_digest(np.ascontiguousarray(images[0]).data)
            hit = self._image_cache.get(key)
            if hit is not None:
                self._image_cache.move_to_end(key)
                self.cache_hits += 1
                return hit[None].copy()
        keys = [xxhash.xxh3_128_digest(np.ascontiguousarray(img).data) for img in images]
        todo: dict[bytes, int] = {}  # distinct uncached frames -> first index in the batch
        for i, k in enumerate(keys):
            if k not in self._image_cache and k not in todo:
                todo[k] = i
        fresh = dict(zip(todo, encode(images[list(todo.values())]))) if todo else {}
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

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """List of strings -> (N, D) float32 unit vectors (cached per string): from the text table
        when it holds the string, else through the text tower, one string at a time
        (:func:`~embodmem.embedding.model.encode_text`), so that a string's vector never depends on
        what the process embedded before."""
        if isinstance(texts, str):
            raise ValueError("texts must be a list of strings, not a single string")
        for text in dict.fromkeys(texts):
            if text not in self._text_cache:
                stored = self._table.vectors.get(text) if self._table is not None else None
                self._text_cache[text] = stored if stored is not None else self._encode_text(text)
        return np.stack([self._text_cache[t] for t in texts]).astype(np.float32)

    def _encode_text(self, text: str) -> np.ndarray:
        from embodmem.embedding.model import encode_text

        model, tokenize = self.model, self.tokenize
        return encode_text(model, tokenize([text]).to(self.device))

    def embed_text(self, text: str) -> np.ndarray:
        """One string -> (D,) unit vector."""
        return self.embed_texts([text])[0]
