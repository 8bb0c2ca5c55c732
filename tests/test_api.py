"""embodmem.api: the stock classes satisfy the protocols, and nothing outside a protocol is called on a plug-in.

The strict plug-ins below wrap the stock classes and expose only the protocol's members; any other
attribute a caller reads is recorded as a violation (and refused). Experiments then run through them:
the suite with warm and cold memory, sleep between tasks, GEM evaluation rows (save, then the class's
own load into a fresh agent), a saved memory, and the EQA frame-memory answerer.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import embodmem
from embodmem import api
from embodmem.agents.base import Agent, AgentTrace
from embodmem.agents.random_agent import RandomAgent
from embodmem.app import run
from embodmem.envs.spec import SensorSpec
from embodmem.memory import AgentMemory, FrameMeta, Hit, MemoryConfig, QueryFilter
from embodmem.memory.records import ANY_RECORD

VIOLATIONS: list[str] = []
"""Attributes read outside a protocol, by any strict plug-in of this module (cleared per test)."""
CALLED: set[str] = set()
"""Protocol members called on the strict memory."""


@pytest.fixture(autouse=True)
def _fresh_log() -> None:
    VIOLATIONS.clear()
    CALLED.clear()


def protocol_members(protocol: type) -> set[str]:
    """The members a Protocol class declares (methods and annotated attributes)."""
    own = {n for n in vars(protocol) if not n.startswith("_")}
    return own | set(getattr(protocol, "__annotations__", {}))


class _Only:
    """Exposes ``fields`` of ``target`` read-only; anything else is a violation."""

    def __init__(self, target: object, fields: Sequence[str], where: str) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_fields", tuple(fields))
        object.__setattr__(self, "_where", where)

    def __getattr__(self, name: str) -> Any:
        if name in self._fields:
            return getattr(self._target, name)
        VIOLATIONS.append(f"{self._where}.{name}")
        raise AttributeError(f"{self._where}.{name} is outside the protocol")


class StrictMemory:
    """The stock memory behind exactly :class:`embodmem.api.Memory`."""

    version = "strict-1"

    def __init__(self, config: MemoryConfig, inner: AgentMemory | None = None) -> None:
        self._inner = inner if inner is not None else AgentMemory(config)
        self.config = _Only(
            self._inner.config,
            (*api.MEMORY_ATTRIBUTES["config"], *api.MEMORY_OPTIONAL_SETTINGS),
            "memory.config",
        )
        self.map = _Only(self._inner.map, api.MEMORY_ATTRIBUTES["map"], "memory.map")

    def __getattr__(self, name: str) -> Any:
        VIOLATIONS.append(f"memory.{name}")
        raise AttributeError(f"memory.{name} is outside the protocol")

    def reset(self) -> None:
        CALLED.add("reset")
        self._inner.reset()

    def observe(self, embedding: np.ndarray, meta: FrameMeta) -> int:
        CALLED.add("observe")
        return self._inner.observe(embedding, meta)

    def flush(self) -> int:
        CALLED.add("flush")
        return self._inner.flush()

    def query(
        self, vec_or_vecs: np.ndarray, k: int = 5, where: QueryFilter = ANY_RECORD, *, count_hits: bool = True
    ) -> list[Hit] | list[list[Hit]]:
        CALLED.add("query")
        return self._inner.query(vec_or_vecs, k, where, count_hits=count_hits)

    def hit_vectors(self, hits: Sequence[Hit]) -> np.ndarray:
        CALLED.add("hit_vectors")
        return self._inner.hit_vectors(hits)

    def stats(self) -> Mapping[str, Any]:
        CALLED.add("stats")
        return self._inner.stats()

    def sleep(self) -> object:
        CALLED.add("sleep")
        return self._inner.sleep()

    def save(self, directory: str | os.PathLike[str]) -> object:
        CALLED.add("save")
        return self._inner.save(directory)

    @classmethod
    def load(cls, directory: str | os.PathLike[str], expect_dim: int | None = None) -> StrictMemory:
        CALLED.add("load")
        inner = AgentMemory.load(directory, expect_dim)
        return cls(inner.config, inner)


class StrictAgent:
    """A random policy behind exactly :class:`embodmem.api.Policy` (not an Agent subclass)."""

    def __init__(self, ctx: object) -> None:
        self._inner = RandomAgent(seed=0)
        self.name = "strict"
        self.trace = AgentTrace()
        self.memory = None
        self.profiler = None

    def __getattr__(self, name: str) -> Any:
        VIOLATIONS.append(f"agent.{name}")
        raise AttributeError(f"agent.{name} is outside the protocol")

    def reset(self, observation: api.Observation, spec: SensorSpec) -> None:
        self._inner.reset(observation, spec)
        self.trace = AgentTrace()

    def act(self, observation: api.Observation) -> int:
        return self._inner.act(observation)

    def end_task(self, success: bool) -> None:
        self._inner.end_task(success)

    def episode_stats(self) -> Mapping[str, float | str]:
        return {}


StrictAgent.needs_embedder = False  # type: ignore[attr-defined]


class StrictAnswerer:
    """An EQA answerer behind exactly :class:`embodmem.api.AnswererProtocol`: always the first choice."""

    name = "strict"

    def __init__(self, embedder: object) -> None:
        self.seen = 0

    def __getattr__(self, name: str) -> Any:
        VIOLATIONS.append(f"answerer.{name}")
        raise AttributeError(f"answerer.{name} is outside the protocol")

    def start_tour(self, tour: str, spec: SensorSpec) -> None:
        self.seen = 0

    def observe(self, observation: api.Observation, step: int) -> None:
        self.seen += 1

    def answer(self, question: api.Question) -> api.Answer:
        return api.Answer(choice=question.choices[0]) if question.choices else api.Answer(point=(0.0, 0.0))

    def stats(self) -> dict[str, float]:
        return {"frames_seen": float(self.seen)}


def test_stock_classes_satisfy_the_protocols() -> None:
    memory = api.AgentMemory(api.MemoryConfig(dim=8))
    assert isinstance(memory, api.Memory) and api.missing_memory_members(api.AgentMemory) == []
    assert issubclass(api.MemoryAgent, Agent) and isinstance(RandomAgent(), api.Policy)
    assert all(callable(getattr(api.Answerer, m)) for m in api.ANSWERER_METHODS)
    assert issubclass(api.FrameMemoryAnswerer, api.Answerer)
    # the member lists the checks use are the protocols' own members
    assert set(api.MEMORY_METHODS) | set(api.MEMORY_ATTRIBUTES) == protocol_members(api.Memory)
    assert set(api.AGENT_METHODS) | set(api.AGENT_ATTRIBUTES) | {"name", "profiler"} == protocol_members(api.Policy)
    assert set(api.ANSWERER_METHODS) | {"name"} == protocol_members(api.AnswererProtocol)
    assert inspect.ismethod(api.AgentMemory.load)  # a classmethod: the runner loads through the class


def test_every_export_has_a_docstring() -> None:
    for name in api.__all__:
        obj = getattr(api, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert (obj.__doc__ or "").strip(), name


def test_only_the_protocol_is_called_on_plugins(tmp_path: Path) -> None:
    cfg = embodmem.compose(
        [
            "experiment.tasks=[wreck,barrel]",
            "experiment.world_seeds=[1000]",
            "env.max_steps=25",
            "agent.memory=tests.test_api:StrictMemory",
            "experiment.variants=[memory_naive+tests.test_api:StrictMemory]",
            "experiment.baselines=[tests.test_api:StrictAgent]",
            "experiment.sleep_between_tasks=true",
            "experiment.gem_eval=true",
            "experiment.save_memory=true",
            "logger.plots=false",
            "logger.progress=false",
        ]
    )
    records = run(cfg, tmp_path)
    assert VIOLATIONS == []
    assert {"reset", "observe", "flush", "query", "hit_vectors", "stats", "sleep", "save", "load"} <= CALLED
    agents = {r.agent for r in records}
    assert agents == {
        "tests.test_api:StrictMemory",
        "memory_naive+tests.test_api:StrictMemory",
        "tests.test_api:StrictAgent",
    }
    assert (tmp_path / "designs.csv").is_file()
    # the saved snapshot records the plug-in's class and version
    from embodmem.memory.snapshot import MemoryDesign, read_memory_design

    assert read_memory_design(tmp_path / "memory" / "world1000") == MemoryDesign(
        "tests.test_api:StrictMemory", "strict-1"
    )


def test_only_the_protocol_is_called_by_the_eqa_answerer(tmp_path: Path) -> None:
    cfg = embodmem.compose(
        [
            "experiment=eqa",
            "experiment.eqa.tours=1",
            "experiment.eqa.answerers=[frame_memory,tests.test_api:StrictMemory,tests.test_api:StrictAnswerer]",
            "logger.progress=false",
        ]
    )
    records = run(cfg, tmp_path)
    assert VIOLATIONS == [] and {"observe", "query", "hit_vectors"} <= CALLED
    mine = [r for r in records if r.answerer == "tests.test_api:StrictMemory"]
    stock = [r for r in records if r.answerer == "frame_memory"]
    assert mine and [r.correct for r in mine] == [r.correct for r in stock]  # the same memory behind it
    assert [r for r in records if r.answerer == "tests.test_api:StrictAnswerer"]
