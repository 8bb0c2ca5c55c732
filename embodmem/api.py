"""The public plug-in API: what your memory, policy or answerer implements, and the stock classes.

Plug one in without editing embodmem (docs/plugins.md walks through ``examples/my_memory``):

- a ``module:Class`` path in the config: ``agent.memory=my_pkg.mem:MyMemory``,
  ``agent=my_pkg.agents:make_agent``, ``experiment.variants=[memory,my_pkg.mem:MyMemory]`` (side by
  side with the stock memory), ``experiment.eqa.answerers=[frame_memory,my_pkg.qa:MyAnswerer]``;
- or an entry point of an installed package, under the groups ``embodmem.memories``,
  ``embodmem.agents`` and ``embodmem.answerers``; the name then works in those places
  (``embodmem-run --list-plugins`` lists them).

Every plug-in is imported and checked against its protocol before any episode runs (a missing method
is refused by name, exit 2); a run's rows carry the plug-in's name in every table.

The protocols name exactly what embodmem calls:

- :class:`Memory`: the frame memory an agent writes and queries (stock: :class:`AgentMemory`);
- :class:`Policy`: an agent the runner steps (stock base: :class:`Agent`; one that keeps what it saw
  between tasks also subclasses :class:`MemoryCarrier`); a VLM policy is the stock :class:`VLMPolicy`
  over your :class:`ChatBackend`, reading a :class:`QueryableMemory` and driving a :class:`Navigator`;
- :class:`AnswererProtocol`: an EQA answerer (stock base: :class:`Answerer`).

Example:
    >>> import numpy as np
    >>> memory = AgentMemory(MemoryConfig(dim=4))
    >>> isinstance(memory, Memory), missing_memory_members(AgentMemory)
    (True, [])
    >>> memory.observe(np.eye(4, dtype=np.float32)[0], FrameMeta("run", "wreck", 0, 0, 1.0, 2.0))
    0
    >>> memory.query(np.eye(4, dtype=np.float32)[0], k=1)[0].meta.x
    1.0
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from embodmem.agents.base import (
    AGENT_ATTRIBUTES,
    AGENT_METHODS,
    Agent,
    AgentTrace,
    MemoryCarrier,
    Navigator,
    Observation,
    Policy,
)
from embodmem.agents.memory_agent import MemoryAgent
from embodmem.agents.registry import BuildContext
from embodmem.agents.vlm.memory import QueryableMemory
from embodmem.envs.spec import Action, SensorSpec
from embodmem.eqa.answerers import Answer, Answerer, AnswererProtocol, FrameMemoryAnswerer
from embodmem.eqa.config import ANSWERER_METHODS
from embodmem.eqa.files import Question
from embodmem.lazy import lazy_attributes
from embodmem.memory import AgentMemory, FrameMeta, Hit, MemoryConfig, QueryFilter
from embodmem.memory.protocol import (
    MEMORY_ATTRIBUTES,
    MEMORY_METHODS,
    MEMORY_OPTIONAL_SETTINGS,
    MEMORY_STATS,
    Memory,
    MemorySettings,
    PlaceMap,
    missing_memory_members,
)
from embodmem.memory.records import ANY_RECORD

if TYPE_CHECKING:
    from embodmem.agents.vlm.backend import CallableBackend, ChatBackend
    from embodmem.agents.vlm.policy import VLMPolicy

_VLM_HOMES = {
    "CallableBackend": "embodmem.agents.vlm.backend",
    "ChatBackend": "embodmem.agents.vlm.backend",
    "VLMPolicy": "embodmem.agents.vlm.policy",
}
"""The VLM names, imported on first use: they bring the HTTP client (openai), which a memory, policy
or answerer plug-in that talks to no server never needs."""

__getattr__ = lazy_attributes(__name__, _VLM_HOMES)

__all__ = [
    "AGENT_ATTRIBUTES",
    "AGENT_METHODS",
    "ANSWERER_METHODS",
    "ANY_RECORD",
    "MEMORY_ATTRIBUTES",
    "MEMORY_METHODS",
    "MEMORY_OPTIONAL_SETTINGS",
    "MEMORY_STATS",
    "Action",
    "Agent",
    "AgentMemory",
    "AgentTrace",
    "Answer",
    "Answerer",
    "AnswererProtocol",
    "BuildContext",
    "CallableBackend",
    "ChatBackend",
    "FrameMemoryAnswerer",
    "FrameMeta",
    "Hit",
    "Memory",
    "MemoryAgent",
    "MemoryCarrier",
    "MemoryConfig",
    "MemorySettings",
    "Navigator",
    "Observation",
    "PlaceMap",
    "Policy",
    "QueryFilter",
    "QueryableMemory",
    "Question",
    "SensorSpec",
    "VLMPolicy",
    "missing_memory_members",
]
