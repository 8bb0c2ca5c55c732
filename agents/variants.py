"""The memory agent's variants: the full agent and the ablations that say which part delivers the gain.

Each variant is the same :class:`~embodmem.agents.memory_agent.MemoryAgent` (or, for ``textlog``, the
reference benchmark's own memory) with a few settings changed, defined once here. ``agent=<name>`` picks
one for a run; ``experiment.variants=[...]`` runs several beside each other (``experiment=ablations``).

Example:
    >>> sorted(VARIANTS)[:4]
    ['memory', 'memory_consolidate', 'memory_decay', 'memory_fifo_only']
    >>> VARIANTS["memory_no_recall"].agent
    {'recall': False}
"""

from __future__ import annotations

from dataclasses import dataclass, field

from embodmem.memory.config import MemoryConfig

FIFO_ONLY_FRAMES = 256
"""Frames the ``memory_fifo_only`` variant keeps (its long-term store holds the newest this many)."""


@dataclass(frozen=True)
class Variant:
    """Settings that turn the memory agent into one variant."""

    name: str
    description: str
    agent: dict[str, object] = field(default_factory=dict)
    """MemoryAgentConfig fields changed from the ``agent`` group (checked by the config when applied)."""
    memory: dict[str, object] = field(default_factory=dict)
    """MemoryConfig fields changed from the ``memory`` group (``consolidate_to=None``: the short-term
    capacity; ``byte_budget="fifo_frames"``: :data:`FIFO_ONLY_FRAMES` frames' code; see :func:`memory_settings`)."""
    textlog: bool = False
    """Replace frame memory by the reference benchmark's text log."""
    naive: bool = False
    """Recall by top-k similarity only (agents/naive_agent.py): no evidence weighting, no map ranking."""
    memory_class: str | None = None
    """A plug-in memory (``module:Class`` or ``module:factory``, :class:`embodmem.api.Memory`) in
    place of the stock :class:`~embodmem.memory.AgentMemory`; None: the stock one."""


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("memory", "full: frames (consolidated, long-term store), recall, carried map"),
        Variant("memory_no_recall", "frames stored, never retrieved; map carried", agent={"recall": False}),
        Variant("memory_no_map", "map and coverage reset per task; frames carried", agent={"carry_map": False}),
        Variant(
            "memory_no_consolidation",
            "short-term frames moved to the long-term store unmerged",
            memory={"consolidate_to": None},  # None: the short-term capacity (see memory_settings)
        ),
        Variant(
            "memory_fifo_only",
            f"no long-term store: the newest {FIFO_ONLY_FRAMES} frames only, unmerged",
            memory={"consolidate_to": None, "byte_budget": "fifo_frames", "eviction": "fifo"},
        ),
        Variant(
            "memory_keep_all",
            "full context: every frame kept unmerged in a flat exact index, no eviction, no sleep merging",
            memory={
                "consolidate_to": None,
                "index_factory": "Flat",
                "byte_budget": None,
                "dedup_threshold": 1.0,
            },
        ),
        Variant(
            "memory_naive",
            "naive retrieval: top-k frames by similarity to the goal, go where the best looked; no weighting",
            memory={"consolidate_to": None, "dedup_threshold": 1.0},
            naive=True,
        ),
        *(
            Variant(
                f"memory_{policy}",
                f"full, with the memory update policy {policy!r} (embodmem.memory.updates)",
                memory={"update_policy": policy},
            )
            for policy in ("overwrite", "recency", "decay", "consolidate")
        ),
        Variant(
            "textlog",
            "the reference benchmark's memory: FIFO text log of recognitions (1,000 + 500 important)",
            textlog=True,
        ),
    )
}
ABLATIONS: tuple[str, ...] = tuple(VARIANTS)


def get_variant(name: str) -> Variant:
    if name not in VARIANTS:
        raise ValueError(f"agent variant {name!r} is unknown; allowed: {', '.join(VARIANTS)}")
    return VARIANTS[name]


def memory_settings(variant: Variant, base: MemoryConfig) -> MemoryConfig:
    """``base`` with ``variant``'s MemoryConfig changes (symbolic values resolved), validated again
    (a field the config does not have is refused by name)."""
    changes = dict(variant.memory)
    if "consolidate_to" in changes and changes["consolidate_to"] is None:
        changes["consolidate_to"] = changes.get("short_term_capacity", base.short_term_capacity)
    if changes.get("byte_budget") == "fifo_frames":
        changes["byte_budget"] = FIFO_ONLY_FRAMES * base.bytes_hint
    return MemoryConfig.from_dict({**base.to_dict(), **changes})
