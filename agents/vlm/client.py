"""OpenAI-compatible chat client with counted retries and structured-output fallback.

Built on the official ``openai`` package, which every OpenAI-compatible server (vLLM, Ollama,
LM Studio, hosted APIs) speaks. The package's own retries are switched off (``max_retries=0``) and
done here instead, so each retry is counted in the episode metrics and the backoff jitter comes
from a seeded RNG.

What is retried: timeouts, connection errors, HTTP 408/409/429/5xx, and 200 responses whose body
is not a readable completion, with exponential backoff or the server's ``Retry-After`` when it sends
one, all within one deadline per call (``call_deadline_s``). What is not: other 4xx, raised at once:
:class:`VLMAuthError` for a refused key and :class:`VLMModelError` for an unknown model (classified
by the message as well as the status, since gateways answer both with a 400), else
:class:`VLMRequestError`. One exception: a 400/422 that names optional parameters as unsupported
(``response_format``, ``seed``, ...) drops exactly those, once each, says so in one line, and resends.

Every attempt is timed and counted by outcome (:data:`embodmem.agents.vlm.backend.ATTEMPT_OUTCOMES`),
failed ones included, and the run stops with :class:`VLMBudgetError` once its calls waited
``max_silent_s`` in a row without a reply or spent ``max_total_s`` in all.

Deadlines hold whatever the server does. ``httpx`` timeouts act per read, so a server that drips one
byte a second would never time out; each attempt therefore runs in a worker thread that the call
abandons (closing its connections) at the attempt's wall-clock deadline: ``timeout_s``, capped by the
call deadline, which is itself capped by what is left of ``max_silent_s`` and ``max_total_s``. The
body is read in chunks up to ``max_reply_bytes`` (more is an ``oversize`` attempt, a format error),
decoded as strict UTF-8 and parsed as JSON (else ``malformed``). Redirects are never followed (a POST
turned into a GET, possibly to another host): a 3xx is an ``redirect`` attempt and a one-line
:class:`VLMRequestError` naming where it pointed.

Example (needs a server):
    client = ChatClient(VLMConfig(base_url="http://localhost:8000/v1", model="Qwen/Qwen2.5-VL-7B-Instruct"))
    completion = client.complete([{"role": "user", "content": "Say hi"}])
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import json
import logging
import math
import os
import random
import re
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TypedDict, TypeVar
from urllib.parse import urlparse

import openai
from openai.types.shared_params import ResponseFormatJSONSchema
from pydantic import JsonValue

from embodmem.agents.vlm.backend import (
    BackendIdentity,
    Completion,
    Messages,
    ReplySchema,
)
from embodmem.agents.vlm.config import VLMConfig
from embodmem.agents.vlm.errors import (
    VLMAuthError,
    VLMBudgetError,
    VLMModelError,
    VLMRequestError,
    VLMUnavailableError,
)

log = logging.getLogger("embodmem.vlm")

LOCAL_API_KEY = "EMPTY"
"""Placeholder key for local servers without authentication (vLLM's documented convention)."""

_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
_RETRYABLE_STATUS = {408, 409, 429}
REQUIRED_PARAMS = ("model", "messages")
"""Never dropped, whatever a server says about them."""
_UNSUPPORTED_MARKERS = (
    "unsupported",
    "not supported",
    "does not support",
    "doesn't support",
    "unrecognized",
    "unrecognised",
    "unknown parameter",
    "unknown field",
    "unexpected keyword",
    "not allowed",
    "not permitted",
    "extra inputs",
    "extra_forbidden",
    "invalid parameter",
)
_AUTH_MARKERS = (
    "api key",
    "api_key",
    "apikey",
    "authentication",
    "unauthorized",
    "unauthorised",
    "no connected db",
    "invalid key",
    "incorrect key",
    "permission denied",
    "forbidden",
    "access denied",
    "invalid token",
    "bearer",
)
_MODEL_MARKERS = (
    "invalid model",
    "unknown model",
    "model not found",
    "no such model",
    "model_not_found",
    "does not exist",
    "not a valid model",
    "is not served",
    "no deployments",
    "not found",
)
HTTP_LOGGERS = ("httpx", "httpx2", "httpcore", "openai")
"""Libraries that log every request at INFO (Hydra's root logger shows INFO): quiet by default."""
ENDPOINT_CHECK_TIMEOUT_S = 10.0


T = TypeVar("T")


class MalformedResponseError(ValueError):
    """A 200 response that is not a usable completion (no choices, not UTF-8, not JSON); retried like a 5xx."""


class ReplyTooLargeError(ValueError):
    """A reply body longer than ``VLMConfig.max_reply_bytes``; counted as ``oversize`` (a format error)."""


class AttemptDeadlineError(TimeoutError):
    """An attempt that had no complete reply at its wall-clock deadline (the server was silent or slow)."""


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


def quiet_http_logs() -> None:
    """Raise the request loggers of httpx/openai to WARNING unless the user set their level."""
    for name in HTTP_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


def _error_text(err: openai.APIStatusError) -> str:
    body = json.dumps(err.body, default=str) if err.body is not None else ""
    return f"{err.message} {body}".lower()


def _short(err: openai.APIStatusError) -> str:
    """The server's own message, on one line and bounded."""
    message = err.message
    if isinstance(err.body, Mapping) and isinstance(err.body.get("message"), str):
        message = err.body["message"]
    return " ".join(str(message).split())[:200]


class _RequiredParams(TypedDict):
    model: str
    messages: Messages


class ChatRequest(_RequiredParams, total=False):
    """The keyword arguments of one ``chat.completions.create`` call; the optional ones go when the
    server rejected them (:func:`unsupported_params`)."""

    temperature: float
    max_tokens: int
    seed: int
    response_format: ResponseFormatJSONSchema
    extra_body: dict[str, JsonValue]
    """``agent.vlm.extra_body``: opaque server-specific JSON, merged into the body by ``openai``."""


def unsupported_params(status: int, text: str, request: ChatRequest) -> list[str]:
    """Optional request parameters that an HTTP ``status`` error with message ``text`` rejects.

    A parameter counts when the message names it (as a whole word) and says it is unsupported; a
    400/422 naming only ``response_format`` (or ``json_schema``/"structured output") is enough for it.
    ``model`` and ``messages`` are never returned.

    >>> schema = {"type": "json_schema", "json_schema": {"name": "reply"}}
    >>> req = ChatRequest(model="m", messages=[], seed=0, response_format=schema, temperature=0.0)
    >>> unsupported_params(400, "petals does not support parameters: ['response_format', 'seed'], for model=x", req)
    ['response_format', 'seed']
    >>> unsupported_params(400, "invalid model name passed in model=nope", req)
    []
    """
    if status not in (400, 422):
        return []
    text = text.lower()
    optional = [k for k in request if k not in REQUIRED_PARAMS and k != "extra_body"]
    extra_body = request.get("extra_body")
    optional += [k for k in extra_body if k not in optional] if isinstance(extra_body, dict) else []
    named = [k for k in optional if re.search(rf"(?<![a-z0-9_]){re.escape(k.lower())}(?![a-z0-9_])", text)]
    if (
        "response_format" in request
        and "response_format" not in named
        and ("json_schema" in text or "structured output" in text)
    ):
        named.append("response_format")
    if not named:
        return []
    if named == ["response_format"] or any(m in text for m in _UNSUPPORTED_MARKERS):
        return sorted(named)
    return []


def classify_refusal(status: int, text: str) -> str | None:
    """``"auth"``, ``"model"`` or ``None`` for a refused request, by status and by message.

    >>> classify_refusal(400, "No connected db.")
    'auth'
    >>> classify_refusal(400, "/chat/completions: Invalid model name passed in model=nope")
    'model'
    >>> classify_refusal(400, "messages must not be empty") is None
    True
    """
    text = text.lower()
    if status in (401, 403) or any(m in text for m in _AUTH_MARKERS):
        return "auth"
    if status == 404 or ("model" in text and any(m in text for m in _MODEL_MARKERS)):
        return "model"
    return None


def retry_after_s(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, ``retry-after`` seconds or HTTP date).

    >>> retry_after_s({"retry-after": "3"}), retry_after_s({"retry-after-ms": "250"}), retry_after_s({})
    (3.0, 0.25, None)
    """
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            if name == "retry-after-ms":
                continue
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                continue
            seconds = when.timestamp() - (time.time() if now is None else now)
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None


class ChatClient:
    """Chat completions over HTTP; implements :class:`embodmem.agents.vlm.backend.ChatBackend`.

    Attributes (cumulative over the client's life; the policy keeps per-episode counts):
        calls: ``complete`` invocations.
        requests: HTTP requests sent (calls + retries + resends after dropping parameters).
        retries: extra attempts after transient errors.
        failures: calls that failed for good (raised).
        attempts: HTTP attempts by outcome.
        dropped_params: parameters dropped because the server rejected them, in order.
        waited_s: seconds spent in calls, answered or not; ``silent_s``: of those, since the last reply.
        prompt_tokens / completion_tokens: sums of ``usage``.
    """

    def __init__(self, config: VLMConfig, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config
        self._sleep = sleep
        self._rng = random.Random(config.seed)
        quiet_http_logs()
        self._api_key = resolve_api_key(config.api_key_env, config.base_url)
        self._client = self._new_client()
        self.calls = 0
        self.requests = 0
        self.retries = 0
        self.failures = 0
        self.attempts: Counter[str] = Counter()
        self.dropped_params: list[str] = []
        self.waited_s = 0.0
        self.silent_s = 0.0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def _new_client(self) -> openai.OpenAI:
        """An OpenAI client that neither retries nor follows redirects (both are decided here)."""
        c = self.config
        client = openai.OpenAI(
            base_url=c.base_url,
            api_key=self._api_key,
            timeout=c.timeout_s,
            max_retries=0,
            http_client=openai.DefaultHttpxClient(timeout=c.timeout_s, follow_redirects=False),
        )
        # the resources import lazily (0.2 s the first time): do it now, not inside an attempt's deadline
        _ = client.chat.completions.with_streaming_response, client.models.list
        return client

    def _bounded(self, work: Callable[[openai.OpenAI, threading.Event], T], deadline: float) -> T:
        """Run ``work`` in a worker thread and give up on it at ``deadline`` (monotonic seconds).

        Why a thread: socket timeouts act per read, so a server that keeps sending a byte now and then
        is never cut by them. At the deadline the worker's client is closed (its connections drop, so
        the worker ends at its next read) and replaced; ``cancel`` tells the worker to stop reading.

        Raises:
            AttemptDeadlineError: no result by ``deadline``; whatever ``work`` raised otherwise.
        """
        client = self._client
        cancel = threading.Event()
        done = threading.Event()
        values: list[T] = []
        errors: list[BaseException] = []

        def run() -> None:
            try:
                values.append(work(client, cancel))
            except BaseException as err:  # handed to the caller's thread
                errors.append(err)
            finally:
                done.set()

        worker = threading.Thread(target=run, name="embodmem-vlm-attempt", daemon=True)
        started = time.monotonic()
        worker.start()
        if not done.wait(max(0.0, deadline - started)):
            cancel.set()
            self._client = self._new_client()
            with contextlib.suppress(Exception):  # closing a client another thread uses may race; it is abandoned
                client.close()
            raise AttemptDeadlineError(f"no complete reply after {time.monotonic() - started:.1f} s (wall clock)")
        if errors:
            raise errors[0]
        return values[0]

    @property
    def structured_supported(self) -> bool:
        """Whether ``response_format`` is still sent (configured and not rejected by the server)."""
        return self.config.structured_output and "response_format" not in self.dropped_params

    @property
    def format_fallbacks(self) -> int:
        """1 once the server rejected ``response_format`` (kept for the old counter's readers)."""
        return int("response_format" in self.dropped_params)

    def identity(self) -> BackendIdentity:
        c = self.config
        return {
            "backend": "openai-chat",
            "model": c.model,
            "temperature": c.temperature,
            "max_tokens": c.max_tokens,
            "seed": c.seed,
            "extra_body": c.extra_body,
        }

    def backoff_s(self, retry: int) -> float:
        """Delay before retry number ``retry`` (1-based): base * 2^(retry-1), capped, plus jitter."""
        c = self.config
        delay = min(c.backoff_max_s, c.backoff_base_s * 2 ** (retry - 1))
        return delay + self._rng.uniform(0.0, c.jitter * delay)

    # -- before the run --------------------------------------------------------------------------

    def check_endpoint(self, timeout_s: float = ENDPOINT_CHECK_TIMEOUT_S) -> list[str]:
        """List the server's models once, with a short timeout, and check the configured one is there.

        A server without a models route (404/405) passes: the first call will tell.

        Returns:
            the model ids the server listed ([] when it has no such route).
        Raises:
            VLMUnavailableError: the server cannot be reached or answers with a server error.
            VLMAuthError / VLMModelError / VLMRequestError: refused key, unknown model, other refusal.
        """
        c = self.config
        limit = min(timeout_s, c.timeout_s)
        started = time.monotonic()
        try:
            page = self._bounded(
                lambda client, _cancel: client.with_options(timeout=limit).models.list(), time.monotonic() + limit
            )
            ids = [m.id for m in page.data]
        except AttemptDeadlineError as err:
            raise VLMUnavailableError(
                f"VLM server {c.base_url} did not answer GET /models within {limit:g} s ({err}); is it running? "
                "(agent.vlm.base_url)"
            ) from None
        except openai.APIStatusError as err:
            if 300 <= err.status_code < 400:
                raise self._redirect_error(err, "GET /models") from None
            if err.status_code in (404, 405, 501) and classify_refusal(0, _error_text(err)) is None:
                return []
            if err.status_code >= 500 or err.status_code in _RETRYABLE_STATUS:
                raise VLMUnavailableError(
                    f"VLM server {c.base_url} is not ready: GET /models answered HTTP {err.status_code}: {_short(err)}"
                ) from err
            raise self._refusal(err, "GET /models") from err
        except openai.APIConnectionError as err:
            waited = time.monotonic() - started  # what was really spent, retries included
            what = (
                f"did not answer within {min(timeout_s, c.timeout_s):g} s (gave up after {waited:.1f} s)"
                if isinstance(err, openai.APITimeoutError)
                else f"cannot be reached (gave up after {waited:.1f} s)"
            )
            raise VLMUnavailableError(
                f"VLM server {c.base_url} {what}: {err}; is it running? (agent.vlm.base_url)"
            ) from err
        except (openai.APIResponseValidationError, json.JSONDecodeError, AttributeError, TypeError) as err:
            raise VLMUnavailableError(
                f"VLM server {c.base_url} answered GET /models with an unreadable body: {err}"
            ) from err
        if ids and c.model not in ids:
            shown = ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")
            raise VLMModelError(
                f"VLM server {c.base_url} does not serve model {c.model!r} (agent.vlm.model); it lists: {shown}"
            )
        return ids

    # -- one call --------------------------------------------------------------------------------

    def complete(self, messages: Messages, schema: ReplySchema | None = None) -> Completion:
        """Send ``messages`` and return the reply; see the module docstring for the error policy.

        Args:
            messages: OpenAI chat messages (images as ``image_url`` data-URL parts).
            schema: JSON schema for the reply, sent as ``response_format`` while the server accepts it.

        Raises:
            VLMUnavailableError: retries or the call deadline exhausted (``.retries``, ``.latency_s``).
            VLMRequestError (VLMAuthError, VLMModelError): the request was refused.
            VLMBudgetError: the run's waiting budget is spent.
        """
        c = self.config
        self._check_budget()
        self.calls += 1
        start = time.monotonic()
        deadline, bound_by = self._call_deadline(start)
        attempts: Counter[str] = Counter()
        dropped: list[str] = []
        retries = 0
        while True:
            structured = schema is not None and self.structured_supported
            request = self._request(messages, schema if structured else None)
            attempt_deadline = min(deadline, time.monotonic() + c.timeout_s)
            timeout = max(0.05, attempt_deadline - time.monotonic())
            wait: float | None = None
            try:
                self.requests += 1
                text, usage = self._bounded(
                    functools.partial(self._send, request=request, timeout=timeout), attempt_deadline
                )
            except openai.APIStatusError as err:
                if 300 <= err.status_code < 400:
                    attempts["redirect"] += 1
                    self.attempts["redirect"] += 1
                    self.failures += 1
                    refusal = self._redirect_error(err, "the request")
                    refusal.latency_s, refusal.attempts = self._spent(start, answered=False), dict(attempts)
                    raise refusal from None
                names = unsupported_params(err.status_code, _error_text(err), request)
                if names:
                    self._drop(names, err)
                    dropped += names
                    continue
                if err.status_code < 500 and err.status_code not in _RETRYABLE_STATUS:
                    self.failures += 1
                    latency = self._spent(start, answered=False)
                    refusal = self._refusal(err, "the request")
                    refusal.latency_s, refusal.attempts = latency, dict(attempts)
                    raise refusal from err
                outcome = "429" if err.status_code == 429 else "5xx"
                wait = retry_after_s(err.response.headers) if err.response is not None else None
                error: Exception = err
            except (openai.APITimeoutError, AttemptDeadlineError) as err:
                outcome, error = "timeout", err
            except openai.APIConnectionError as err:
                outcome, error = "connection", err
            except ReplyTooLargeError as err:
                outcome, error = "oversize", err
            except (openai.APIResponseValidationError, json.JSONDecodeError, MalformedResponseError) as err:
                outcome, error = "malformed", err  # JSONDecodeError: a 200 with a non-JSON body
            else:
                attempts["ok"] += 1
                self.attempts["ok"] += 1
                self.prompt_tokens += usage[0]
                self.completion_tokens += usage[1]
                return Completion(
                    text=text,
                    prompt_tokens=usage[0],
                    completion_tokens=usage[1],
                    retries=retries,
                    latency_s=self._spent(start, answered=True),
                    structured=structured,
                    attempts=dict(attempts),
                    params_dropped=dropped,
                )
            attempts[outcome] += 1
            self.attempts[outcome] += 1
            delay = self.backoff_s(retries + 1) if wait is None else max(wait, 0.0)
            why = None
            if retries >= c.max_retries:
                why = f"after {retries + 1} attempt(s)"
            elif time.monotonic() + delay >= deadline:
                retry_after = f", Retry-After {wait:g} s" if wait is not None else ""
                why = f"within the {bound_by} ({retries + 1} attempt(s){retry_after})"
            if why is not None:
                self.failures += 1
                latency = self._spent(start, answered=False)
                last = f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"
                budget = self._budget_spent()
                if budget is not None:
                    raise VLMBudgetError(
                        f"{budget}; last error: {last[:160]}", latency_s=latency, attempts=dict(attempts)
                    ) from error
                raise VLMUnavailableError(
                    f"{c.base_url} gave no usable reply {why}; last error: {last}",
                    retries=retries,
                    latency_s=latency,
                    attempts=dict(attempts),
                ) from error
            retries += 1
            self.retries += 1
            log.warning(
                "VLM %s: %s, retry %d/%d in %.2f s%s (%d calls, %d failed, %.1f s waited so far)",
                c.model,
                _outcome_text(outcome, error),
                retries,
                c.max_retries,
                delay,
                " (Retry-After)" if wait is not None else "",
                self.calls,
                self.failures,
                self.waited_s + time.monotonic() - start,
            )
            self._sleep(delay)

    def _call_deadline(self, start: float) -> tuple[float, str]:
        """When a call starting at ``start`` must end, and which limit sets it: the call deadline, or what
        is left of ``max_silent_s`` (seconds in a row without a reply) or ``max_total_s``."""
        c = self.config
        limits = [
            (start + c.resolved_call_deadline_s(), f"call deadline of {c.resolved_call_deadline_s():g} s"),
            (
                start + c.resolved_max_silent_s() - self.silent_s,
                f"agent.vlm.max_silent_s={c.resolved_max_silent_s():g}",
            ),
        ]
        if c.max_total_s is not None:
            limits.append((start + c.max_total_s - self.waited_s, f"agent.vlm.max_total_s={c.max_total_s:g}"))
        return min(limits)

    def _budget_spent(self) -> str | None:
        """The one-line reason the run's waiting budget is spent, or ``None`` while it lasts."""
        c = self.config
        slack = 0.05  # a call cut at a budget's deadline ends a few ms past it
        if self.silent_s + slack >= c.resolved_max_silent_s():
            return (
                f"VLM server {c.base_url} gave no reply for {self.silent_s:.1f} s of calls in a row "
                f"(agent.vlm.max_silent_s={c.resolved_max_silent_s():g})"
            )
        if c.max_total_s is not None and self.waited_s + slack >= c.max_total_s:
            return (
                f"the run spent its VLM budget: {self.waited_s:.1f} s waited on {c.base_url} "
                f"(agent.vlm.max_total_s={c.max_total_s:g}) after {self.calls} calls"
            )
        return None

    def _send(
        self, client: openai.OpenAI, cancel: threading.Event, *, request: ChatRequest, timeout: float
    ) -> tuple[str, tuple[int, int]]:
        """One HTTP attempt (in the worker thread): the body read in chunks up to the size cap, then checked."""
        cap = self.config.max_reply_bytes
        with client.chat.completions.with_streaming_response.create(**request, timeout=timeout) as response:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > cap:
                raise ReplyTooLargeError(
                    f"the server announced a {int(declared)}-byte reply, over agent.vlm.max_reply_bytes={cap}"
                )
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                if cancel.is_set():
                    raise AttemptDeadlineError("abandoned at the deadline")
                size += len(chunk)
                if size > cap:
                    raise ReplyTooLargeError(f"the reply passed agent.vlm.max_reply_bytes={cap} bytes")
                chunks.append(chunk)
        return self._read_body(b"".join(chunks))

    # -- helpers ---------------------------------------------------------------------------------

    def _redirect_error(self, err: openai.APIStatusError, what: str) -> VLMRequestError:
        where = err.response.headers.get("location", "?") if err.response is not None else "?"
        return VLMRequestError(
            f"VLM server {self.config.base_url} answered {what} with HTTP {err.status_code}, a redirect to "
            f"{' '.join(where.split())[:200]}; redirects are not followed (a POST would become a GET, perhaps to "
            "another host): set agent.vlm.base_url to the final URL"
        )

    def _drop(self, names: list[str], err: openai.APIStatusError) -> None:
        for name in names:
            self.dropped_params.append(name)
        hint = " (agent.vlm.seed=null avoids sending it)" if "seed" in names else ""
        log.warning(
            "VLM %s: %s rejected %s (%s); dropped for the rest of this run%s",
            self.config.model,
            self.config.base_url,
            ", ".join(names),
            _short(err)[:120],
            hint,
        )

    def _refusal(self, err: openai.APIStatusError, what: str) -> VLMRequestError:
        c = self.config
        kind = classify_refusal(err.status_code, _error_text(err))
        detail = f"HTTP {err.status_code}: {_short(err)}"
        if kind == "auth":
            key = f"the key in ${c.api_key_env}" if c.api_key_env else "no key (agent.vlm.api_key_env is null)"
            return VLMAuthError(
                f"VLM server {c.base_url} refused the credentials for {what} ({detail}); "
                f"sent {key}; set agent.vlm.api_key_env to the variable holding a valid key"
            )
        if kind == "model":
            return VLMModelError(
                f"VLM server {c.base_url} does not serve model {c.model!r} (agent.vlm.model) "
                f"or has no such route ({detail})"
            )
        return VLMRequestError(f"{c.base_url} refused {what} for model {c.model!r}: {detail}")

    def _spent(self, start: float, answered: bool) -> float:
        latency = time.monotonic() - start
        self.waited_s += latency
        self.silent_s = 0.0 if answered else self.silent_s + latency
        return latency

    def _check_budget(self) -> None:
        reason = self._budget_spent()
        if reason is not None:
            raise VLMBudgetError(reason)

    def _request(self, messages: Messages, schema: ReplySchema | None) -> ChatRequest:
        """The call's keyword arguments, less the parameters the server rejected (top level and
        ``extra_body`` alike)."""
        c = self.config
        dropped = set(self.dropped_params)
        request: ChatRequest = {"model": c.model, "messages": messages}
        if "temperature" not in dropped:
            request["temperature"] = c.temperature
        if "max_tokens" not in dropped:
            request["max_tokens"] = c.max_tokens
        if c.seed is not None and "seed" not in dropped:
            request["seed"] = c.seed
        if schema is not None and "response_format" not in dropped:
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "embodmem_action", "schema": dict(schema), "strict": True},
            }
        if c.extra_body:
            request["extra_body"] = {k: v for k, v in c.extra_body.items() if k not in dropped}
        return request

    @staticmethod
    def _read_body(raw: bytes) -> tuple[str, tuple[int, int]]:
        """Content and (prompt, completion) tokens of a completion body; anything else is malformed."""
        try:
            body = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as err:
            raise MalformedResponseError(f"the reply is not valid UTF-8 ({err})") from None
        except json.JSONDecodeError as err:
            raise MalformedResponseError(f"the reply is not JSON ({err}): {raw[:80]!r}") from None
        choices = body.get("choices") if isinstance(body, dict) else None
        message = (
            choices[0].get("message")
            if isinstance(choices, list) and choices and isinstance(choices[0], dict)
            else None
        )
        if not isinstance(message, dict) or not isinstance(message.get("content"), (str, type(None))):
            raise MalformedResponseError(f"response has no choices[0].message.content: {raw[:200]!r}")
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}

        def tokens(name: str) -> int:
            value = usage.get(name)
            return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

        return message.get("content") or "", (tokens("prompt_tokens"), tokens("completion_tokens"))

    def close(self) -> None:
        """Close the underlying HTTP connection pool."""
        self._client.close()


def _outcome_text(outcome: str, error: Exception) -> str:
    if isinstance(error, openai.APIStatusError):
        return f"HTTP {error.status_code}"
    return {
        "timeout": "timed out",
        "connection": "connection failed",
        "malformed": "unreadable reply",
        "oversize": "reply over max_reply_bytes",
    }.get(outcome, outcome)
