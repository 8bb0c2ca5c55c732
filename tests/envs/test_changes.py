"""A world that changes between (and during) the tasks of a sequence: seeded, recorded, refused when
it cannot be, and invisible to the default sequences."""

from __future__ import annotations

import numpy as np
import pytest

from embodmem.envs.changes import ChangeError, WorldChange, WorldChanges, check_changes, world_at
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.envs.vector import UnderwaterVectorEnv
from embodmem.envs.world import generate_world

TASKS = ("wreck", "barrel", "wreck", "mining_robot")
EVERY_ACTION = WorldChanges(
    "every_action",
    changes=[
        WorldChange("move", "wreck", task=2, to="far"),
        WorldChange("remove", "aircraft", task=2, instance=1),
        WorldChange("add", "electrical_box", task=3, variant="white"),
        WorldChange("replace", "mining_robot", task=3),
        WorldChange("drift", "barrel", task=2),
        WorldChange("move", "pipeline", task=3, step=5),
    ],
)


def visit(env: UnderwaterEnv, tasks: tuple[str, ...], steps: int = 6) -> list[tuple[str, int]]:
    """Run each task a few forward steps as the runner resets them; (world digest, events) per task."""
    out = []
    for i, task in enumerate(tasks):
        env.reset(seed=i, options={"task": task, "world_seed": env.world_seed, "new_visit": i == 0, "start": "random"})
        for _ in range(steps):
            env.step(2)
        out.append((env.world.digest(), len(env.ground_truth().world_changes)))
    return out


def test_every_action_happens_and_is_recorded_with_task_step_and_cells() -> None:
    env = UnderwaterEnv(tasks=TASKS, world_seed=1000, changes=EVERY_ACTION)
    visit(env, TASKS)
    events = env.ground_truth().world_changes
    assert [e.action for e in events] == ["move", "remove", "drift", "add", "replace", "drift", "move", "drift"]
    move = events[0]
    assert (move.kind, move.instance, move.task, move.step) == ("wreck", 0, 2, 0)
    assert move.from_cells and move.to_cells and not set(move.from_cells) & set(move.to_cells)
    world = env.world
    assert all(world.kinds[y, x] == 0 for x, y in events[1].from_cells)  # the aircraft is gone
    assert events[3].variant == "white" and len(world.instance_cells("electrical_box")) == 2
    assert events[4].old_variant != events[4].variant
    assert (events[6].task, events[6].step) == (3, 5)  # the mid-task move, after 5 actions
    log = events[0].as_log()
    assert log["from"] == [list(c) for c in move.from_cells] and log["task"] == 2


def test_same_seeds_same_changes_and_another_change_seed_differs() -> None:
    a = visit(UnderwaterEnv(tasks=TASKS, world_seed=1001, changes=EVERY_ACTION), TASKS)
    b = visit(UnderwaterEnv(tasks=TASKS, world_seed=1001, changes=EVERY_ACTION), TASKS)
    reseeded = WorldChanges("every_action", EVERY_ACTION.changes, seed=7)
    c = visit(UnderwaterEnv(tasks=TASKS, world_seed=1001, changes=reseeded), TASKS)
    assert a == b
    assert a[0] == c[0] and a[-1][0] != c[-1][0]


def test_a_static_world_is_untouched_and_the_first_task_is_the_base_world() -> None:
    static = visit(UnderwaterEnv(tasks=TASKS, world_seed=1002), TASKS)
    changing = visit(UnderwaterEnv(tasks=TASKS, world_seed=1002, changes=EVERY_ACTION), TASKS)
    assert len({d for d, _ in static}) == 1 and all(n == 0 for _, n in static)
    assert changing[0] == static[0]
    assert UnderwaterEnv(tasks=TASKS, world_seed=1002, changes=WorldChanges()).changes is None


def test_hoisted_changes_reach_the_same_last_world_before_the_first_task() -> None:
    moves = WorldChanges("m", [WorldChange("move", "wreck", task=3), WorldChange("remove", "aircraft", task=2)])
    base = generate_world(1003)
    last, _ = world_at(base, moves, position=3, n_tasks=4)
    first, events = world_at(base, moves.hoisted(), position=0, n_tasks=4)
    assert first.digest() == last.digest() and {e.task for e in events} == {1}


def test_random_starts_are_the_same_in_a_changing_world_and_its_static_control() -> None:
    moved = WorldChanges("m", [WorldChange("move", "barrel", task=2, to="far")])
    starts = []
    for changes in (None, moved):
        env = UnderwaterEnv(tasks=("wreck", "barrel"), world_seed=1004, changes=changes)
        env.reset(seed=0, options={"task": "wreck", "new_visit": True, "start": "random"})
        env.reset(seed=9, options={"task": "barrel", "start": "random"})
        starts.append(env.start_pose)
    assert starts[0] == starts[1]


def test_the_batched_env_sees_the_same_changes_as_single_envs() -> None:
    changes = WorldChanges("m", [WorldChange("move", "wreck", task=1, step=3, to="far")])
    batch = UnderwaterVectorEnv(num_envs=2, world_seeds=[1000, 1001], task="wreck", changes=changes)
    singles = [UnderwaterEnv(task="wreck", world_seed=w, changes=changes) for w in (1000, 1001)]
    obs, _ = batch.reset(seed=[3, 4])
    for env, s in zip(singles, (3, 4)):
        env.reset(seed=s)
    for _ in range(5):
        obs, *_ = batch.step(np.array([2, 2]))
        for i, env in enumerate(singles):
            single, *_ = env.step(2)
            assert np.array_equal(obs["image"][i], single["image"])
    assert all(len(env.ground_truth().world_changes) == 1 for env in singles)


