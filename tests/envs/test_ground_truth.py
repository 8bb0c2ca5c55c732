"""The env's ground truth (envs/ground_truth.py): one view of the privileged state, read by the
measures, the runner, the oracle and the video; Gymnasium's info carries the same numbers."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from embodmem.agents.oracle import OracleAgent
from embodmem.envs.ground_truth import GroundTruth
from embodmem.envs.underwater import UnderwaterEnv

ROOT = Path(__file__).resolve().parents[2]


def test_the_view_and_the_info_carry_the_same_numbers_at_every_step() -> None:
    env = UnderwaterEnv(tasks=("wreck",), world_seed=3, max_steps=40)
    obs, info = env.reset(seed=1, options={"start": "random"})
    truth = env.ground_truth()
    assert truth.info() == info
    oracle = OracleAgent(env)
    oracle.reset(obs, env.sensor_spec)
    done, seen_cells = False, 0
    while not done:
        obs, _, terminated, truncated, info = env.step(oracle.act(obs))
        truth = env.ground_truth()
        assert truth.info() == info
        assert truth.agent_pos == tuple(env.agent_pos) and truth.step == env.step_count
        assert truth.visible_target_cells == (
            frozenset(env.visible_target_cells()) if info["visible_instances"] else set()
        )
        seen_cells += len(truth.visible_target_cells)
        done = terminated or truncated
    assert truth.success and seen_cells > 0  # the oracle walks to the wreck, which comes into view


def test_the_env_sets_every_field_of_its_view_as_the_dataclass_would() -> None:
    """The env makes its view with :meth:`GroundTruth.of`, which applies no default: every field is
    there, the same as through the dataclass's own constructor, and the view stays frozen."""
    env = UnderwaterEnv(tasks=("wreck",), world_seed=3, max_steps=40)
    env.reset(seed=1)
    for action in (2, 2, 1, 2):
        env.step(action)
        truth = env.ground_truth()
        names = [f.name for f in dataclasses.fields(GroundTruth)]
        assert list(vars(truth)) == names
        rebuilt = GroundTruth(**vars(truth))
        assert rebuilt == truth and all(getattr(rebuilt, name) is getattr(truth, name) for name in names)
    with pytest.raises(dataclasses.FrozenInstanceError):
        truth.step = 0  # type: ignore[misc]


def test_visible_target_cells_are_the_cells_of_the_visible_instances_the_frame_shows() -> None:
    """The columns of the last frame that show (some pixels of) a clearly visible target instance,
    as (kind, x, y): checked column by column against the plain definition, in three worlds."""
    from embodmem.envs.objects import KINDS

    shown_at_all = 0
    for world in (1000, 1001, 1002):
        env = UnderwaterEnv(tasks=("wreck", "barrel", "pipeline"), world_seed=world, max_steps=500)
        env.reset(seed=world)
        rng = np.random.default_rng(world)
        for _ in range(500):
            _, _, terminated, truncated, _ = env.step(int(rng.choice([0, 1, 2, 2, 2])))
            visible = env.visible_instances()
            kinds, xs, ys, inst, pixels = env._frame_columns()
            expected = {
                (KINDS[int(k)].name, int(x), int(y))
                for k, i, x, y, p in zip(kinds, inst, xs, ys, pixels)
                if p > 0 and (KINDS[int(k)].name, int(i)) in visible
            }
            assert env.visible_target_cells() == expected
            shown_at_all += bool(expected)
            if terminated or truncated:
                env.reset(seed=world + 1)
    assert shown_at_all > 50  # targets came into view often enough to test something


def test_the_seen_place_bound_reads_the_same_from_the_view_and_the_env() -> None:
    env = UnderwaterEnv(tasks=("pipeline",), world_seed=1003)
    env.reset(seed=0, options={"start": "fixed0"})
    truth = env.ground_truth()
    cells = {(int(x), int(y)) for x, y in np.concatenate(truth.world.instance_cells("pipeline"))[:3]}
    start = truth.agent_pos
    assert truth.path_via_cells_m(start, cells) == env.path_via_cells_m(start, cells)
    assert truth.path_via_cells_m(start, set()) == float("inf")


def _private_reads(path: Path) -> list[str]:
    """Attribute reads of a single-underscore name (``x._y``) in ``path``."""
    tree = ast.parse(path.read_text())
    return [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
    ]


def test_the_oracle_and_the_runner_use_the_view_not_the_env_internals() -> None:
    assert _private_reads(ROOT / "agents" / "oracle.py") == []
    runner = (ROOT / "embodmem" / "runner.py").read_text()
    assert "UnderwaterEnv" not in runner, "the runner is typed to GroundTruthEnv"
    assert "visible_target_cells()" not in runner and "path_via_cells_m(" not in runner.replace(
        "truth.path_via_cells_m(", ""
    )
