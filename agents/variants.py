"""The memory agent's variants: the full agent and the ablations that say which part delivers the gain.

Each variant is the same :class:`~embodmem.agents.memory_agent.MemoryAgent` (or, for ``textlog``, the
reference benchmark's own memory) with a few settings changed, defined once here. ``agent=<name>`` picks
one for a run; ``experiment.variants=[...]`` runs several beside each other (``experiment=ablations``).

Example:
    >>> sorted(VARIANTS)[:4]
    ['memory', 'memory_fifo_only', 'memory_keep_all', 'memory_naive']
    >>> VARIANTS["memory_no_recall"].agent
    {'recall': False}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FIFO_ONLY_FRAMES = 256
"""Frames the ``memory_fifo_only`` variant keeps (its long-term store holds the newest this many)."""


@dataclass(frozen=True)
class Variant:
    """Settings that turn the memory agent into one variant."""

    name: str
    description: str
    agent: dict[str, Any] = field(default_factory=dict)
    """MemoryAgentConfig fields changed from the ``agent`` group."""
    memory: dict[str, Any] = field(default_factory=dict)
    """MemoryConfig fields changed from the ``memory`` group."""
    textlog: bool = False
    """Replace frame memory by the reference benchmark's text log."""
    naive: bool = False
    """Recall by top-k similarity only (agents/naive_agent.py): no evidence weighting, no map ranking."""


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


def memory_settings(variant: Variant, base: dict[str, Any], bytes_per_frame: int) -> dict[str, Any]:
    """The MemoryConfig fields of ``variant`` over ``base`` (symbolic values resolved)."""
    out = dict(base)
    for key, value in variant.memory.items():
        if key == "consolidate_to" and value is None:
            value = out.get("short_term_capacity", 32)
        if key == "byte_budget" and value == "fifo_frames":
            value = FIFO_ONLY_FRAMES * bytes_per_frame
        out[key] = value
    return out
