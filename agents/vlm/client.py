"""OpenAI-compatible chat client with counted retries and structured-output fallback.

Built on the official ``openai`` package, which every OpenAI-compatible server (vLLM, Ollama,
LM Studio, hosted APIs) speaks. The package's own retries are switched off (``max_retries=0``) and
done here instead, so each retry is counted in the episode metrics and the backoff jitter comes
from a seeded RNG.

What is retried: timeouts, connection errors, HTTP 408/409/429/5xx, and 200 responses whose body
is not a readable completion. What is not: other 4xx (wrong model name, bad key), raised at once as
:class:`VLMRequestError`, except one case: a 400/422 that blames ``response_format`` switches
structured output off for the rest of the client's life and resends the request as plain prompting.

Example (needs a server):
    client = ChatClient(VLMConfig(base_url="http://localhost:8000/v1", model="Qwen/Qwen2.5-VL-7B-Instruct"))
    completion = client.complete([{"role": "user", "content": "Say hi"}])
"""

from __future__ import annotations

import json
import os
import random
import time
import warnings
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

import openai

from embodmem.agents.vlm.backend import Completion, Messages, VLMRequestError, VLMUnavailableError
from embodmem.agents.vlm.config import VLMConfig

LOCAL_API_KEY = "EMPTY"
"""Placeholder key for local servers without authentication (vLLM's documented convention)."""

_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
_RETRYABLE_STATUS = {408, 409, 429}


class MalformedResponseError(ValueError):
    """A 200 response that is not a usable completion (no choices); retried like a 5xx."""


def resolve_api_key(api_key_env: str | None, base_url: str) -> str:
    """Read the API key from the environment variable NAMED ``api_key_env``.

    ``None`` means no authentication: a placeholder is returned (with a warning when the server
    is not on this machine, since a remote server usually wants a key).

    Raises:
        ValueError: when the named variable is unset or empty.
    """
    if api_key_env is None:
        host = urlparse(base_url).hostname or ""
        if host not in _LOCAL_HOSTS and not host.startswith("127."):
            warnings.warn(
                f"VLM server {base_url} is not local but api_key_env is null; sending a placeholder key",
                stacklevel=2,
            )
        return LOCAL_API_KEY
    key = os.environ.get(api_key_env, "")
    if not key.strip():
        raise ValueError(
            f"environment variable {api_key_env!r} (VLMConfig.api_key_env) is not set or empty; "
            f"export it with the API key for {base_url}"
        )
    return key


def _mentions_response_format(err: openai.APIStatusError) -> bool:
    text = f"{err.message} {json.dumps(err.body, default=str) if err.body is not None else ''}".lower()
    return "response_format" in text or "json_schema" in text or "structured output" in text


class ChatClient:
    """Chat completions over HTTP; implements :class:`embodmem.agents.vlm.backend.ChatBackend`.

    Attributes (cumulative over the client's life; the policy keeps per-episode counts):
        calls: ``complete`` invocations.
        requests: HTTP requests sent (calls + retries + format fallbacks).
        retries: extra attempts after transient errors.
        failures: calls that failed for good (raised).
        format_fallbacks: times structured output was rejected and dropped (0 or 1).
        prompt_tokens / completion_tokens: sums of ``usage``.
        structured_supported: ``False`` once the server rejected ``response_format``.
    """

    def __init__(self, config: VLMConfig, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config
        self._sleep = sleep
        self._rng = random.Random(config.seed)
        self._client = openai.OpenAI(
            base_url=config.base_url,
            api_key=resolve_api_key(config.api_key_env, config.base_url),
            timeout=config.timeout_s,
            max_retries=0,
        )
        self.structured_supported = config.structured_output
        self.calls = 0
        self.requests = 0
        self.retries = 0
        self.failures = 0
        self.format_fallbacks = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def identity(self) -> dict[str, Any]:
        c = self.config
        return {"backend": "openai-chat", "model": c.model, "temperature": c.temperature,
                "max_tokens": c.max_tokens, "seed": c.seed, "extra_body": c.extra_body}

    def backoff_s(self, retry: int) -> float:
        """Delay before retry number ``retry`` (1-based): base * 2^(retry-1), capped, plus jitter."""
        c = self.config
        delay = min(c.backoff_max_s, c.backoff_base_s * 2 ** (retry - 1))
        return delay + self._rng.uniform(0.0, c.jitter * delay)

    def complete(self, messages: Messages, schema: dict[str, Any] | None = None) -> Completion:
        """Send ``messages`` and return the reply; see the module docstring for the error policy.

        Args:
            messages: OpenAI chat messages (images as ``image_url`` data-URL parts).
            schema: JSON schema for the reply, sent as ``response_format`` while the server accepts it.

        Raises:
            VLMUnavailableError: retries exhausted (``.retries`` says how many were made).
            VLMRequestError: a non-retryable 4xx.
        """
        self.calls += 1
        start = time.monotonic()
        retries = 0
        while True:
            structured = schema is not None and self.structured_supported
            try:
                self.requests += 1
                response = self._client.chat.completions.create(**self._request(messages, schema if structured else None))
                text, usage = self._read(response)
            except openai.APIStatusError as err:
                if structured and err.status_code in (400, 422) and _mentions_response_format(err):
                    self.structured_supported = False
                    self.format_fallbacks += 1
                    warnings.warn(
                        f"{self.config.base_url} rejected response_format ({err.message!r}); "
                        "falling back to plain prompting for the rest of this run",
                        stacklevel=2,
                    )
                    continue
                if err.status_code < 500 and err.status_code not in _RETRYABLE_STATUS:
                    self.failures += 1
                    raise VLMRequestError(
                        f"{self.config.base_url} refused the request for model {self.config.model!r}: "
                        f"HTTP {err.status_code}: {err.message}"
                    ) from err
                error: Exception = err
            except (openai.APIConnectionError, openai.APIResponseValidationError,
                    json.JSONDecodeError, MalformedResponseError) as err:
                # APITimeoutError is an APIConnectionError; JSONDecodeError is a 200 with a non-JSON body.
                error = err
            else:
                self.prompt_tokens += usage[0]
                self.completion_tokens += usage[1]
                return Completion(text=text, prompt_tokens=usage[0], completion_tokens=usage[1],
                                  retries=retries, latency_s=time.monotonic() - start, structured=structured)
            if retries >= self.config.max_retries:
                self.failures += 1
                raise VLMUnavailableError(
                    f"{self.config.base_url} gave no usable reply after {retries + 1} attempt(s); "
                    f"last error: {type(error).__name__}: {error}",
                    retries=retries,
                ) from error
            retries += 1
            self.retries += 1
            self._sleep(self.backoff_s(retries))

    def _request(self, messages: Messages, schema: dict[str, Any] | None) -> dict[str, Any]:
        c = self.config
        kwargs: dict[str, Any] = {"model": c.model, "messages": messages,
                                  "temperature": c.temperature, "max_tokens": c.max_tokens}
        if c.seed is not None:
            kwargs["seed"] = c.seed
        if schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "embodmem_action", "schema": schema, "strict": True},
            }
        if c.extra_body:
            kwargs["extra_body"] = c.extra_body
        return kwargs

    @staticmethod
    def _read(response: Any) -> tuple[str, tuple[int, int]]:
        """Content and (prompt, completion) tokens; a response without choices is malformed."""
        choices = getattr(response, "choices", None)
        if not choices:
            raise MalformedResponseError(f"response has no choices: {str(response)[:200]}")
        text = choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        tokens = (int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0))
        return text, tokens

    def close(self) -> None:
        """Close the underlying HTTP connection pool."""
        self._client.close()
