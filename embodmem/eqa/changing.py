"""Visits to a world that changes between tasks, and the questions only some memories can answer.

A *visit* is several tasks (tours of ``leg_steps`` steps, one a task) in one world whose objects are
moved, removed, added and re-dressed between the tasks (:mod:`embodmem.envs.changes`, the same
changes a ``world.changes`` sequence uses, drawn here per world and seeded: :func:`draw_changes`).
Each task is walked by the tour guide from its own start (the first fixed start, the second, a
random one, the first again), so some things are seen in one task only, some again later, some
never. The ground truth (:class:`VisitTruth`) is what entered the camera, task by task, with every
object followed through the changes by identity (a removal renumbers the later instances of its
kind; the truth does not). Only the question generator and the oracle read it.

The question types (:data:`~embodmem.eqa.files.CHANGING_QUESTION_TYPES`):

- ``first_seen``: which of two kinds was seen first (first seen in different tasks);
- ``tasks_ago``: how many tasks ago a kind was last seen (0: in the last task);
- ``where_before``: where a one-of-its-kind object was before it moved (seen at both places; a point);
- ``appearance``: what an object looked like the last time it was seen (its variant's colour or
  marking in words; the kind is named, the variant never: a label log cannot answer);
- ``count_now``: how many of a kind were seen in the last task, after some were removed or added
  (asked only when that differs from the number seen over the whole visit);
- ``abstention``: what a kind looked like in one task, or ``not seen`` when none entered the camera
  in that task (scored apart as well: correct abstentions, false claims, false abstentions).

Every type's answers are balanced per kind (per pair of kinds for ``first_seen``) over the split
(:func:`balance_visits`), so an answerer that reads only the question is at chance.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from embodmem.agents.base import Observation, RecognitionEmbedder
from embodmem.envs.changes import ChangeError, ChangeEvent, WorldChange, WorldChanges, check_changes
from embodmem.envs.config import EnvConfig
from embodmem.envs.objects import KIND_VARIANTS, TARGET_KINDS
from embodmem.envs.spec import SensorSpec
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.envs.world import generate_world
from embodmem.eqa.files import (
    CHANGING_QUESTION_TYPES,
    POINT_TYPES,
    Question,
    QuestionSet,
    QuestionType,
    Truth,
    question_type,
)
from embodmem.eqa.questions import MIN_FRAMES, attribute_choices, phrase
from embodmem.eqa.tour import TOUR_TASK, TourGuide

VISIT_TASKS = 4
"""Tasks of a visit: enough for "how many tasks ago" to take four answers."""
LEG_STEPS = 60
"""Steps of each task's tour."""
NOT_SEEN = "not seen"
"""The abstention answer."""
LEG_STARTS: tuple[str, ...] = ("fixed0", "random")
"""Where each task's tour starts: the first at the world's first fixed start, every later one at a
random start (drawn with the world and the task), so that tasks cover different ground and a thing
may be seen in one task and not again."""
MOVE_TO = "random"
"""Where a one-of-its-kind object moves: a random place at least ``MIN_MOVE_CELLS`` away."""
PLAN_TRIES = 20
"""Change plans drawn for a world before it is left out (a world too cramped for a far move)."""


class ChangingQuestionError(ValueError):
    """Bad settings of the changing-world questions (one line naming the setting)."""


def check_types(
    types: list[str] | tuple[str, ...], key: str = "experiment.eqa.changing.types"
) -> tuple[QuestionType, ...]:
    """The question types named, each one of the changing family; an unknown name is refused in
    one line.

    Example:
        >>> [t.value for t in check_types(["tasks_ago", "abstention"])]
        ['tasks_ago', 'abstention']
        >>> check_types(["colour"])
        Traceback (most recent call last):
        ...
        embodmem.eqa.changing.ChangingQuestionError: experiment.eqa.changing.types: 'colour' is unknown; allowed: first_seen, tasks_ago, where_before, appearance, count_now, abstention
    """
    if not types:
        raise ChangingQuestionError(f"{key}: empty; allowed: one or more of {', '.join(CHANGING_QUESTION_TYPES)}")
    for name in types:
        if name not in CHANGING_QUESTION_TYPES:
            raise ChangingQuestionError(f"{key}: {name!r} is unknown; allowed: {', '.join(CHANGING_QUESTION_TYPES)}")
    return tuple(question_type(name) for name in types)


