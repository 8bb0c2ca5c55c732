"""Vision-language-model policies: a VLM (behind an OpenAI-compatible server or a Python callable)
chooses the actions, with the agent's memory in its prompt.

Modules, one job each: ``config`` (VLMConfig), ``client`` (HTTP chat client with counted retries),
``backend`` (the transport protocol and the callable transport), ``errors`` (what a failed call
raises, importable without the HTTP client), ``cache`` (disk cache of replies),
``images`` (frames <-> data URLs), ``memory`` (what is read from memory), ``prompt`` (messages and
reply schema), ``parsing`` (tolerant reply parser), ``policy`` (VLMPolicy, CallablePolicy).

The policy classes are imported lazily so that ``import embodmem.agents.vlm`` stays light.
"""

from __future__ import annotations

from embodmem.agents.vlm.config import VLMConfig
from embodmem.lazy import lazy_attributes

__all__ = [
    "CallablePolicy",
    "ChatBackend",
    "ChatClient",
    "Choice",
    "Completion",
    "PromptBuilder",
    "ResponseCache",
    "VLMConfig",
    "VLMError",
    "VLMPolicy",
    "VLMRequestError",
    "VLMUnavailableError",
    "parse_reply",
]

_LAZY = {
    "CallablePolicy": "embodmem.agents.vlm.policy",
    "VLMPolicy": "embodmem.agents.vlm.policy",
    "ChatClient": "embodmem.agents.vlm.client",
    "ChatBackend": "embodmem.agents.vlm.backend",
    "Completion": "embodmem.agents.vlm.backend",
    "VLMError": "embodmem.agents.vlm.errors",
    "VLMRequestError": "embodmem.agents.vlm.errors",
    "VLMUnavailableError": "embodmem.agents.vlm.errors",
    "ResponseCache": "embodmem.agents.vlm.cache",
    "PromptBuilder": "embodmem.agents.vlm.prompt",
    "Choice": "embodmem.agents.vlm.parsing",
    "parse_reply": "embodmem.agents.vlm.parsing",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
