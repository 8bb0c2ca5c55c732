"""A world that changes between the tasks of a sequence (and, if asked, during one).

Today's memories are never wrong, only incomplete, when the seabed stays as it was first seen. The
field's anchors for memory updates (KARMA's household, DynaMem's moving objects, FindingDory's
rearrangements, LongMemEval's knowledge updates) need objects that move, vanish, appear and change
their look. A :class:`WorldChanges` declares such changes for one task sequence; :func:`world_at`
applies them, seeded, to a world; every applied change is a :class:`ChangeEvent` (which object,
from which cells to which, at which task and step) that the ground truth, the episode log and the
video carry.

The five actions:

- ``move``: the object's footprint goes to another place (``to``: ``random``, at least
  :data:`MIN_MOVE_CELLS` cells from where it was; ``far``, at least a third of the world away; or
  an explicit cell ``"x:y"`` where its footprint fits);
- ``remove``: it is gone (never the last instance of a kind a task of the sequence asks for);
- ``add``: a new instance of a target kind (``variant``: its look; the standard look by default);
- ``replace``: the same place, another variant of its kind (``variant``, or the next one);
- ``drift``: currents shift it ``distance`` cells in a seeded direction before every task from
  ``task`` on (and a drifting object moves nowhere when no neighbouring place fits).

Instance numbers are those of the world at the time of the change: a removal renumbers the later
instances of its kind, as :meth:`~embodmem.envs.world.World.instance_cells` counts them.

Example:
    >>> from embodmem.envs.world import generate_world
    >>> changes = WorldChanges("demo", changes=[WorldChange("move", "barrel", task=2)])
    >>> check_changes(changes, ("wreck", "barrel"), [3])
    >>> world, events = world_at(generate_world(3), changes, position=1)
    >>> events[0].action, events[0].kind, events[0].task, events[0].from_cells != events[0].to_cells
    ('move', 'barrel', 2, True)
    >>> check_changes(WorldChanges("bad", changes=[WorldChange("move", "barrel", task=5)]), ("wreck", "barrel"), [3])
    Traceback (most recent call last):
    ...
    embodmem.envs.changes.ChangeError: world.changes.changes[0] (move barrel#0 at task 5 step 0): task 5 is outside the sequence of 2 tasks; allowed: 1..2
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Optional

import numpy as np

from embodmem.envs.geodesic import bfs_distance
from embodmem.envs.objects import KIND_INDEX, KIND_VARIANTS, TARGET_KINDS, VARIANTS_PER_KIND, get_variant
from embodmem.envs.tasks import get_task
from embodmem.envs.world import FOOTPRINTS, World, generate_world

CHANGE_ACTIONS: tuple[str, ...] = ("move", "remove", "add", "replace", "drift")
"""What a change may do to an object."""
PLACES: tuple[str, ...] = ("random", "far")
"""Named places a ``move`` or an ``add`` may go to (besides an explicit cell ``"x:y"``)."""
MIN_MOVE_CELLS = 4
"""A ``random`` move lands at least this many cells from every cell the object covered: farther than
the success distance, so a memory of the old place is wrong, not merely loose."""
PLACE_TRIES = 400
"""Candidate places tried before a change is refused as impossible in this world."""


class ChangeError(ValueError):
    """A change the world or the sequence cannot take: one line naming the change and why."""


@dataclass
class WorldChange:
    """One change of one object, before (``step=0``) or during (``step=k``: after k actions) a task."""

    action: str = "move"
    """move, remove, add, replace or drift (:data:`CHANGE_ACTIONS`)."""
    object: str = "wreck"
    """The object's kind (a target kind; for ``add``, the kind of the new instance)."""
    task: int = 2
    """Position of the task in the sequence (from 1) at which the change happens (``drift``: the first)."""
    instance: int = 0
    """Which instance of the kind (numbered as the world numbers them at that time); unused by ``add``."""
    step: int = 0
    """0: between tasks, before the task starts; k >= 1: after the k-th action of that task."""
    to: str = "random"
    """``move``/``add``: random, far, or a cell "x:y" (or "x,y") where the footprint's first cell goes."""
    variant: Optional[str] = None
    """``replace``: the new variant (None: the next one of the kind); ``add``: the new instance's look."""
    distance: int = 1
    """``drift``: cells moved per task."""

    def label(self) -> str:
        """Short name of the change, for messages: ``move wreck#1 at task 3 step 0``."""
        what = self.object if self.action == "add" else f"{self.object}#{self.instance}"
        return f"{self.action} {what} at task {self.task} step {self.step}"


