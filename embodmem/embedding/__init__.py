"""The CLIP embedder: building open_clip models (``model``), embedding frames and texts with a cache
(``embedder``), the ONNX export of the image tower (``export``), the training data and trainer of the
project's own small CLIP (``frames``, ``captions``, ``train``) and its quality figures (``quality``).

Nothing is imported here, so ``import embodmem.embedding.model`` loads only what it needs.
"""
