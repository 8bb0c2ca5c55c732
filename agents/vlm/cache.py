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
    >>> folder = tempfile.TemporaryDirectory()
    >>> cache = ResponseCache(folder.name)
    >>> request = CachedRequest(identity={"backend": "callable", "model": "m"},
    ...                         messages=[{"role": "user", "content": "hi"}], schema=None)
    >>> key = cache.key(request)
    >>> cache.get(key) is None, cache.misses
    (True, 1)
    >>> _ = cache.put(key, CacheEntry("hello"))
    >>> cache.get(key).text, cache.hits
    ('hello', 1)
    >>> small = ResponseCache(folder.name + "/small", max_bytes=10)
    >>> small.put(small.key(request), CacheEntry("too long for ten bytes")) is None, small.skipped
    (True, 1)
    >>> folder.cleanup()
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from embodmem.agents.vlm.backend import BackendIdentity, ChatBackend, Completion, Messages, ReplySchema
from embodmem.atomic import atomic_write_json

log = logging.getLogger(__name__)

CACHE_FORMAT = 1
"""Bumped when the key recipe or the entry layout changes, so old entries are never misread."""


def canonical_json(obj: object) -> str:
    """Serialise ``obj`` deterministically: sorted keys, compact separators, UTF-8 kept."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class CachedRequest(TypedDict):
    """What a reply is keyed by: the backend's identity, the messages (images included) and the schema."""

    identity: BackendIdentity
    messages: Messages
    schema: ReplySchema | None


@dataclass(frozen=True)
class CacheEntry:
    """One stored reply (the file also holds its ``key``, written last)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str | None = None
    """The backend's model name, for a person reading the cache."""
    created: float = 0.0
    """Unix time the reply was stored."""

    def to_json(self, key: str) -> dict[str, str | int | float | None]:
        """The file's JSON object: the fields in order, then ``key``."""
        return {
            "text": self.text,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "model": self.model,
            "created": self.created,
            "key": key,
        }

    @classmethod
    def from_json(cls, obj: object, key: str) -> CacheEntry:
        """The entry in a file's JSON ``obj`` stored under ``key``.

        Raises:
            ValueError: one line naming the field, its value and what is allowed.
        """
        if not isinstance(obj, dict):
            raise ValueError(f"a cache entry is a JSON object, got {type(obj).__name__}")
        if obj.get("key") != key:
            raise ValueError(f"field key is {str(obj.get('key'))[:70]!r}, expected the entry's own key {key!r}")

        def count(name: str) -> int:
            value = obj.get(name, 0)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"field {name} is {value!r}, expected an integer >= 0")
            return value

        text, model, created = obj.get("text"), obj.get("model"), obj.get("created", 0.0)
        if not isinstance(text, str):
            raise ValueError(f"field text is {str(text)[:60]!r}, expected a string")
        if model is not None and not isinstance(model, str):
            raise ValueError(f"field model is {model!r}, expected a string or null")
        if not isinstance(created, (int, float)) or isinstance(created, bool):
            raise ValueError(f"field created is {created!r}, expected a number (Unix time)")
        return cls(text, count("prompt_tokens"), count("completion_tokens"), model, float(created))


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
    def key(request: CachedRequest) -> str:
        """The sha256 hex digest of the canonical form of ``request`` (plus the cache format)."""
        payload = canonical_json({"cache_format": CACHE_FORMAT, "request": request})
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def path(self, key: str) -> Path:
        """Where the entry for ``key`` lives (sharded so no directory grows huge)."""
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> CacheEntry | None:
        """The stored entry, or ``None`` (a corrupt entry counts as a miss and is overwritten later)."""
        path = self.path(key)
        try:
            entry = CacheEntry.from_json(json.loads(path.read_text(encoding="utf-8")), key)
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            self.misses += 1
            return None
        except ValueError as err:
            log.debug("VLM cache: %s is not a usable entry (%s); counted as a miss", path, err)
            self.misses += 1
            return None
        self.hits += 1
        return entry

    def put(self, key: str, entry: CacheEntry) -> Path | None:
        """Store ``entry`` for ``key``, atomically; ``None`` when over ``max_bytes``."""
        data = entry.to_json(key)
        size = len(canonical_json(data).encode("utf-8")) + 1
        if self.max_bytes is not None and self.bytes + size > self.max_bytes:
            self.skipped += 1
            return None
        self.bytes += size
        return atomic_write_json(self.path(key), data, indent=None)

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("*/*.json"))


def cached_complete(
    backend: ChatBackend, cache: ResponseCache | None, messages: Messages, schema: ReplySchema | None
) -> Completion:
    """``backend``'s answer to ``messages``, through ``cache`` when one is given (the VLM policy and
    the EQA answerer share this, so both key and store replies the same way)."""
    if cache is None:
        return backend.complete(messages, schema)
    identity = backend.identity()
    key = cache.key(CachedRequest(identity=identity, messages=messages, schema=schema))
    entry = cache.get(key)
    if entry is not None:
        return Completion(text=entry.text, cached=True)
    completion = backend.complete(messages, schema)
    # Only replies the client accepted get here (UTF-8, JSON, a completion, within max_reply_bytes):
    # those are stored, unusable actions included, so a replay sees exactly what the run saw.
    stored = cache.put(
        key,
        CacheEntry(
            completion.text, completion.prompt_tokens, completion.completion_tokens, identity["model"], time.time()
        ),
    )
    if stored is None and cache.skipped == 1:
        log.warning(
            "VLM: the reply cache %s reached its byte bound (agent.vlm.cache_max_bytes=%d); further replies are not cached",
            cache.root,
            cache.max_bytes,
        )
    return completion
