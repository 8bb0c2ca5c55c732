"""The twelve scenario tasks of the reference underwater benchmark (docs/design.md, "Scenarios").

Tasks 1-8 are shallow (10 lux); 9-12 are deep-water versions of 2, 3, 4 and 6 (1.5 lux): the same
seabed seen in low light, with shorter visibility and a darker picture.
"""

from __future__ import annotations

from dataclasses import dataclass

from embodmem.envs.objects import KIND_INDEX, KINDS


@dataclass(frozen=True)
class Task:
    """One task: which kind to find and under what light."""

    name: str
    number: int
    """Task number in the reference benchmark (1-12)."""
    target: str
    """Kind name of the target (see ``embodmem.envs.objects.KINDS``)."""
    deep: bool = False

    @property
    def lux(self) -> float:
        return 1.5 if self.deep else 10.0

    @property
    def mission(self) -> str:
        phrase = KINDS[KIND_INDEX[self.target]].phrase
        return f"find {phrase} in deep water" if self.deep else f"find {phrase}"

    @property
    def env_id(self) -> str:
        camel = "".join(part.capitalize() for part in self.name.split("_"))
        return f"EmbodMem/{camel}-v0"


TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        Task("mining_robot", 1, "mining_robot"),
        Task("pipeline", 2, "pipeline"),
        Task("barrel", 3, "barrel"),
        Task("wreck", 4, "wreck"),
        Task("electrical_box", 5, "electrical_box"),
        Task("wind_station", 6, "wind_station"),
        Task("aircraft", 7, "aircraft"),
        Task("landing_platform", 8, "landing_platform"),
        Task("deep_pipeline", 9, "pipeline", deep=True),
        Task("deep_barrel", 10, "barrel", deep=True),
        Task("deep_wreck", 11, "wreck", deep=True),
        Task("deep_wind_station", 12, "wind_station", deep=True),
    )
}

MISSIONS: tuple[str, ...] = tuple(t.mission for t in TASKS.values())
"""Every mission text, in task order (distinct: one per task); ``MISSIONS.index(m)`` encodes a mission."""


def tour(length: int, seed: int = 0) -> tuple[str, ...]:
    """A lifelong tour: ``length`` tasks drawn with repetition from every task in :data:`TASKS`
    (shallow and deep), never the same task twice in a row. It changes when a task is added;
    the named ``lifelong50`` sequence is a fixed list.

    Example:
        >>> tour(5)
        ('deep_wreck', 'landing_platform', 'aircraft', 'wreck', 'mining_robot')
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    names = list(TASKS)
    out: list[str] = []
    while len(out) < length:
        name = names[int(rng.integers(len(names)))]
        if not out or out[-1] != name:
            out.append(name)
    return tuple(out)


SEQUENCES: dict[str, tuple[str, ...]] = {
    "wreck_then_barrel": ("wreck", "barrel"),
    "barrel_then_wreck": ("barrel", "wreck"),
    "shallow_tour": ("wreck", "barrel", "mining_robot", "electrical_box"),
    "all_shallow": tuple(n for n, t in TASKS.items() if not t.deep),
    "deep_pair": ("deep_wreck", "deep_barrel"),
    "aircraft_then_pipeline": ("aircraft", "pipeline"),
    "mining_robot_then_electrical_box": ("mining_robot", "electrical_box"),
    "wreck_barrel_mining_robot": ("wreck", "barrel", "mining_robot"),
    "shallow_tour6": ("wreck", "barrel", "mining_robot", "electrical_box", "aircraft", "wind_station"),
    # tour(50) as drawn from the twelve tasks of 2026-11: written out, so that adding a task never
    # changes this sequence (tour() draws from whatever TASKS holds).
    "lifelong50": (
        "deep_wreck",
        "landing_platform",
        "aircraft",
        "wreck",
        "mining_robot",
        "barrel",
        "deep_barrel",
        "landing_platform",
        "deep_wreck",
        "aircraft",
        "landing_platform",
        "deep_wind_station",
        "deep_pipeline",
        "landing_platform",
        "aircraft",
        "deep_wind_station",
        "wreck",
        "deep_barrel",
        "deep_pipeline",
        "mining_robot",
        "electrical_box",
        "deep_wreck",
        "aircraft",
        "mining_robot",
        "deep_barrel",
        "deep_pipeline",
        "deep_wreck",
        "barrel",
        "pipeline",
        "deep_wreck",
        "mining_robot",
        "aircraft",
        "mining_robot",
        "wreck",
        "wind_station",
        "electrical_box",
        "mining_robot",
        "pipeline",
        "mining_robot",
        "deep_pipeline",
        "aircraft",
        "landing_platform",
        "wreck",
        "landing_platform",
        "deep_barrel",
        "electrical_box",
        "wind_station",
        "deep_wind_station",
        "deep_barrel",
        "deep_wind_station",
    ),
}
"""Named task sequences, run in one persistent world."""


def get_task(name: str) -> Task:
    """Look up a task by name; an unknown name lists the valid ones."""
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}; valid tasks: {', '.join(TASKS)}") from None


def get_sequence(name: str) -> tuple[str, ...]:
    """Look up a named sequence; an unknown name lists the valid ones."""
    try:
        return SEQUENCES[name]
    except KeyError:
        raise ValueError(f"unknown sequence {name!r}; valid sequences: {', '.join(SEQUENCES)}") from None