class Due(NamedTuple):
    """One application of a change: when it happens and what it draws its places from."""

    task: int
    step: int
    number: int
    """Position of the change in ``WorldChanges.changes``."""
    change: WorldChange
    draw_task: int
    """The task whose seed its places come from (its own task, also when hoisted)."""


@dataclass
class WorldChanges:
    """The ``world.changes`` config group: the changes of a sequence's world, seeded.

    An empty list (the ``none`` file, the default) is the static world every earlier run used.
    """

    name: str = "none"
    """Label of the change set (written into the records of a changing-world run)."""
    changes: list[WorldChange] = field(default_factory=list)
    """The changes, in any order; applied by (task, step, order given)."""
    seed: int = 0
    """Seed of the random places and drift directions (with the world seed and the change's position)."""
    hoist: bool = False
    """Apply every change before the first task (drift: all its tasks' shifts at once): the
    fresh-memory control, whose memories are never stale but whose last world is the same."""

    @property
    def active(self) -> bool:
        return bool(self.changes)

    @classmethod
    def from_log(cls, logged: dict[str, Any]) -> WorldChanges:
        """The change set as an episode log holds it (``dataclasses.asdict``); a key it lacks or
        does not know is a ``ValueError`` naming it."""
        fields = {f.name for f in dataclasses.fields(cls)}
        change_fields = {f.name for f in dataclasses.fields(WorldChange)}
        if set(logged) != fields:
            raise ValueError(f"world_change_set: keys {sorted(logged)}; allowed: {sorted(fields)}")
        changes = []
        for i, c in enumerate(logged["changes"]):
            if not isinstance(c, dict) or set(c) != change_fields:
                raise ValueError(f"world_change_set.changes.{i}: not a change with the keys {sorted(change_fields)}")
            changes.append(WorldChange(**c))
        return cls(str(logged["name"]), changes, int(logged["seed"]), bool(logged["hoist"]))

    def hoisted(self) -> WorldChanges:
        """The fresh-memory control of these changes (:attr:`hoist`)."""
        return dataclasses.replace(self, name=f"{self.name}_fresh", hoist=True)

    def schedule(self, n_tasks: int) -> list[Due]:
        """Every application in order; a drift appears once per task it moves at. Hoisted:
        everything at (1, 0), in the same order, drawing the places it would have drawn."""
        out = []
        for i, c in enumerate(self.changes):
            tasks = range(c.task, max(n_tasks, c.task) + 1) if c.action == "drift" else (c.task,)
            out += [Due(t, c.step, i, c, t) for t in tasks]
        out.sort(key=lambda item: (item.task, item.step, item.number))
        if self.hoist:
            return [d._replace(task=1, step=0) for d in out]
        return out


@dataclass(frozen=True)
class ChangeEvent:
    """A change as it happened (privileged, like target positions: ground truth, logs, video)."""

    task: int
    """Position of the task in the sequence (from 1)."""
    step: int
    """0: before the task; k: after its k-th action."""
    action: str
    kind: str
    instance: int
    """The instance number after the change (before it, for ``remove``)."""
    variant: str
    """The object's look after the change (before it, for ``remove``)."""
    from_cells: tuple[tuple[int, int], ...]
    """(x, y) the object covered before (empty for ``add``)."""
    to_cells: tuple[tuple[int, int], ...]
    """(x, y) it covers after (empty for ``remove``)."""
    old_variant: str | None = None
    """``replace``: the look it had."""

    def as_log(self) -> dict[str, Any]:
        """The event as the episode log holds it."""
        return {
            "task": self.task,
            "step": self.step,
            "action": self.action,
            "kind": self.kind,
            "instance": self.instance,
            "variant": self.variant,
            "old_variant": self.old_variant,
            "from": [list(c) for c in self.from_cells],
            "to": [list(c) for c in self.to_cells],
        }

    @property
    def from_center(self) -> tuple[float, float] | None:
        return _center(self.from_cells)

    @property
    def to_center(self) -> tuple[float, float] | None:
        return _center(self.to_cells)


