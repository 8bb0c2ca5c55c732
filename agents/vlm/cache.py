"""A disk cache of model replies, keyed by a hash of the canonical request.

Why: a VLM call costs seconds and money, and a replay of a logged episode must see the very replies
the original run saw. The key is the sha256 of the request serialised canonically (sorted keys, no
whitespace): model identity, sampling settings, seed, the messages with their image data URLs (so the
image bytes are in the key) and the output schema. Each entry is one small JSON file, written
atomically, so parallel sweep jobs can share a cache directory without locks. The cache holds at most
``max_bytes`` on disk (counted once at start, then per entry written): past it, new entries are not
stored and counted in ``skipped``, so a server sending huge replies cannot fill the disk.

Example:
    >>> import tempfile
    >>> cache = ResponseCache(tempfile.mkdtemp())
    >>> key = cache.key({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    >>> cache.get(key) is None, cache.misses
    (True, 1)
    >>> _ = cache.put(key, {"text": "hello"})
    >>> cache.get(key)["text"], cache.hits
    ('hello', 1)
    >>> small = ResponseCache(tempfile.mkdtemp(), max_bytes=10)
    >>> small.put(small.key({"n": 1}), {"text": "too long for ten bytes"}) is None, small.skipped
    (True, 1)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from embodmem.agents.vlm.backend import ChatBackend, Completion, Messages
from embodmem.atomic import atomic_write_json

log = logging.getLogger(__name__)

CACHE_FORMAT = 1
"""Bumped when the key recipe or the entry layout changes, so old entries are never misread."""


def canonical_json(obj: Any) -> str:
    """Serialise ``obj`` deterministically: sorted keys, compact separators, UTF-8 kept."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class ResponseCache:
    """One JSON file per request under ``root/<first two hex digits>/<sha256>.json``.

    Attributes:
        hits: lookups answered from disk.
        misses: lookups that found nothing (or an unreadable entry).
        skipped: entries not stored because the cache had reached ``max_bytes``.
        bytes: bytes the cache's entries hold on disk.
    """

    def __init__(self, root: str | os.PathLike[str], max_bytes: int | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self.skipped = 0
        self.bytes = sum(p.stat().st_size for p in self.root.glob("*/*.json")) if max_bytes is not None else 0

    @staticmethod
    def key(request: dict[str, Any]) -> str:
        """The sha256 hex digest of the canonical form of ``request`` (plus the cache format)."""
        payload = canonical_json({"cache_format": CACHE_FORMAT, "request": request})
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def path(self, key: str) -> Path:
        """Where the entry for ``key`` lives (sharded so no directory grows huge)."""
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry, or ``None`` (a corrupt entry counts as a miss and is overwritten later)."""
        try:
            entry = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            self.misses += 1
            return None
        if not isinstance(entry, dict) or entry.get("key") != key:
            self.misses += 1
            return None
        self.hits += 1
        return entry

    def put(self, key: str, entry: dict[str, Any]) -> Path | None:
        """Store ``entry`` (JSON-serialisable) for ``key``, atomically; ``None`` when over ``max_bytes``."""
        data = {**entry, "key": key}
        size = len(canonical_json(data).encode("utf-8")) + 1
        if self.max_bytes is not None and self.bytes + size > self.max_bytes:
            self.skipped += 1
            return None
        self.bytes += size
        return atomic_write_json(self.path(key), data, indent=None)

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("*/*.json"))


def cached_complete(
    backend: ChatBackend, cache: ResponseCache | None, messages: Messages, schema: dict[str, Any] | None
) -> Completion:
    """``backend``'s answer to ``messages``, through ``cache`` when one is given (the VLM policy and
    the EQA answerer share this, so both key and store replies the same way)."""
    if cache is None:
        return backend.complete(messages, schema)
    key = cache.key({"identity": backend.identity(), "messages": messages, "schema": schema})
    entry = cache.get(key)
    if entry is not None:
        return Completion(text=str(entry.get("text", "")), cached=True)
    completion = backend.complete(messages, schema)
    # Only replies the client accepted get here (UTF-8, JSON, a completion, within max_reply_bytes):
    # those are stored, unusable actions included, so a replay sees exactly what the run saw.
    stored = cache.put(
        key,
        {
            "text": completion.text,
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "model": backend.identity().get("model"),
            "created": time.time(),
        },
    )
    if stored is None and cache.skipped == 1:
        log.warning(
            "VLM: the reply cache %s reached its byte bound (agent.vlm.cache_max_bytes=%d); further replies are not cached",
            cache.root,
            cache.max_bytes,
        )
    return completion