def test_a_variant_world_takes_changes_and_keeps_instance_goals_valid() -> None:
    tasks = ("description.barrel.yellow_band", "mining_robot", "description.barrel.yellow_band")
    changes = WorldChanges("g", [WorldChange("move", "barrel", task=3, instance=i, to="far") for i in range(3)])
    check_changes(changes, tasks, [1000, 1001], variants=True)
    env = UnderwaterEnv(tasks=tasks, world_seed=1000, changes=changes)
    visit(env, tasks, steps=2)
    assert len(env.ground_truth().world_changes) == 3 and env.world.has_variants


@pytest.mark.parametrize(
    ("change", "tasks", "message"),
    [
        (WorldChange("move", "whale", task=2), TASKS, "object 'whale' does not exist"),
        (WorldChange("move", "rock", task=2), TASKS, "object 'rock' is not a target kind"),
        (WorldChange("move", "wreck", task=2, instance=7), TASKS, "object wreck#7 does not exist in world 1000"),
        (WorldChange("move", "wreck", task=9), TASKS, "task 9 is outside the sequence of 4 tasks"),
        (WorldChange("move", "wreck", task=2, to="atlantis"), TASKS, "place 'atlantis' does not exist"),
        (WorldChange("move", "wreck", task=2, to="0:0"), TASKS, "place '0:0' does not exist in world 1000"),
        (WorldChange("move", "wreck", task=2, to="99:3"), TASKS, "place '99:3' is outside the 32x32 world"),
        (WorldChange("remove", "barrel", task=2), TASKS, "leaves no barrel in world 1000 for task 2"),
        (WorldChange("teleport", "wreck", task=2), TASKS, "action 'teleport' is unknown"),
        (WorldChange("replace", "wreck", task=2, variant="golden"), TASKS, "variant 'golden' of 'wreck' is unknown"),
        (WorldChange("move", "wreck", task=2, step=500), TASKS, "step 500 is past the task's budget of 400 steps"),
    ],
)
def test_bad_changes_are_refused_in_one_line_naming_the_change(
    change: WorldChange, tasks: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ChangeError) as err:
        check_changes(WorldChanges("bad", [change]), tasks, [1000], max_steps=400)
    text = str(err.value)
    assert "\n" not in text and text.startswith("world.changes.changes[0] (") and message in text


def test_two_changes_of_one_object_at_one_step_are_refused() -> None:
    twice = WorldChanges("bad", [WorldChange("move", "wreck", task=2), WorldChange("drift", "wreck", task=1)])
    with pytest.raises(
        ChangeError,
        match=r"^world.changes.changes\[1\] \(drift wreck#0 at task 1 step 0\): changes\[0\] already changes wreck#0 at task 2 step 0",
    ):
        check_changes(twice, TASKS, [1000])


def test_a_bad_change_in_the_config_stops_the_run_before_any_work() -> None:
    from hydra import compose, initialize_config_module

    from embodmem.config import ConfigError, validate

    overrides = ["world/changes=moved_half", "experiment.sequence=revisit_shallow8"]
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        validate(compose("config", overrides=overrides))
        bad = compose("config", overrides=[*overrides, "world.changes.changes.2.object=kraken"])
    with pytest.raises(
        ConfigError,
        match=r"^world.changes.changes\[2\] \(move kraken#0 at task 5 step 0\): object 'kraken' does not exist",
    ):
        validate(bad)


def test_the_video_map_draws_where_a_moved_object_went() -> None:
    from embodmem.video.panels import MapPainter
    from embodmem.video.snapshots import Scene, StepRecord

    changes = WorldChanges("m", [WorldChange("move", "barrel", task=2, to="far")])
    env = UnderwaterEnv(tasks=("wreck", "barrel"), world_seed=1000, changes=changes)
    obs, _ = env.reset(seed=0, options={"task": "wreck", "new_visit": True})
    painter = MapPainter(Scene.from_env(env), 256)
    before = StepRecord.capture(env.ground_truth(), obs, None)
    obs, _ = env.reset(seed=1, options={"task": "barrel"})
    after = StepRecord.capture(env.ground_truth(), obs, None)
    assert after.changes and not before.changes
    trajectory = np.array([env.ground_truth().agent_pos], dtype=np.float64)
    x, y = after.changes[0].to_cells[0]
    px = painter.px
    drawn = painter.draw(trajectory, after, None)[y * px + px // 2, x * px + px // 2]
    assert not np.array_equal(painter.draw(trajectory, before, None)[y * px + px // 2, x * px + px // 2], drawn)


def test_envs_of_one_world_share_its_seabed_and_a_change_in_one_leaves_the_others_alone() -> None:
    """Envs of one world seed share the generated seabed; a changing env copies it before changing
    it, so a static env of the same world still sees the world as generated."""
    static = UnderwaterEnv(tasks=TASKS, world_seed=1003)
    changing = UnderwaterEnv(tasks=TASKS, world_seed=1003, changes=EVERY_ACTION)
    assert changing.world is static.world
    generated = generate_world(1003).digest()
    visit(changing, TASKS)
    assert changing.world is not static.world and changing.world.digest() != generated
    assert static.world.digest() == generated and static.grid.encode().tobytes() == (
        UnderwaterEnv(tasks=TASKS, world_seed=1003).grid.encode().tobytes()
    )