def _center(cells: Sequence[tuple[int, int]]) -> tuple[float, float] | None:
    if not cells:
        return None
    a = np.asarray(cells, dtype=np.float64)
    return float(a[:, 0].mean()), float(a[:, 1].mean())


# --------------------------------------------------------------------------- applying


def _copy(world: World) -> World:
    return dataclasses.replace(
        world,
        kinds=world.kinds.copy(),
        instances=world.instances.copy(),
        looks=None if world.looks is None else world.looks.copy(),
        instance_variants=None if world.instance_variants is None else dict(world.instance_variants),
    )


def _variants_of(world: World, kind: str) -> list[int]:
    n = len(world.instance_cells(kind))
    if world.instance_variants is None:
        return [0] * n
    return list(world.instance_variants.get(kind, (0,) * n))


def _set_variants(world: World, kind: str, variants: list[int]) -> None:
    """Record the variants of ``kind``'s instances; a category world gets looks the first time."""
    if world.instance_variants is None:
        if all(v == 0 for v in variants):
            return
        world.looks = world.kinds.copy()
        world.instance_variants = {k: tuple([0] * len(world.instance_cells(k))) for k in TARGET_KINDS}
    world.instance_variants[kind] = tuple(variants)


def _paint(world: World, kind: str, instance: int, cells: np.ndarray, variant: int) -> None:
    xs, ys = cells[:, 0], cells[:, 1]
    world.kinds[ys, xs] = KIND_INDEX[kind]
    world.instances[ys, xs] = instance
    if world.looks is not None:
        world.looks[ys, xs] = KIND_VARIANTS[kind][variant].look


def _erase(world: World, cells: np.ndarray) -> None:
    xs, ys = cells[:, 0], cells[:, 1]
    world.kinds[ys, xs] = 0
    world.instances[ys, xs] = -1
    if world.looks is not None:
        world.looks[ys, xs] = 0


def _fits(world: World, cells: np.ndarray, keep_free: set[tuple[int, int]]) -> bool:
    """Every cell and a one-cell ring around it is open water inside the border, and no cell that
    must stay free (starts, the robot) is covered."""
    n = world.size
    if cells[:, 0].min() < 2 or cells[:, 1].min() < 2 or cells[:, 0].max() > n - 3 or cells[:, 1].max() > n - 3:
        return False
    for x, y in cells.tolist():
        if world.kinds[y - 1 : y + 2, x - 1 : x + 2].any():
            return False
    covered = {(int(x), int(y)) for x, y in cells.tolist()}
    return not (covered & keep_free)


def _connected(world: World, keep_free: set[tuple[int, int]]) -> bool:
    """Every free cell still reachable from the first cell that must stay free."""
    free = world.free()
    source = np.zeros_like(free)
    x, y = min(keep_free)
    source[y, x] = True
    return bool(np.isfinite(bfs_distance(free, source))[free].all())


def _place(
    world: World,
    shape: np.ndarray,
    rng: np.random.Generator,
    keep_free: set[tuple[int, int]],
    away_from: np.ndarray | None,
    min_cells: float,
) -> np.ndarray | None:
    """A seeded place for ``shape`` (offsets from its first cell) in open water, at least ``min_cells``
    from every cell of ``away_from``, that leaves every free cell reachable."""
    n = world.size
    for _ in range(PLACE_TRIES):
        ox, oy = int(rng.integers(2, n - 2)), int(rng.integers(2, n - 2))
        cells = shape + np.array([ox, oy])
        if not _fits(world, cells, keep_free):
            continue
        if away_from is not None and len(away_from):
            gap = np.min(np.hypot(*(cells[:, None, :] - away_from[None, :, :]).transpose(2, 0, 1)))
            if gap < min_cells:
                continue
        return cells
    return None


