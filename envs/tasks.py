"""The twelve scenario tasks of the reference underwater benchmark (docs/design.md, "Scenarios").

Tasks 1-8 are shallow (10 lux); 9-12 are deep-water versions of 2, 3, 4 and 6 (1.5 lux): the same
seabed seen in low light, with shorter visibility and a darker picture.
"""

from __future__ import annotations

from dataclasses import dataclass

from embodmem.envs.objects import KIND_INDEX, KINDS, VARIANTS, get_variant

MODALITIES: tuple[str, ...] = ("category", "description", "image")
"""How a goal is given (GOAT-Bench): a kind's name, words naming one instance, or a picture of it."""
IMAGE_MISSION = "find what the goal image shows"
"""Mission text of image goals: the words say nothing of the instance; ``obs["goal_image"]`` does."""


@dataclass(frozen=True)
class Task:
    """One task: which kind to find and under what light; for instance goals, which instance and how
    it is given (``modality``, ``variant``)."""

    name: str
    number: int
    """Task number in the reference benchmark (1-12); instance goals carry their base task's."""
    target: str
    """Kind name of the target (see ``embodmem.envs.objects.KINDS``)."""
    deep: bool = False
    modality: str = "category"
    """One of :data:`MODALITIES`. ``category``: any instance of ``target`` will do."""
    variant: str | None = None
    """Instance goals: the goal instance's variant name (``objects.KIND_VARIANTS``)."""

    def __post_init__(self) -> None:
        if self.modality not in MODALITIES:
            raise ValueError(f"goal modality {self.modality!r} is unknown; allowed: {', '.join(MODALITIES)}")
        if (self.modality == "category") != (self.variant is None):
            raise ValueError(f"task {self.name!r}: a variant goes with description and image goals only")
        if self.variant is not None:
            get_variant(self.target, self.variant)

    @property
    def instance_goal(self) -> bool:
        """True when one instance is the goal (description and image goals)."""
        return self.modality != "category"

    @property
    def lux(self) -> float:
        return 1.5 if self.deep else 10.0

    @property
    def mission(self) -> str:
        if self.modality == "image":
            phrase = IMAGE_MISSION.removeprefix("find ")
        elif self.modality == "description":
            assert self.variant is not None
            phrase = get_variant(self.target, self.variant).phrase
        else:
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
"""Every category mission text, in task order (distinct: one per task); ``MISSIONS.index(m)`` encodes a mission."""


def instance_goal(modality: str, base_task: str, variant: str) -> Task:
    """The instance goal ``{modality}.{base_task}.{variant}``: e.g. ``description.barrel.yellow_band``
    ("find the oil drums with a yellow band") or ``image.deep_wreck.capsized`` (a picture of it).
    Each part is checked in turn and refused in one line naming it and what is allowed."""
    if modality not in MODALITIES or modality == "category":
        raise ValueError(
            f"goal modality {modality!r} is unknown; allowed: description, image (category goals are plain task names)"
        )
    if base_task not in TASKS:
        raise ValueError(f"instance goal base task {base_task!r} is unknown; allowed: {', '.join(TASKS)}")
    base = TASKS[base_task]
    get_variant(base.target, variant)
    name = f"{modality}.{base_task}.{variant}"
    return Task(name, base.number, base.target, base.deep, modality, variant)


INSTANCE_GOALS: dict[str, Task] = {
    g.name: g
    for base in TASKS
    for modality in ("description", "image")
    for v in VARIANTS
    if v.kind == TASKS[base].target
    for g in (instance_goal(modality, base, v.name),)
}
"""Every instance goal: 2 modalities x 12 base tasks x 3 variants."""
ALL_MISSIONS: tuple[str, ...] = MISSIONS + tuple(dict.fromkeys(g.mission for g in INSTANCE_GOALS.values()))
"""Category missions first (same indices as ``MISSIONS``), then the instance goals' missions."""


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
    # GOAT-style (GO to Any Thing): 5-10 goals in one world with appearance variants, each given as
    # a category, a description of one instance, or a picture of it; later goals often ask for an
    # instance the robot passed while looking for an earlier one (``target_seen_before``).
    "goat_wreck_barrel": (
        "wreck",
        "description.barrel.yellow_band",
        "image.wreck.capsized",
        "barrel",
        "description.wreck.white_hull",
        "image.barrel.toppled",
    ),
    "goat_shallow8": (
        "aircraft",
        "description.pipeline.white",
        "image.aircraft.yellow",
        "mining_robot",
        "description.aircraft.dark_green",
        "image.pipeline.yellow_bands",
        "description.mining_robot.toppled",
        "image.mining_robot.white_band",
    ),
    "goat_mixed10": (
        "electrical_box",
        "image.landing_platform.blue",
        "description.electrical_box.white",
        "wind_station",
        "image.electrical_box.broken",
        "description.landing_platform.tilted",
        "image.wind_station.black_bands",
        "description.deep_wreck.upright",
        "image.deep_barrel.red",
        "description.wind_station.broken",
    ),
    # Changing worlds (world.changes, envs/changes.py): every goal is asked for twice, so a change
    # between the two visits makes what was seen the first time stale. Without changes they are
    # the static controls of the same tasks.
    "revisit_shallow8": (
        "wreck",
        "barrel",
        "mining_robot",
        "electrical_box",
        "wreck",
        "barrel",
        "mining_robot",
        "electrical_box",
    ),
    "revisit_goat6": (
        "description.barrel.yellow_band",
        "image.wreck.capsized",
        "mining_robot",
        "description.barrel.yellow_band",
        "image.wreck.capsized",
        "mining_robot",
    ),
}
"""Named task sequences, run in one persistent world (``goat_*``: in the world with variants;
``revisit_*``: every goal twice, for the changing world of ``world.changes``)."""
GOAT_SEQUENCES: tuple[str, ...] = tuple(name for name in SEQUENCES if name.startswith("goat_"))


def get_task(name: str) -> Task:
    """Look up a task by name (a category task, or an instance goal ``modality.base_task.variant``);
    an unknown name lists the valid ones."""
    if name in TASKS:
        return TASKS[name]
    if isinstance(name, str) and name.count(".") == 2:
        return instance_goal(*name.split("."))
    raise ValueError(
        f"unknown task {name!r}; valid tasks: {', '.join(TASKS)}, or instance goals "
        "description.<task>.<variant> / image.<task>.<variant>"
    )


def get_sequence(name: str) -> tuple[str, ...]:
    """Look up a named sequence; an unknown name lists the valid ones."""
    try:
        return SEQUENCES[name]
    except KeyError:
        raise ValueError(f"unknown sequence {name!r}; valid sequences: {', '.join(SEQUENCES)}") from None
