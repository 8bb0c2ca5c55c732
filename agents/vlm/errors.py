"""The errors a VLM call raises, in a module of their own so that code which only catches them (the
app, the failure report) does not import the HTTP client's dependencies."""

from __future__ import annotations

from typing import Any


class VLMError(RuntimeError):
    """Base class of the errors the VLM client raises.

    ``latency_s`` and ``attempts`` say what the failed call cost, so a failure is never counted as free.
    """

    def __init__(self, message: str, *, latency_s: float = 0.0, attempts: dict[str, int] | None = None) -> None:
        super().__init__(message)
        self.latency_s = latency_s
        self.attempts = dict(attempts or {})


class VLMUnavailableError(VLMError):
    """The model could not answer even after all retries (timeouts, 5xx, broken responses).

    The policy survives it with its default action; it is only fatal after
    ``max_consecutive_failures`` in a row or once ``max_silent_s`` passed without a reply.
    """

    def __init__(self, message: str, retries: int = 0, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retries = retries


class VLMRequestError(VLMError):
    """The server refused the request itself (bad model name, auth, 4xx): retrying cannot help."""


class VLMAuthError(VLMRequestError):
    """The server refused the credentials (401/403, or a gateway's 400 that says so)."""


class VLMModelError(VLMRequestError):
    """The server does not serve the configured model."""


class VLMBudgetError(VLMError):
    """The run spent its time budget waiting on the model (``max_total_s`` / ``max_silent_s``)."""