def _explicit_cell(to: str) -> tuple[int, int] | None:
    parts = to.replace(":", ",").split(",")
    if len(parts) != 2 or not all(p.strip().lstrip("-").isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def _describe_place() -> str:
    return f'{", ".join(PLACES)} or a cell "x:y"'


class _Applier:
    """Applies one change to a world copy (seeded by the change's own generator)."""

    def __init__(self, world: World, keep_free: set[tuple[int, int]]) -> None:
        self.world = world
        self.keep_free = keep_free

    def target_place(
        self, change: WorldChange, shape: np.ndarray, rng: np.random.Generator, old: np.ndarray | None
    ) -> np.ndarray:
        w = self.world
        cell = _explicit_cell(change.to)
        if cell is not None:
            cells = shape + np.array(cell)
            if not (0 <= cell[0] < w.size and 0 <= cell[1] < w.size):
                raise ChangeError(f"place {change.to!r} is outside the {w.size}x{w.size} world")
            if not _fits(w, cells, self.keep_free):
                raise ChangeError(
                    f"place {change.to!r} does not exist in world {w.seed}: the {change.object}'s footprint "
                    "with a ring of open water around it does not fit there"
                )
            return cells
        if change.to not in PLACES:
            raise ChangeError(f"place {change.to!r} is unknown; allowed: {_describe_place()}")
        min_cells = MIN_MOVE_CELLS if change.to == "random" else w.size / 3
        cells = _place(w, shape, rng, self.keep_free, old, min_cells if old is not None else 0)
        if cells is None:
            raise ChangeError(f"no place {change.to!r} for the {change.object} fits in world {w.seed}")
        return cells

    def apply(self, task: int, step: int, change: WorldChange, rng: np.random.Generator) -> ChangeEvent | None:
        w = self.world
        kind = change.object
        if change.action == "add":
            variants = _variants_of(w, kind)
            v = 0 if change.variant is None else get_variant(kind, change.variant).index
            shape = np.asarray(FOOTPRINTS[kind][0], dtype=np.int64)
            cells = self.target_place(change, shape, rng, None)
            instance = len(variants)
            _set_variants(w, kind, [*variants, v])
            _paint(w, kind, instance, cells, v)
            self._check_connected(change)
            return ChangeEvent(task, step, "add", kind, instance, KIND_VARIANTS[kind][v].name, (), _cells(cells))
        instances = w.instance_cells(kind)
        if not 0 <= change.instance < len(instances):
            raise ChangeError(
                f"object {kind}#{change.instance} does not exist in world {w.seed} at task {task}; "
                f"allowed: {kind}#0..{kind}#{len(instances) - 1}"
            )
        old = instances[change.instance]
        variants = _variants_of(w, kind)
        v = variants[change.instance]
        name = KIND_VARIANTS[kind][v].name
        if change.action == "remove":
            _erase(w, old)
            w.instances[(w.kinds == KIND_INDEX[kind]) & (w.instances > change.instance)] -= 1
            _set_variants(w, kind, variants[: change.instance] + variants[change.instance + 1 :])
            return ChangeEvent(task, step, "remove", kind, change.instance, name, _cells(old), ())
        if change.action == "replace":
            new = (v + 1) % VARIANTS_PER_KIND if change.variant is None else get_variant(kind, change.variant).index
            if new == v:
                raise ChangeError(f"{kind}#{change.instance} already wears variant {name!r} in world {w.seed}")
            variants[change.instance] = new
            _set_variants(w, kind, variants)
            _paint(w, kind, change.instance, old, new)
            new_name = KIND_VARIANTS[kind][new].name
            return ChangeEvent(task, step, "replace", kind, change.instance, new_name, _cells(old), _cells(old), name)
        shape = old - old[0]
        _erase(w, old)
        if change.action == "move":
            cells = self.target_place(change, shape, rng, old)
        else:  # drift: a few cells one way, the first direction (in a seeded order) where it fits
            drifted: np.ndarray | None = None
            for d in rng.permutation(4).tolist():
                dx, dy = ((1, 0), (0, 1), (-1, 0), (0, -1))[d]
                shifted = old + np.array([dx, dy]) * change.distance
                if _fits(w, shifted, self.keep_free):
                    _paint(w, kind, change.instance, shifted, v)
                    if _connected(w, self.keep_free):
                        drifted = shifted
                        break
                    _erase(w, shifted)
            if drifted is None:  # nowhere to go: it stays, and nothing happened
                _paint(w, kind, change.instance, old, v)
                return None
            return ChangeEvent(task, step, "drift", kind, change.instance, name, _cells(old), _cells(drifted))
        _paint(w, kind, change.instance, cells, v)
        self._check_connected(change)
        return ChangeEvent(task, step, "move", kind, change.instance, name, _cells(old), _cells(cells))

    def _check_connected(self, change: WorldChange) -> None:
        if not _connected(self.world, self.keep_free):
            raise ChangeError(f"{change.to!r} would cut off open water in world {self.world.seed}")


def _cells(cells: np.ndarray) -> tuple[tuple[int, int], ...]:
    return tuple((int(x), int(y)) for x, y in cells.tolist())


def change_rng(changes: WorldChanges, world_seed: int, index: int, task: int) -> np.random.Generator:
    """The generator of one application of change ``index`` at ``task`` (a drift passes 0: its
    current keeps one heading, the other directions its fallbacks in one seeded order)."""
    return np.random.default_rng([changes.seed, world_seed, index, task])


def apply_changes(
    world: World,
    changes: WorldChanges,
    due: Iterable[Due],
    keep_free: set[tuple[int, int]] | None = None,
) -> tuple[World, list[ChangeEvent]]:
    """``world`` (left as it is) with the ``due`` applications of :meth:`WorldChanges.schedule`
    made, and what happened. ``keep_free``: cells nothing may land on (the fixed starts always)."""
    free = {(x, y) for x, y, _ in world.fixed_starts} | set(keep_free or ())
    out = _copy(world)
    applier = _Applier(out, free)
    events = []
    for task, step, index, change, draw_task in due:
        try:
            rng = change_rng(changes, world.seed, index, 0 if change.action == "drift" else draw_task)
            event = applier.apply(task, step, change, rng)
        except ChangeError as err:
            raise ChangeError(f"world.changes.changes[{index}] ({change.label()}): {err}") from None
        if event is not None:
            events.append(event)
    return out, events


def world_at(
    base: World, changes: WorldChanges, position: int, n_tasks: int | None = None
) -> tuple[World, list[ChangeEvent]]:
    """The world before task ``position`` (from 0) starts: every change of earlier tasks (at any
    step) and this task's changes at step 0 applied to ``base``."""
    n = n_tasks if n_tasks is not None else position + 1
    due = [d for d in changes.schedule(n) if d.task - 1 < position or (d.task - 1 == position and d.step == 0)]
    return apply_changes(base, changes, due)


# --------------------------------------------------------------------------- checking


def _check_declared(index: int, change: WorldChange, n_tasks: int) -> None:
    def refuse(why: str) -> None:
        raise ChangeError(f"world.changes.changes[{index}] ({change.label()}): {why}")

    if change.action not in CHANGE_ACTIONS:
        refuse(f"action {change.action!r} is unknown; allowed: {', '.join(CHANGE_ACTIONS)}")
    if change.object not in TARGET_KINDS:
        known = change.object in KIND_INDEX
        why = "is not a target kind" if known else "does not exist"
        refuse(f"object {change.object!r} {why}; allowed: {', '.join(TARGET_KINDS)}")
    if not isinstance(change.task, int) or not 1 <= change.task <= n_tasks:
        refuse(f"task {change.task} is outside the sequence of {n_tasks} tasks; allowed: 1..{n_tasks}")
    if not isinstance(change.step, int) or change.step < 0:
        refuse(f"step {change.step} is not allowed; allowed: 0 (before the task) or an action count >= 1")
    if change.instance < 0:
        refuse(f"instance {change.instance} is not allowed; allowed: 0 and up")
    if change.action == "drift" and not 1 <= change.distance <= 4:
        refuse(f"distance {change.distance} is not allowed; allowed: 1..4 cells a task")
    if change.variant is not None:
        try:
            get_variant(change.object, change.variant)
        except ValueError as err:
            refuse(str(err))
    if change.action in ("move", "add") and change.to not in PLACES and _explicit_cell(change.to) is None:
        refuse(f"place {change.to!r} does not exist; allowed: {_describe_place()}")


def check_changes(
    changes: WorldChanges, tasks: Sequence[str], world_seeds: Sequence[int], size: int = 32, density: float = 0.08,
    variants: bool = False, max_steps: int | None = None,
) -> None:  # fmt: skip
    """Refuse, before any work, a change the sequence or a world cannot take: an unknown action,
    object or place, a task outside the sequence, a step past the task's budget, two changes of one
    object at one step, an instance the world lacks at that time, a place where it does not fit,
    or the removal of the last instance a later task asks for.

    Raises:
        ChangeError: one line naming the change (``world.changes.changes[i] (move wreck#0 ...)``).
    """
    n = len(tasks)
    for i, change in enumerate(changes.changes):
        _check_declared(i, change, n)
        if max_steps is not None and change.step >= max_steps:
            raise ChangeError(
                f"world.changes.changes[{i}] ({change.label()}): step {change.step} is past the task's "
                f"budget of {max_steps} steps; allowed: 0..{max_steps - 1}"
            )
    seen: dict[tuple[str, int, int, int], int] = {}
    for task, step, i, change, _ in changes.schedule(n):
        if change.action == "add":
            continue
        key = (change.object, change.instance, task, step)
        if key in seen and seen[key] != i:
            raise ChangeError(
                f"world.changes.changes[{i}] ({change.label()}): changes[{seen[key]}] already changes "
                f"{change.object}#{change.instance} at task {task} step {step}; one change per object and step"
            )
        seen[key] = i
    if not changes.active:
        return
    for seed in world_seeds:
        base = generate_world(int(seed), size, density, variants=variants)
        schedule = changes.schedule(n)
        world = base
        for position in range(n):
            due = [d for d in schedule if d.task - 1 == position]
            world, _ = apply_changes(world, changes, due)
            _check_goals_remain(world, tasks, position, changes, due)


def _check_goals_remain(
    world: World, tasks: Sequence[str], position: int, changes: WorldChanges, due: list[Due]
) -> None:
    """Every task from ``position`` on still has its goal in ``world``."""
    for later, name in enumerate(tasks[position:], start=position + 1):
        task = get_task(name)
        blame = next((d.number for d in reversed(due) if d.change.object == task.target), None)
        prefix = (
            f"world.changes.changes[{blame}] ({changes.changes[blame].label()})"
            if blame is not None
            else "world.changes"
        )
        if not world.instance_cells(task.target):
            raise ChangeError(f"{prefix}: leaves no {task.target} in world {world.seed} for task {later} ({name})")
        if task.instance_goal and task.variant is not None:
            try:
                world.instance_of(task.target, task.variant)
            except ValueError:
                raise ChangeError(
                    f"{prefix}: leaves no {task.target} wearing {task.variant!r} in world {world.seed} "
                    f"for task {later} ({name})"
                ) from None


def kinds_changed(events: Iterable[ChangeEvent]) -> set[str]:
    """The kinds some event changed."""
    return {e.kind for e in events}


def describe(event: ChangeEvent) -> str:
    """One line for captions and tables: ``task 3: wreck#1 moved (12, 5) -> (20, 18)``."""
    verb = {"move": "moved", "remove": "removed", "add": "added", "replace": "replaced", "drift": "drifted"}[
        event.action
    ]

    def at(c: tuple[float, float] | None) -> str:
        return "-" if c is None else f"({c[0]:.0f}, {c[1]:.0f})"

    where = f"{at(event.from_center)} -> {at(event.to_center)}"
    if event.action == "replace":
        where = f"{event.old_variant} -> {event.variant} at {at(event.to_center)}"
    step = f" step {event.step}" if event.step else ""
    return f"task {event.task}{step}: {event.kind}#{event.instance} {verb} {where}"


__all__ = [
    "CHANGE_ACTIONS",
    "ChangeError",
    "ChangeEvent",
    "WorldChange",
    "WorldChanges",
    "apply_changes",
    "check_changes",
    "describe",
    "world_at",
]
