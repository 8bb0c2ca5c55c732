"""What the policy needs from a model: messages in, text out, plus a few counts.

Two transports implement :class:`ChatBackend`: :class:`embodmem.agents.vlm.client.ChatClient` (an
OpenAI-compatible HTTP server) and :class:`CallableBackend` (any Python function, e.g. a local
model). The policy, prompt, parser and cache are shared, so both go through one code path.

Example:
    >>> backend = CallableBackend(lambda messages: '{"action": "stop"}', model="echo")
    >>> backend.complete([{"role": "user", "content": "hi"}]).text
    '{"action": "stop"}'
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypedDict, runtime_checkable

from openai.types.chat import ChatCompletionMessageParam
from pydantic import JsonValue

Messages = list[ChatCompletionMessageParam]
"""OpenAI chat messages (the ``openai`` package's own types); user content is a list of ``text`` /
``image_url`` parts."""


class _PropertyType(TypedDict):
    type: str | list[str]


class PropertySchema(_PropertyType, total=False):
    """The JSON schema of one reply field: its JSON type(s) and, for a choice, the allowed values."""

    enum: list[str]


class ReplySchema(TypedDict):
    """The JSON schema a reply must follow: one object with exactly these fields, all required (as
    strict structured output demands). Sent as ``response_format`` and part of the cache key."""

    type: Literal["object"]
    properties: dict[str, PropertySchema]
    required: list[str]
    additionalProperties: bool


class _BackendName(TypedDict):
    backend: str
    """The transport: ``openai-chat`` or ``callable``."""
    model: str


class BackendIdentity(_BackendName, total=False):
    """Everything besides the messages and schema that determines a backend's reply; a backend
    names only what it has (the disk cache's key hashes exactly these keys)."""

    temperature: float
    max_tokens: int
    seed: int | None
    extra_body: JsonValue
    """``agent.vlm.extra_body``: opaque server-specific JSON, sent as is."""


ATTEMPT_OUTCOMES = ("ok", "5xx", "429", "timeout", "connection", "malformed", "oversize", "redirect")
"""How one HTTP attempt ended; counted per episode as ``vlm_attempts_<outcome>``. ``ok``: a usable
reply; ``5xx`` (and 408/409): a server error that was retried; ``429``: rate limited; ``timeout``: no
answer within the attempt's wall-clock time (however slowly the server sent); ``connection``: refused
or dropped; ``malformed``: a 200 whose body is not a completion (not UTF-8, not JSON, no choices);
``oversize``: a body over ``max_reply_bytes`` (``malformed`` and ``oversize`` also count as format
errors); ``redirect``: a 3xx, refused, not followed."""


@dataclass
class Completion:
    """One answered request.

    Attributes:
        text: the assistant message content ("" when the server sent none).
        prompt_tokens / completion_tokens: from the response's ``usage`` (0 when absent).
        retries: extra attempts this request needed.
        latency_s: wall time including retries and backoff.
        structured: whether JSON-schema structured output was in force for the answer.
        cached: answered from the disk cache without a request.
        attempts: HTTP attempts by outcome (:data:`ATTEMPT_OUTCOMES`); empty for cache hits.
        params_dropped: request parameters dropped during this call because the server rejected them.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    latency_s: float = 0.0
    structured: bool = False
    cached: bool = False
    attempts: dict[str, int] = field(default_factory=dict)
    params_dropped: list[str] = field(default_factory=list)


@runtime_checkable
class ChatBackend(Protocol):
    """A model the policy can ask."""

    def identity(self) -> BackendIdentity:
        """Everything besides the messages and schema that determines the reply (model name,
        sampling settings, seed). It goes into the cache key; endpoint URLs do not, so a replay
        against another server of the same model still hits the cache."""
        ...

    def complete(self, messages: Messages, schema: ReplySchema | None = None) -> Completion:
        """Answer ``messages``; ``schema`` is a JSON schema the reply should follow, if supported.

        Raises:
            VLMUnavailableError: transient failure that outlasted the retries.
            VLMRequestError: the request itself was refused.
        """
        ...


class CallableBackend:
    """Wrap ``fn(messages) -> str`` (a local model, a rule, a test double) as a backend.

    Exceptions raised by ``fn`` propagate: in-process they are bugs, not network weather.
    Images arrive as data URLs; :func:`embodmem.agents.vlm.images.message_images` turns them into arrays.
    """

    def __init__(self, fn: Callable[[Messages], str], model: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"CallableBackend needs a callable (messages) -> str, got {type(fn).__name__}")
        self.fn = fn
        self.model: str = model or str(getattr(fn, "__qualname__", type(fn).__name__))
        self.calls = 0

    def identity(self) -> BackendIdentity:
        return {"backend": "callable", "model": self.model}

    def complete(self, messages: Messages, schema: ReplySchema | None = None) -> Completion:
        start = time.monotonic()
        self.calls += 1
        text = self.fn(messages)
        if not isinstance(text, str):
            raise TypeError(f"the model callable {self.model!r} returned {type(text).__name__}, expected str")
        return Completion(text=text, latency_s=time.monotonic() - start, attempts={"ok": 1})
