"""Naive retrieval: the memory agent's skeleton with retrieval reduced to "go where the most similar
frame looked".

The agent-memory talk behind this project found naive retrieval not clearly worse than elaborate
memory systems; this row measures that here. Frames are stored unmerged (``memory_naive`` in
``agents/variants.py``); at a task's start and every ``requery_every`` steps the top
``NAIVE_TOP_K`` frames by cosine similarity to the goal (the mission text, or for an image goal the
words the goal image shows) are taken in order, and the robot goes to the first thing the best one
not yet rejected looked at, straight ahead of its pose. No recogniser probability filters the hits,
no votes are weighed across frames or viewpoints, no place is ranked by distance on the map, and
there is no consolidation. Approach, confirmation and rejection are the skeleton's own (the same
explorer, map and recogniser as every other row).
"""

from __future__ import annotations

import time
from typing import cast

import numpy as np

from embodmem.agents.memory_agent import MemoryAgent, RecalledPlace
from embodmem.memory.records import Hit
from embodmem.retrieval import Retrieval

NAIVE_TOP_K = 5
"""Frames retrieved per query (top-k by similarity)."""


class NaiveRetrievalAgent(MemoryAgent):
    """The memory agent whose recall is top-k similarity, without evidence weighting or place ranking."""

    name = "memory_naive"

    def recall_target_place(self) -> RecalledPlace | None:
        """The first thing in view straight ahead of the most similar remembered frame not yet rejected."""
        assert self.grid is not None and self.spec is not None
        with self.timed("memory_query"):
            started = time.perf_counter()
            hits = cast(list[Hit], self.frame_memory.query(self.recognizer.query, NAIVE_TOP_K))
            self.queries += 1
            self._query_seconds.append(time.perf_counter() - started)
        self.trace.query = self.recognizer.mission
        self.trace.retrievals = [Retrieval.from_hit(h) for h in hits]
        mission = self.recognizer.mission or ""
        discredited = self.discredited_views.get(mission, set())
        rejected = self.rejected_places.get(mission, set()) | self.rejected
        reach = self.spec.view_range_m / self.spec.cell_size_m
        for hit in hits:
            pose = (int(round(hit.meta.x)), int(round(hit.meta.y)), int(hit.meta.heading))
            if pose in discredited:
                continue
            ahead = self.grid.ray_hits(pose, np.zeros(1), reach)
            if not ahead or ahead[0] in rejected:
                continue
            self.trace.mode = "recall"
            self.scan_turns = 3
            return RecalledPlace(ahead[0], 1.0, 1, frozenset({pose}), frozenset({ahead[0]}))
        return None
