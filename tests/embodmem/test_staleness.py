"""Staleness measures: a scripted agent that trusts a stale memory is caught going to the empty
place, one that reads the live world is not, a static world's records carry none of the fields,
and the tables pair episodes with their controls and cluster the intervals by world."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from embodmem.agents.base import Agent, Observation
from embodmem.agents.mapping import step_toward
from embodmem.agents.oracle import OracleAgent
from embodmem.condition import Condition
from embodmem.envs.changes import WorldChange, WorldChanges
from embodmem.envs.geodesic import bfs_distance
from embodmem.envs.spec import Action
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.metrics_record import EpisodeRecord
from embodmem.runner import SequenceSpec, run_sequence
from embodmem.staleness import correction_summary, spl_by_goal, steps_lost

TASKS = ("barrel", "wreck", "barrel")
MOVED = WorldChanges("moved", [WorldChange("move", "barrel", task=3, to="far")])


class StaleOracle(Agent):
    """Walks to where the target stood in the unchanged world, then (nothing there) to where it is
    now: what a memory that never updates does, scripted from the ground truth."""

    name = "stale_oracle"

    def __init__(self, env: UnderwaterEnv):
        super().__init__()
        self.env = env
        self.fresh = False

    def reset(self, observation: Observation, spec: object) -> None:  # type: ignore[override]
        super().reset(observation, spec)  # type: ignore[arg-type]
        self.fresh = False

    def act(self, observation: Observation) -> int:
        truth = self.env.ground_truth()
        if not self.fresh:
            old = self.env._task_maps(truth.task, self.env._base_world)["success"]
            field = bfs_distance(truth.world.free(), old & truth.world.free())
            x, y = truth.agent_pos
            if field[y, x] == 0 or not np.isfinite(field[y, x]):
                self.fresh = True
        if self.fresh:
            field = truth.geodesic_field
        x, y = truth.agent_pos
        if field[y, x] == 0:
            return int(Action.STOP)
        best = min(((x + dx, y + dy) for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1))), key=lambda c: field[c[1], c[0]])
        return step_toward((x, y, truth.agent_dir), best)


def run(agent_cls: type[Agent], changes: WorldChanges | None, world: int = 1000) -> list[EpisodeRecord]:
    env = UnderwaterEnv(tasks=TASKS, world_seed=world, changes=changes, max_steps=300)
    spec = SequenceSpec("revisit", TASKS, world, 0, Condition.single)
    return [r.record for r in run_sequence(env, agent_cls(env), spec, "t")]  # type: ignore[call-arg]


def test_a_stale_memory_visits_the_empty_place_and_the_live_map_does_not() -> None:
    stale = run(StaleOracle, MOVED)
    live = run(OracleAgent, MOVED)
    moved = stale[2]
    assert moved.stat("goal_changed") is True and moved.stat("world_changes") == "moved"
    assert moved.stat("stale_target_visits") == 1 and moved.stat("steps_to_correct") >= 1
    assert live[2].stat("stale_target_visits") == 0 and live[2].stat("steps_to_correct") is None
    assert (moved.steps or 0) > (live[2].steps or 0) and moved.success == 1
    assert [r.stat("goal_changed") for r in stale] == [False, False, True]
    assert [r.stat("changes_so_far") for r in stale] == [0, 0, 1]


def test_a_static_world_writes_the_records_it_always_wrote() -> None:
    records = run(OracleAgent, None)
    for field in ("world_changes", "goal_changed", "stale_target_visits", "steps_to_correct", "changes_so_far"):
        assert all(field not in r.plain() for r in records)


def test_the_fresh_memory_control_has_nothing_stale() -> None:
    fresh = run(StaleOracle, MOVED.hoisted())
    assert fresh[2].stat("goal_changed") is False and fresh[2].stat("stale_target_visits") == 0
    assert fresh[2].stat("world_changes") == "moved_fresh"


def record(world: int, agent: str, steps: int, changed: bool, spl: float, condition: str = "warm") -> EpisodeRecord:
    return EpisodeRecord.model_validate(
        {"agent": agent, "condition": condition, "world_seed": world, "seed": 0, "sequence": "s", "task_index": 2,
         "steps": steps, "spl": spl, "success": 1, "goal_changed": changed, "stale_target_visits": int(changed),
         "steps_to_correct": 5 if changed else None, "world_changes": "m"}
    )  # fmt: skip


def test_tables_pair_episodes_with_the_control_and_cluster_by_world() -> None:
    stale = [record(w, "memory", 50 + w, True, 0.4) for w in range(5)] + [
        record(w, "memory", 20, False, 0.9) for w in range(5)
    ]
    control = [record(w, "mapped", 30, True, 0.8, "single") for w in range(5)]
    lost = steps_lost(stale, control, "memory", "mapped", "ground-truth map", control_condition="single")
    assert lost is not None and lost.episodes == 5 and lost.worlds == 5
    assert lost.steps_lost == 22.0 and lost.ci[0] <= 22.0 <= lost.ci[1]
    rows = {r.goals: r for r in spl_by_goal(stale, "memory")}
    assert rows["changed"].spl == 0.4 and rows["unchanged"].spl == 0.9
    assert correction_summary(stale, "memory") == (5, 5.0)


def test_a_changing_worlds_episode_logs_its_changes_and_replays(tmp_path: Path) -> None:
    from embodmem.envs.config import EnvConfig
    from embodmem.envs.entry import make_env
    from embodmem.replay import load_log, simulate
    from embodmem.runner import ExperimentPlan, RunWriter, run_experiment

    changes = WorldChanges(
        "m", [WorldChange("move", "barrel", task=2, to="far"), WorldChange("drift", "wreck", task=2, step=3)]
    )
    env_cfg = EnvConfig(max_steps=200)
    plan = ExperimentPlan("r", [("revisit", TASKS)], [1001], 0, "dev", "random", [("oracle", Condition.single)])
    run_experiment(
        plan,
        lambda t, w: make_env(env_cfg, t, w, changes),
        lambda n, e: OracleAgent(e),
        RunWriter(tmp_path, True, env_cfg),
    )
    logs = sorted((tmp_path / "episodes").glob("*task=3*.json"))
    log = load_log(logs[0])
    assert log.visit_position == 2 and log.world_change_set is not None and log.world_changes
    assert [e["action"] for e in log.world_changes] == ["move", "drift", "drift"]
    assert simulate(log, logs[0]).summary.steps == len(log.actions)
    static = tmp_path / "static"
    run_experiment(
        plan, lambda t, w: make_env(env_cfg, t, w), lambda n, e: OracleAgent(e), RunWriter(static, True, env_cfg)
    )
    plain = next((static / "episodes").glob("*task=3*.json")).read_text()
    assert "world_change" not in plain and "visit_position" not in plain


def _changing_record(agent: str, condition: str, world: int, task: int, **fields: object) -> EpisodeRecord:
    values = {"agent": agent, "condition": condition, "world_seed": world, "seed": 0, "sequence": "s",
              "task_index": task, "steps": 30, "success": 1, "world_changes": "moved_half", **fields}  # fmt: skip
    return EpisodeRecord.model_validate(values)


def test_the_printed_report_counts_each_agent_and_condition_from_its_own_records() -> None:
    """Episodes, stale visits (first tasks too), corrections and their median, SPL after the first task
    split by changed goal with a world-clustered interval (``[-]`` from one world, ``-`` for none);
    numbers right-aligned, text left-aligned, no trailing blanks."""
    from embodmem.staleness import staleness_report

    records = [
        _changing_record("memory", "warm", 0, 2, spl=0.2, goal_changed=True, stale_target_visits=3, steps_to_correct=4),
        _changing_record("memory", "warm", 1, 2, spl=0.4, goal_changed=True, stale_target_visits=1, steps_to_correct=8),
        _changing_record("memory", "warm", 0, 3, spl=0.9, goal_changed=False, stale_target_visits=0),
        _changing_record("memory", "warm", 1, 3, spl=0.7, goal_changed=False, stale_target_visits=0),
        _changing_record("memory", "warm", 1, 1, spl=0.1, goal_changed=False, stale_target_visits=2),  # first task
        _changing_record("memory", "cold", 0, 2, spl=0.5, goal_changed=True, stale_target_visits=0, steps_to_correct=5),
        _changing_record(
            "textlog", "warm", 2, 2, spl=0.25, goal_changed=True, stale_target_visits=12, world_changes="drifting"
        ),
    ]
    assert staleness_report(records) == "\n".join(
        [
            "== changing world: drifting, moved_half (stale memory) ==",
            "agent    cond  episodes  stale visits  corrected  median steps to correct  SPL changed (95% CI)  SPL unchanged (95% CI)",
            "-------  ----  --------  ------------  ---------  -----------------------  --------------------  ----------------------",
            "memory   warm         5             6          2                        6  0.30 [0.20, 0.40]     0.80 [0.70, 0.90]",
            "memory   cold         1             0          1                        5  0.50 [-]              -",
            "textlog  warm         1            12          0                        -  0.25 [-]              -",
        ]
    )  # fmt: skip
    assert staleness_report([]) is None
    static = EpisodeRecord.model_validate({"agent": "memory", "condition": "warm", "world_seed": 0, "seed": 0,
                                           "sequence": "s", "task_index": 2, "steps": 30, "spl": 0.5, "success": 1})  # fmt: skip
    assert staleness_report([static]) is None
