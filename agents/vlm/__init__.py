"""Vision-language-model policies: a VLM (behind an OpenAI-compatible server or a Python callable)
chooses the actions, with the agent's memory in its prompt.

Modules, one job each: ``config`` (VLMConfig), ``client`` (HTTP chat client with counted retries),
``backend`` (the transport protocol and the callable transport), ``cache`` (disk cache of replies),
``images`` (frames <-> data URLs), ``memory`` (what is read from memory), ``prompt`` (messages and
reply schema), ``parsing`` (tolerant reply parser), ``policy`` (VLMPolicy, CallablePolicy).

The policy classes are imported lazily so that ``import agents.vlm`` stays light.
"""

from __future__ import annotations

from typing import Any

from agents.vlm.config import VLMConfig

__all__ = [
    "CallablePolicy", "ChatBackend", "ChatClient", "Choice", "Completion", "PromptBuilder",
    "ResponseCache", "VLMConfig", "VLMError", "VLMPolicy", "VLMRequestError", "VLMUnavailableError",
    "parse_reply",
]

_LAZY = {
    "CallablePolicy": "agents.vlm.policy", "VLMPolicy": "agents.vlm.policy",
    "ChatClient": "agents.vlm.client",
    "ChatBackend": "agents.vlm.backend", "Completion": "agents.vlm.backend", "VLMError": "agents.vlm.backend",
    "VLMRequestError": "agents.vlm.backend", "VLMUnavailableError": "agents.vlm.backend",
    "ResponseCache": "agents.vlm.cache", "PromptBuilder": "agents.vlm.prompt",
    "Choice": "agents.vlm.parsing", "parse_reply": "agents.vlm.parsing",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agents.vlm' has no attribute {name!r}")