# ----------------------------------------------------------------------------- visits


@dataclass(frozen=True)
class Leg:
    """One task's tour: where it started and the actions (one digit each)."""

    start_pose: tuple[int, int, int]
    actions: str
    end_pose: tuple[int, int, int]


@dataclass(frozen=True)
class Visit:
    """Several tasks' tours in one changing world: enough to replay it bit for bit."""

    world_seed: int
    changes: WorldChanges
    legs: tuple[Leg, ...]
    leg_steps: int

    @property
    def key(self) -> str:
        return f"{self.world_seed}:visit"

    @property
    def steps_per_task(self) -> int:
        """Global step numbers per task: task ``k``'s step ``s`` is ``k * steps_per_task + s``."""
        return self.leg_steps + 1


def task_of(step: int, steps_per_task: int) -> int:
    """The task (from 0) a global step belongs to.

    >>> task_of(60, 61), task_of(61, 61)
    (0, 1)
    """
    return step // steps_per_task


def draw_changes(world_seed: int, tasks: int = VISIT_TASKS, env: EnvConfig | None = None) -> WorldChanges | None:
    """A seeded plan of changes for ``world_seed``: before the first task every instance gets a
    look drawn uniformly from its kind's three (so looks are a fair guess); then, between tasks,
    two one-of-their-kind objects move far, one instance of a kind with several is removed, one is
    added (a random look) to another such kind, and two instances change their look. None when no
    plan fits the world in ``PLAN_TRIES`` draws."""
    env = env or EnvConfig()
    world = generate_world(world_seed, env.size, env.obstacle_density)
    counts = {k: len(world.instance_cells(k)) for k in TARGET_KINDS}
    singles = [k for k in TARGET_KINDS if counts[k] == 1]
    several = [k for k in TARGET_KINDS if counts[k] >= 2]
    rng = random.Random(world_seed)
    for _ in range(PLAN_TRIES):
        changes: list[WorldChange] = []
        looks: dict[tuple[str, int], int] = {}
        for kind in TARGET_KINDS:
            for i in range(counts[kind]):
                looks[(kind, i)] = v = rng.randrange(len(KIND_VARIANTS[kind]))
                if v:
                    changes.append(
                        WorldChange("replace", kind, task=1, instance=i, variant=KIND_VARIANTS[kind][v].name)
                    )
        for kind in singles:
            changes.append(WorldChange("move", kind, task=rng.randint(2, tasks), to=MOVE_TO))
        shuffled = rng.sample(several, len(several))
        removals, additions = shuffled[: len(shuffled) // 2], shuffled[len(shuffled) // 2 :]
        for kind in removals:
            changes.append(
                WorldChange("remove", kind, task=rng.randint(2, tasks), instance=rng.randrange(counts[kind]))
            )
        for kind in additions:
            new_look = KIND_VARIANTS[kind][rng.randrange(len(KIND_VARIANTS[kind]))].name
            changes.append(WorldChange("add", kind, task=rng.randint(2, tasks), to="random", variant=new_look))
        dressed = [key for key in looks if key[0] not in removals]
        for kind, i in rng.sample(dressed, 2):
            others = [v for v in range(len(KIND_VARIANTS[kind])) if v != looks[(kind, i)]]
            variant = KIND_VARIANTS[kind][rng.choice(others)].name
            changes.append(WorldChange("replace", kind, task=rng.randint(2, tasks), instance=i, variant=variant))
        plan = WorldChanges(name="eqa_visit", changes=changes, seed=world_seed)
        try:
            check_changes(plan, (TOUR_TASK,) * tasks, [world_seed], env.size, env.obstacle_density)
        except ChangeError:
            continue
        return plan
    return None


@dataclass
class LegSeen:
    """One object in one task's frames: how often clearly, when, where and how it looked."""

    frames: int
    first_step: int
    last_step: int
    cells: tuple[tuple[int, int], ...]
    variant: str
    """Its look's words (``Variant.phrase``) at its last clear sighting in the task."""


@dataclass
class ObjectTruth:
    """One object followed through the changes (its identity survives renumbering)."""

    id: int
    kind: str
    legs: dict[int, LegSeen] = field(default_factory=dict)
    moves: list[tuple[int, tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]] = field(default_factory=list)
    """(task from 1, cells before, cells after) of every move or drift."""

    def clear(self, leg: int) -> bool:
        seen = self.legs.get(leg)
        return seen is not None and seen.frames >= MIN_FRAMES

    def borderline(self, leg: int) -> bool:
        seen = self.legs.get(leg)
        return seen is not None and 0 < seen.frames < MIN_FRAMES


@dataclass
class VisitTruth:
    """What entered the camera on a visit, task by task (privileged)."""

    tasks: int
    steps_per_task: int
    world_size: int
    objects: dict[int, ObjectTruth] = field(default_factory=dict)
    glimpsed: list[set[str]] = field(default_factory=list)
    """Per task, the target kinds with any pixel on screen in any frame."""
    events: list[ChangeEvent] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[ObjectTruth]:
        return [o for o in self.objects.values() if o.kind == kind]

    def changed_count(self, kind: str) -> bool:
        """An instance of ``kind`` was added or removed after the first task began."""
        return any(e.kind == kind and e.action in ("add", "remove") and e.task >= 2 for e in self.events)


class _Identities:
    """Object ids by (kind, instance number), kept through removals and additions."""

    def __init__(self, env: UnderwaterEnv, truth: VisitTruth) -> None:
        base = generate_world(env.world_seed, env.width, env.obstacle_density)
        self.ids: dict[str, list[int]] = {}
        self.truth = truth
        for kind in TARGET_KINDS:
            self.ids[kind] = []
            for _ in base.instance_cells(kind):
                self._new(kind)
        self.applied = 0

    def _new(self, kind: str) -> None:
        oid = len(self.truth.objects)
        self.truth.objects[oid] = ObjectTruth(oid, kind)
        self.ids[kind].append(oid)

    def follow(self, events: list[ChangeEvent]) -> None:
        for e in events[self.applied :]:
            if e.action == "remove":
                self.ids[e.kind].pop(e.instance)
            elif e.action == "add":
                self._new(e.kind)
            elif e.action in ("move", "drift"):
                self.truth.objects[self.ids[e.kind][e.instance]].moves.append((e.task, e.from_cells, e.to_cells))
        self.applied = len(events)
        self.truth.events = list(events)


def _record(env: UnderwaterEnv, truth: VisitTruth, ids: _Identities, leg: int, step: int) -> None:
    ids.follow(env.change_events)
    truth.glimpsed[leg].update(k for k in env.visible_pixels() if k in TARGET_KINDS)
    world = env.world
    for kind, inst in sorted(env.visible_instances()):
        obj = truth.objects[ids.ids[kind][inst]]
        variant = world.variant_of(kind, inst).phrase if world.has_variants else KIND_VARIANTS[kind][0].phrase
        cells = tuple((int(x), int(y)) for x, y in world.instance_cells(kind)[inst])
        seen = obj.legs.get(leg)
        if seen is None:
            obj.legs[leg] = LegSeen(1, step, step, cells, variant)
        else:
            seen.frames += 1
            seen.last_step, seen.cells, seen.variant = step, cells, variant


def make_visit_env(env_config: EnvConfig, world_seed: int, changes: WorldChanges, tasks: int) -> UnderwaterEnv:
    return UnderwaterEnv(tasks=(TOUR_TASK,) * tasks, world_seed=world_seed, config=env_config, changes=changes)


def _leg_seed(world_seed: int, leg: int) -> int:
    return world_seed * 16 + leg


def _start_leg(env: UnderwaterEnv, leg: int, pose: tuple[int, int, int] | None) -> tuple[Observation, SensorSpec]:
    """Reset into task ``leg`` at ``pose`` (None: find the leg's start first, then reset there, so
    that the walk and every replay draw the same fish)."""
    if pose is None:
        start = LEG_STARTS[min(leg, len(LEG_STARTS) - 1)]
        env.reset(seed=_leg_seed(env.world_seed, leg), options={"task_index": leg, "start": start})
        pose = tuple(int(v) for v in env.start_pose)  # type: ignore[assignment]
    obs, _ = env.reset(seed=_leg_seed(env.world_seed, leg), options={"task_index": leg, "start_pose": pose})
    return obs, env.sensor_spec


def walk_visit(
    env_config: EnvConfig,
    world_seed: int,
    changes: WorldChanges,
    embedder: RecognitionEmbedder,
    tasks: int = VISIT_TASKS,
    leg_steps: int = LEG_STEPS,
) -> tuple[Visit, VisitTruth]:
    """Walk every task of the visit with a fresh :class:`~embodmem.eqa.tour.TourGuide`; the visit and
    what the camera showed."""
    env = make_visit_env(env_config, world_seed, changes, tasks)
    truth = VisitTruth(tasks, leg_steps + 1, env.width, glimpsed=[set() for _ in range(tasks)])
    ids = _Identities(env, truth)
    legs = []
    for leg in range(tasks):
        obs, spec = _start_leg(env, leg, None)
        start = (int(env.agent_pos[0]), int(env.agent_pos[1]), int(env.agent_dir))
        guide = TourGuide(embedder)
        guide.reset(obs, spec)
        base = leg * (leg_steps + 1)
        _record(env, truth, ids, leg, base)
        actions = []
        for step in range(1, leg_steps + 1):
            action = guide.act(obs)
            actions.append(str(action))
            obs, _, terminated, truncated, _ = env.step(action)
            _record(env, truth, ids, leg, base + step)
            if terminated or truncated:
                break
        end = (int(env.agent_pos[0]), int(env.agent_pos[1]), int(env.agent_dir))
        legs.append(Leg(start, "".join(actions), end))
    return Visit(world_seed, changes, tuple(legs), leg_steps), truth


class VisitMismatchError(ValueError):
    """A replayed visit did not end a task where it was recorded to."""


def replay_visit(env_config: EnvConfig, visit: Visit) -> Iterator[tuple[int, Observation, SensorSpec]]:
    """Every task's observations in order, with global step numbers (:func:`task_of`)."""
    env = make_visit_env(env_config, visit.world_seed, visit.changes, len(visit.legs))
    for leg, recorded in enumerate(visit.legs):
        obs, spec = _start_leg(env, leg, recorded.start_pose)
        base = leg * visit.steps_per_task
        yield base, obs, spec
        for step, a in enumerate(recorded.actions, start=1):
            obs, _, _, _, _ = env.step(int(a))
            yield base + step, obs, env.sensor_spec
        end = (int(env.agent_pos[0]), int(env.agent_pos[1]), int(env.agent_dir))
        if end != recorded.end_pose:
            raise VisitMismatchError(
                f"visit {visit.key} task {leg + 1}: the replay ended at {end}, the walk at {recorded.end_pose}"
            )


# ----------------------------------------------------------------------------- questions


def tasks_ago_choices(tasks: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(tasks))


COUNT_CHOICES: tuple[str, ...] = ("1", "2")
"""Answers of ``count_now``: a 60-step task rarely shows three instances of a kind, so a third
answer would leave every kind's group without one (and out of the balanced set)."""


def generate_visit(visit: Visit, truth: VisitTruth, rng: random.Random) -> list[tuple[Question, Truth]]:
    """Every question of the changing family the visit's ground truth answers unambiguously."""
    out: list[tuple[Question, Truth]] = []
    tasks = truth.tasks

    def add(qtype: QuestionType, text: str, kinds: tuple[str, ...], answer: Truth, choices: tuple[str, ...]) -> None:
        qid = f"{visit.key}:{qtype.value}:{sum(o[0].type == qtype for o in out)}"
        out.append((Question(qid, visit.key, qtype, text, kinds, choices), answer))

    clear_legs = {
        k: sorted({leg for o in truth.of_kind(k) for leg in range(tasks) if o.clear(leg)}) for k in TARGET_KINDS
    }
    glimpse_legs = {k: [leg for leg in range(tasks) if k in truth.glimpsed[leg]] for k in TARGET_KINDS}
    seen_kinds = [k for k in TARGET_KINDS if clear_legs[k]]

    # first_seen: first clear sighting in different tasks, nothing of either glimpsed before it
    first = {k: clear_legs[k][0] for k in seen_kinds if glimpse_legs[k][0] == clear_legs[k][0]}
    firsts = sorted(first)
    for i, a in enumerate(firsts):
        for b in firsts[i + 1 :]:
            if first[a] != first[b]:
                pair = [a, b]
                rng.shuffle(pair)
                add(
                    QuestionType.first_seen,
                    f"Over all your tasks, which did you see first: {phrase(pair[0])} or {phrase(pair[1])}?",
                    (pair[0], pair[1]),
                    Truth(a if first[a] < first[b] else b),
                    (pair[0], pair[1]),
                )
    # tasks_ago: the last task with a clear sighting, nothing glimpsed after it
    for kind in seen_kinds:
        last = clear_legs[kind][-1]
        if glimpse_legs[kind][-1] == last:
            add(
                QuestionType.tasks_ago,
                f"How many tasks ago did you last see {phrase(kind)}? (0: in the last task, 1: the one before, ...)",
                (kind,),
                Truth(str(tasks - 1 - last)),
                tasks_ago_choices(tasks),
            )
    # where_before: the only one of its kind, seen before its first move and after it
    for kind in TARGET_KINDS:
        objects = truth.of_kind(kind)
        if len(objects) != 1 or not objects[0].moves:
            continue
        obj = objects[0]
        moved_task, before, _ = obj.moves[0]
        legs_before = [leg for leg in range(moved_task - 1) if obj.clear(leg)]
        legs_after = [leg for leg in range(moved_task - 1, tasks) if obj.clear(leg)]
        if legs_before and legs_after:
            add(
                QuestionType.where_before,
                f"{phrase(kind).capitalize()} moved while you were away: point to where it was before it moved "
                "(x, y in cells).",
                (kind,),
                Truth(cells=tuple(before)),
                (),
            )
    # appearance: one object of the kind seen over the visit; its look at the last clear sighting
    for kind in seen_kinds:
        objects = [o for o in truth.of_kind(kind) if any(o.clear(leg) for leg in range(tasks))]
        others = [o for o in truth.of_kind(kind) if o not in objects and o.legs]
        if len(objects) == 1 and not others:
            obj = objects[0]
            last = max(leg for leg in range(tasks) if obj.clear(leg))
            add(
                QuestionType.appearance,
                f"What did {phrase(kind)} look like the last time you saw it?",
                (kind,),
                Truth(obj.legs[last].variant),
                attribute_choices(kind),
            )
    # count_now: a kind whose instances were added or removed; the last task's count differs from
    # the whole visit's
    last_leg = tasks - 1
    for kind in seen_kinds:
        if not truth.changed_count(kind):
            continue
        objects = truth.of_kind(kind)
        if any(o.borderline(last_leg) for o in objects):
            continue
        now = sum(o.clear(last_leg) for o in objects)
        ever = sum(any(o.clear(leg) for leg in range(tasks)) for o in objects)
        choices = COUNT_CHOICES
        if 1 <= now <= len(choices) and now != ever:
            add(
                QuestionType.count_now,
                f"Some {phrase(kind)} sites were removed or added during your visit: how many distinct "
                f"{phrase(kind)} sites did you see in the last task (1 or 2)?",
                (kind,),
                Truth(str(now)),
                choices,
            )
    # abstention: in one task, the look of the only one of the kind seen, or "not seen"
    for leg in range(tasks):
        for kind in TARGET_KINDS:
            objects = truth.of_kind(kind)
            seen = [o for o in objects if o.clear(leg)]
            if kind not in truth.glimpsed[leg]:
                answer = NOT_SEEN
            elif len(seen) == 1 and not any(o.borderline(leg) for o in objects if o is not seen[0]):
                answer = seen[0].legs[leg].variant
            else:
                continue
            add(
                QuestionType.abstention,
                f"In task {leg + 1}, what did {phrase(kind)} look like? If you saw none in that task, say '{NOT_SEEN}'.",
                (kind,),
                Truth(answer),
                (*attribute_choices(kind), NOT_SEEN),
            )
    return out


def abstention_task(question: Question) -> int:
    """The task (from 0) an abstention question asks about (its text names it, from 1).

    >>> abstention_task(Question("q", "t", QuestionType.abstention, "In task 3, what did ...", ("barrel",)))
    2
    """
    found = re.match(r"In task (\d+),", question.text)
    if found is None:
        raise ValueError(f"question {question.id}: no task named in {question.text!r}")
    return int(found.group(1)) - 1


def balance_visits(items: list[tuple[Question, Truth]], seed: int) -> list[tuple[Question, Truth]]:
    """Per type and kind asked about (per pair of kinds for ``first_seen``), keep equally many
    questions of every answer the choices allow (the rarest sets the number; a group lacking an
    answer is left out), drawn with ``seed``; points (``where_before``) are kept whole."""
    rng = random.Random(seed)
    groups: dict[tuple[str, str], dict[str, list[tuple[Question, Truth]]]] = defaultdict(lambda: defaultdict(list))
    kept: list[tuple[Question, Truth]] = []
    for q, t in items:
        if q.type.value in POINT_TYPES:
            kept.append((q, t))
        else:
            groups[(q.type.value, "+".join(sorted(q.kinds)))][t.answer].append((q, t))
    for (_, _), by_answer in sorted(groups.items()):
        choices = next(iter(by_answer.values()))[0][0].choices
        if any(c not in by_answer for c in choices):
            continue
        n = min(len(by_answer[c]) for c in choices)
        for c in choices:
            kept += rng.sample(by_answer[c], n)
    order = {q.id: i for i, (q, _) in enumerate(items)}
    return sorted(kept, key=lambda qt: order[qt[0].id])


@dataclass
class VisitSet:
    """A split's visits and their balanced questions."""

    split: str
    env: EnvConfig
    tasks: int
    leg_steps: int
    visits: list[Visit] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    truths: dict[str, Truth] = field(default_factory=dict)
    skipped: list[int] = field(default_factory=list)
    """Worlds left out: no change plan fits them."""

    def by_visit(self) -> dict[str, list[Question]]:
        out: dict[str, list[Question]] = defaultdict(list)
        for q in self.questions:
            out[q.tour].append(q)
        return out

    def as_question_set(self) -> QuestionSet:
        """The questions as a :class:`~embodmem.eqa.files.QuestionSet` (no tours): what the blind
        answerer's prior and the per-type scores read."""
        return QuestionSet(self.split, self.env, self.tasks * self.leg_steps, [], self.questions, self.truths)


def generate_visit_set(
    split: str,
    world_seeds: list[int],
    embedder: RecognitionEmbedder,
    env: EnvConfig | None = None,
    types: tuple[QuestionType, ...] | None = None,
    tasks: int = VISIT_TASKS,
    leg_steps: int = LEG_STEPS,
) -> VisitSet:
    """Walk one visit per world (with its drawn changes), generate its questions (only ``types``,
    if given), balance them over the split."""
    env = env or EnvConfig()
    vs = VisitSet(split, env, tasks, leg_steps)
    items = []
    for world_seed in world_seeds:
        plan = draw_changes(world_seed, tasks, env)
        if plan is None:
            vs.skipped.append(world_seed)
            continue
        visit, truth = walk_visit(env, world_seed, plan, embedder, tasks, leg_steps)
        vs.visits.append(visit)
        items += [
            (q, t)
            for q, t in generate_visit(visit, truth, random.Random(world_seed))
            if types is None or q.type in types
        ]
    for q, t in balance_visits(items, seed=len(world_seeds)):
        vs.questions.append(q)
        vs.truths[q.id] = t
    return vs
