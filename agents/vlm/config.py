"""``VLMConfig``: every knob of the VLM policy and its client, validated once at start.

A misspelt mode or a negative timeout should fail before the first step of a sweep, not after an
hour of fallback actions, so :meth:`VLMConfig.validate` runs in ``__post_init__`` and every error
names the offending field and its allowed values.

Example:
    >>> cfg = VLMConfig(mode="high", model="Qwen/Qwen2.5-VL-7B-Instruct")
    >>> cfg.resolved_default_action()
    'explore'
    >>> VLMConfig.from_dict({"mode": "low", "timeout_s": 5}).timeout_s
    5.0
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from embodmem.envs.spec import ACTION_NAMES

MODES = ("low", "high")
HIGH_LEVEL_ACTIONS = ("goto_node", "explore", "stop")
IMAGE_FORMATS = ("png", "jpeg")
IMAGE_DETAILS = ("auto", "low", "high")
VIEW_KEYS = ("image", "image_left", "image_right", "image_back")


@dataclass
class VLMConfig:
    """Configuration of :class:`embodmem.agents.vlm.policy.VLMPolicy` (Hydra: ``agent.vlm``, used when ``agent.name=vlm``)."""

    mode: str = "low"
    """``low``: the VLM picks one primitive action per step. ``high``: it picks a skill (go to memory
    node N, explore the nearest frontier, stop) that the Navigator runs over many steps, so the model
    is called far less often."""

    base_url: str = "http://localhost:8000/v1"
    """OpenAI-compatible endpoint (vLLM default port 8000, Ollama 11434, hosted APIs)."""

    model: str = "Qwen/Qwen2.5-VL-7B-Instruct"
    """Model name as the server knows it (``--served-model-name`` for vLLM, the tag for Ollama)."""

    api_key_env: str | None = None
    """NAME of the environment variable holding the API key; never the key itself, so no key lands
    in a committed or logged config. ``None``: a placeholder key, fine for local servers."""

    timeout_s: float = 60.0
    """Seconds one HTTP request may take before it is abandoned and retried."""

    max_retries: int = 3
    """Extra attempts after a timeout, connection error, 429, 5xx or unreadable response."""

    call_deadline_s: float | None = None
    """Seconds one call may take in all, retries and backoff included; each attempt gets at most
    what is left. ``None``: every attempt's full ``timeout_s`` plus the backoffs between them."""

    max_silent_s: float | None = None
    """The run stops (one line) once its calls have waited this many seconds in a row without any
    reply: a server that accepts and never answers ends the run in about this long, not after
    ``max_consecutive_failures`` full calls. ``None``: twice the call deadline."""

    max_total_s: float | None = None
    """Budget of the whole run's waiting on the model (all calls, answered or not); the run stops
    with one line when it is spent. ``None``: no budget."""

    max_reply_bytes: int = 4 * 2**20
    """Largest reply body read (bytes); a longer one is cut off, counted as an ``oversize`` attempt and
    a format error, and retried like an unreadable reply. A chat completion is a few kB."""

    check_endpoint: bool = True
    """Before any work, list the server's models (short timeout): an unreachable server, a refused
    key or a model the server does not list stops the run at once with one line."""

    backoff_base_s: float = 1.0
    """Delay before the first retry; doubles each retry (exponential backoff)."""

    backoff_max_s: float = 30.0
    """Upper bound of one backoff delay."""

    jitter: float = 0.1
    """Random extra delay as a fraction of the backoff (seeded), so parallel runs do not retry in step."""

    seed: int | None = 0
    """Seeds the jitter RNG and, when not ``None``, is sent as the request ``seed`` (and enters the
    cache key, so runs with different seeds do not share sampled replies)."""

    temperature: float = 0.0
    """Sampling temperature; 0 makes replies (near) deterministic."""

    max_tokens: int = 512
    """Upper bound on reply tokens; the reasoning field needs room, the action itself is short."""

    structured_output: bool = True
    """Ask for JSON-schema structured output (``response_format``). Servers that reject it get plain
    prompting from then on; the tolerant parser handles either."""

    extra_body: Any = None
    """Extra server-specific request fields, a mapping (e.g. vLLM ``top_k``, Ollama ``options``), or
    ``None``. (Typed ``Any`` for OmegaConf: it cannot merge a mapping into an ``Optional[dict]`` that is
    ``None``, so ``agent.vlm.extra_body={top_k:5}`` would fail to compose.)"""

    image_format: str = "png"
    """How frames are encoded into data URLs: ``png`` (lossless) or ``jpeg`` (smaller requests)."""

    jpeg_quality: int = 90
    """JPEG quality 1-100 when ``image_format`` is ``jpeg``."""

    image_size: int | None = None
    """Resize every image to this square side before sending (``None``: as observed). Small
    simulator frames are often too small for a VLM's vision encoder."""

    image_detail: str | None = None
    """``detail`` of each ``image_url`` part (``auto``/``low``/``high``; OpenAI cost control).
    ``None`` omits it, which every server accepts."""

    views: list[str] = field(default_factory=lambda: list(VIEW_KEYS))
    """Observation images to send, in order; those absent from an observation are skipped."""

    include_sonar: bool = True
    """Add the sonar ranges as a line of text (obstacle distances the camera may not show in fog)."""

    memory_k: int = 3
    """How many memory frames (retrieved with the mission text) go into each prompt; 0 disables."""

    memory_thumbnails: bool = True
    """Send the retrieved frames' thumbnails as images (otherwise their node ids and distances only)."""

    include_map_summary: bool = True
    """Add ``Navigator.map_summary()`` to the prompt when a navigator is present."""

    history_len: int = 5
    """How many previous decisions are listed in the prompt (helps a stateless model avoid loops)."""

    default_action: str | None = None
    """Action taken when a reply is invalid or the model is unreachable. ``None``: ``turn_left`` in
    low mode, ``explore`` in high mode."""

    low_level_actions: list[str] = field(default_factory=lambda: ["turn_left", "turn_right", "forward", "stop"])
    """Primitive actions offered in low mode (names from ``embodmem.envs.spec.Action``, lower case)."""

    max_skill_steps: int = 30
    """High mode: the VLM is asked again after this many steps of one skill even if it is not done."""

    max_consecutive_failures: int = 10
    """Raise after this many calls in a row failed even after retries, counted across tasks (a dead
    server should stop the run, not fill it with default actions). 0 never raises."""

    cache_dir: str | None = None
    """Directory of the reply cache (one JSON file per request hash); a re-run or replay then makes no
    request. ``None`` disables the cache."""

    cache_max_bytes: int = 256 * 2**20
    """Upper bound of the reply cache on disk (bytes); once reached, new replies are not stored (said
    once). Only replies the client accepted are stored (UTF-8 JSON completions within
``max_reply_bytes``), so no entry is larger than that."""

    system_prompt: str | None = None
    """Replace the built-in system prompt (the action list and JSON format are still appended)."""

    def __post_init__(self) -> None:
        self.views = list(self.views)
        self.low_level_actions = [str(a) for a in self.low_level_actions]
        if isinstance(self.extra_body, Mapping):
            self.extra_body = {str(k): v for k, v in self.extra_body.items()}
        self.timeout_s = float(self.timeout_s)
        for name in ("call_deadline_s", "max_silent_s", "max_total_s"):
            value = getattr(self, name)
            if isinstance(value, int) and not isinstance(value, bool):
                setattr(self, name, float(value))
        self.backoff_base_s = float(self.backoff_base_s)
        self.backoff_max_s = float(self.backoff_max_s)
        self.jitter = float(self.jitter)
        self.temperature = float(self.temperature)
        self.validate()

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> VLMConfig:
        """Build from a plain mapping or an OmegaConf ``DictConfig``; unknown keys are an error.

        Raises:
            ValueError: naming the unknown keys and listing the known ones.
        """
        try:  # a DictConfig: resolve interpolations and turn ListConfig into list
            from omegaconf import DictConfig, OmegaConf

            if isinstance(values, DictConfig):
                values = OmegaConf.to_container(values, resolve=True)  # type: ignore[assignment]
        except ImportError:  # pragma: no cover - omegaconf is a dependency
            pass
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"VLMConfig: unknown key(s) {unknown}; known keys: {sorted(known)}")
        return cls(**dict(values))

    def resolved_default_action(self) -> str:
        """The fallback action for this mode (``default_action`` or the mode's own default)."""
        if self.default_action is not None:
            return self.default_action
        return "explore" if self.mode == "high" else "turn_left"

    def resolved_call_deadline_s(self) -> float:
        """Seconds one call may take in all: ``call_deadline_s``, or every attempt's full timeout plus
        the longest backoffs between them.

        >>> VLMConfig(timeout_s=2, max_retries=1, backoff_base_s=1, jitter=0.1).resolved_call_deadline_s()
        5.1
        """
        if self.call_deadline_s is not None:
            return self.call_deadline_s
        backoffs = sum(min(self.backoff_max_s, self.backoff_base_s * 2**r) for r in range(self.max_retries))
        return round(self.timeout_s * (self.max_retries + 1) + backoffs * (1 + self.jitter), 6)

    def resolved_max_silent_s(self) -> float:
        """Seconds of waiting in a row without a reply after which the run stops.

        >>> VLMConfig(timeout_s=2, max_retries=1, backoff_base_s=1, jitter=0.1).resolved_max_silent_s()
        10.2
        """
        return self.max_silent_s if self.max_silent_s is not None else 2 * self.resolved_call_deadline_s()

    def validate(self) -> None:
        """Check every field; raise ``ValueError`` naming the field, its value and what is allowed."""

        def bad(name: str, allowed: str) -> ValueError:
            return ValueError(f"VLMConfig.{name}={getattr(self, name)!r} is invalid: {allowed}")

        if self.mode not in MODES:
            raise bad("mode", f"must be one of {list(MODES)}")
        if not isinstance(self.base_url, str) or not self.base_url.startswith(("http://", "https://")):
            raise bad("base_url", "must be an http:// or https:// URL")
        if not isinstance(self.model, str) or not self.model.strip():
            raise bad("model", "must be a non-empty model name")
        if self.api_key_env is not None and (
            not isinstance(self.api_key_env, str) or not self.api_key_env.strip() or "=" in self.api_key_env
        ):
            raise bad("api_key_env", "must be the NAME of an environment variable (or null), not a key")
        if self.api_key_env is not None and self.api_key_env.startswith("sk-"):
            raise bad("api_key_env", "looks like an API key; put the key in an environment variable and name it here")
        if not self.timeout_s > 0:
            raise bad("timeout_s", "must be > 0 seconds")
        if not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise bad("max_retries", "must be an integer >= 0")
        for name in ("call_deadline_s", "max_silent_s", "max_total_s"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, float) or not value > 0):
                raise bad(name, "must be a number of seconds > 0, or null")
        if (
            not isinstance(self.max_reply_bytes, int)
            or isinstance(self.max_reply_bytes, bool)
            or self.max_reply_bytes < 1024
        ):
            raise bad("max_reply_bytes", "must be an integer >= 1024 (bytes)")
        if (
            not isinstance(self.cache_max_bytes, int)
            or isinstance(self.cache_max_bytes, bool)
            or self.cache_max_bytes < 0
        ):
            raise bad("cache_max_bytes", "must be an integer >= 0 (bytes)")
        if not isinstance(self.check_endpoint, bool):
            raise bad("check_endpoint", "must be true or false")
        if self.backoff_base_s < 0:
            raise bad("backoff_base_s", "must be >= 0 seconds")
        if self.backoff_max_s < self.backoff_base_s:
            raise bad("backoff_max_s", f"must be >= backoff_base_s ({self.backoff_base_s})")
        if not 0 <= self.jitter <= 1:
            raise bad("jitter", "must be a fraction in [0, 1]")
        if self.seed is not None and not isinstance(self.seed, int):
            raise bad("seed", "must be an integer or null")
        if not 0 <= self.temperature <= 2:
            raise bad("temperature", "must be in [0, 2]")
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise bad("max_tokens", "must be an integer >= 1")
        if self.image_format not in IMAGE_FORMATS:
            raise bad("image_format", f"must be one of {list(IMAGE_FORMATS)}")
        if not isinstance(self.jpeg_quality, int) or not 1 <= self.jpeg_quality <= 100:
            raise bad("jpeg_quality", "must be an integer in [1, 100]")
        if self.image_size is not None and (not isinstance(self.image_size, int) or self.image_size < 8):
            raise bad("image_size", "must be an integer >= 8 or null")
        if self.image_detail is not None and self.image_detail not in IMAGE_DETAILS:
            raise bad("image_detail", f"must be null or one of {list(IMAGE_DETAILS)}")
        unknown_views = [v for v in self.views if v not in VIEW_KEYS]
        if unknown_views or not self.views:
            raise bad("views", f"must be a non-empty list drawn from {list(VIEW_KEYS)}")
        if not isinstance(self.memory_k, int) or self.memory_k < 0:
            raise bad("memory_k", "must be an integer >= 0")
        if not isinstance(self.history_len, int) or self.history_len < 0:
            raise bad("history_len", "must be an integer >= 0")
        legal_low = sorted(ACTION_NAMES.values())
        bad_low = [a for a in self.low_level_actions if a not in legal_low]
        if bad_low or not self.low_level_actions:
            raise bad("low_level_actions", f"must be a non-empty list drawn from {legal_low}")
        if len(set(self.low_level_actions)) != len(self.low_level_actions):
            raise bad("low_level_actions", "must not repeat an action")
        if self.mode == "low":
            if self.resolved_default_action() not in self.low_level_actions:
                raise bad("default_action", f"in low mode must be one of {self.low_level_actions}")
        elif self.resolved_default_action() not in ("explore", "stop"):
            raise bad("default_action", "in high mode must be 'explore' or 'stop' (goto_node needs a node)")
        if not isinstance(self.max_skill_steps, int) or self.max_skill_steps < 1:
            raise bad("max_skill_steps", "must be an integer >= 1")
        if not isinstance(self.max_consecutive_failures, int) or self.max_consecutive_failures < 0:
            raise bad("max_consecutive_failures", "must be an integer >= 0 (0 never raises)")
        if self.extra_body is not None and not isinstance(self.extra_body, dict):
            raise bad("extra_body", "must be a mapping of request fields, or null")
        if self.cache_dir is not None and (not isinstance(self.cache_dir, str) or not self.cache_dir):
            raise bad("cache_dir", "must be a directory path or null")
