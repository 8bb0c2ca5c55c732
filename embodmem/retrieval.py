"""What an agent retrieved from memory: one type from the memory's hit to the log, the video and the prompt.

Memory answers a query with :class:`embodmem.memory.Hit` (record id, source, full metadata: what the
memory itself needs to fetch vectors and count uses). What an agent *looked at* is a
:class:`Retrieval`, made from a hit by :meth:`Retrieval.from_hit` and nowhere else: the agent's trace
holds it, the runner logs it (inside a :class:`RetrievalEvent`, through :meth:`RetrievalEvent.to_log`),
the episode-log schema validates it, replay and the video read it back (:meth:`RetrievalEvent.from_log`),
and the VLM prompt shows it. The log keeps every field but the thumbnail.

Example:
    >>> r = Retrieval(0.91, 3, (4.0, 5.0, 1), "wreck", 11)
    >>> event = RetrievalEvent(2, "find oil drums", [r])
    >>> event.to_log()
    {'step': 2, 'query': 'find oil drums', 'hits': [{'score': 0.91, 'node': 3, 'pose': [4.0, 5.0, 1], 'task': 'wreck', 'step': 11}]}
    >>> RetrievalEvent.from_log(event.to_log()) == event
    True
    >>> bad = {"step": 2, "query": "q", "hits": [{"score": 0.9, "node": 3, "pose": [4, 5, 7], "task": "w", "step": 1}]}
    >>> RetrievalEvent.from_log(bad)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for RetrievalEvent
    hits.0.pose.2
      Input should be less than or equal to 3 [type=less_than_equal, input_value=7, input_type=int]
    ...
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
from pydantic import ConfigDict, Field, JsonValue, TypeAdapter
from pydantic.dataclasses import dataclass

if TYPE_CHECKING:  # the memory package loads FAISS; nothing here needs it at run time
    from embodmem.memory import Hit

_STRICT = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, arbitrary_types_allowed=True)

MAX_HITS = 64
"""Most hits one logged query may hold (the runner logs the best 5)."""


@dataclass(frozen=True, config=_STRICT)
class Retrieval:
    """One remembered frame an agent looked at: how well it matched, where and when it was seen.

    Positional order is the field order: ``Retrieval(score, node, pose, task, step, thumbnail)``.
    """

    score: Annotated[float, Field(ge=-2, le=2)]
    """How well the frame matches the query, as the agent weighs it (memory's cosine similarity, or
    the memory agent's P(target) of the frame)."""
    node: Annotated[int, Field(ge=0)] | None
    """Topological-map node of the frame (None: none)."""
    pose: tuple[Annotated[float, Field(ge=0)], Annotated[float, Field(ge=0)], Annotated[int, Field(ge=0, le=3)]]
    """``(x, y, heading)`` where the frame was taken: cells, heading index 0..3 (MiniGrid's)."""
    task: str
    """Task during which the frame was stored."""
    step: Annotated[int, Field(ge=0)]
    """Step of that task at which it was stored."""
    thumbnail: Annotated[np.ndarray | None, Field(exclude=True)] = dataclasses.field(
        default=None, compare=False, repr=False
    )
    """The stored frame, when memory keeps thumbnails (never logged)."""

    @classmethod
    def from_hit(cls, hit: Hit, score: float | None = None) -> Retrieval:
        """The retrieval of a memory hit; ``score`` replaces the hit's similarity (e.g. by P(target)).
        Checked by the schema like any other: a value out of its bounds raises naming the field.

        >>> from embodmem.memory import FrameMeta, Hit
        >>> hit = Hit(0.5, 7, FrameMeta("run", "wreck", 0, 12, 3.0, 4.0, heading=1, node=2))
        >>> Retrieval.from_hit(hit, 0.9) == Retrieval(0.9, 2, (3.0, 4.0, 1), "wreck", 12)
        True
        >>> Retrieval.from_hit(hit, float("nan"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for Retrieval
        score
          Input should be a finite number ...
        """
        meta = hit.meta
        return cls(
            score=float(hit.score if score is None else score),
            node=None if meta.node is None else int(meta.node),
            pose=(float(meta.x), float(meta.y), int(meta.heading)),
            task=str(meta.task),
            step=int(meta.step),
            thumbnail=meta.thumbnail,
        )


@dataclass(frozen=True, config=_STRICT)
class RetrievalEvent:
    """One memory query of an episode: the step, the query text and the hits, best first."""

    step: Annotated[int, Field(ge=1)]
    """Step (1-based action count) at which the agent looked."""
    query: str
    hits: list[Retrieval] = Field(max_length=MAX_HITS)

    def to_log(self) -> dict[str, JsonValue]:
        """The JSON form written into an episode log (no thumbnails)."""
        return _EVENT.dump_python(self, mode="json")

    @classmethod
    def from_log(cls, entry: Mapping[str, Any]) -> RetrievalEvent:
        """Read back what :meth:`to_log` wrote (JSON-mode validation: pose lists are tuples there).

        Raises:
            pydantic.ValidationError: naming the field that breaks the schema.
        """
        return _EVENT.validate_json(json.dumps(entry))


_EVENT: TypeAdapter[RetrievalEvent] = TypeAdapter(RetrievalEvent)
