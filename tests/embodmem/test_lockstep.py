"""The lockstep runner (experiment.lanes): the records of the sequential runner on these worlds, the
same records for any lane count, resume, refused values, and the driver's rounds."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

import embodmem.lockstep as lockstep_module
from embodmem.agents.oracle import OracleAgent
from embodmem.app import CONFIG_DIR, experiment_plan, run
from embodmem.condition import Condition
from embodmem.config import ConfigError, validate
from embodmem.embedding.embedder import ClipEmbedder
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.lockstep import EnvStep, Lane, Lockstep, run_lanes
from embodmem.metrics_record import TIMING_FIELDS
from embodmem.runner import (
    EpisodeAborted,
    ExperimentPlan,
    RunWriter,
    read_metrics,
    read_records,
    run_experiment,
    sequential_order,
)

SMALL = [
    "experiment.tasks=[wreck,barrel,wreck]", "experiment.world_seeds=[1000,1001]", "experiment.variants=[memory]",
    "experiment.baselines=[explorer,oracle]", "env.max_steps=80", "logger.progress=false", "logger.plots=false",
    "run_id=lockstep-test",
]  # fmt: skip
"""Two worlds, memory warm and cold, explorer, oracle: 8 lanes of three tasks."""


def _compose(*extra: str):
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        return compose("config", overrides=[*SMALL, *extra])


def _records(out: Path) -> dict[tuple, dict]:
    """Records by episode key, less the wall-clock fields (the order in the file follows the lanes)."""
    keyed = {}
    for r in read_metrics(out / "metrics.jsonl"):
        keyed[(r["world_seed"], r["agent"], r["condition"], r["task_index"])] = {
            k: v for k, v in r.items() if k not in TIMING_FIELDS and k != "episode_log"
        }
    return keyed


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same experiment sequentially, with 3 lanes twice and with 8 lanes."""
    out = {}
    for name, lanes in (("sequential", 0), ("lanes3", 3), ("lanes3-again", 3), ("lanes8", 8)):
        out[name] = tmp_path_factory.mktemp(name)
        run(_compose(f"experiment.lanes={lanes}"), out[name])
    return out


def test_lockstep_writes_the_sequential_records_on_these_worlds(runs: dict[str, Path]) -> None:
    """Batched frames may differ from one-frame ones in the last bits (embodmem/lockstep.py); on these
    worlds no decision turns on them, so every record is the sequential runner's."""
    sequential = _records(runs["sequential"])
    assert len(sequential) == 2 * 4 * 3
    assert _records(runs["lanes3"]) == sequential
    assert _records(runs["lanes8"]) == sequential
    for lanes in ("lanes3", "lanes8"):
        for name in ("summary.csv", "transfer.csv"):
            assert (runs[lanes] / name).read_bytes() == (runs["sequential"] / name).read_bytes(), (lanes, name)


def test_records_are_reported_in_the_sequential_runners_order(runs: dict[str, Path]) -> None:
    """Lanes write as episodes end; the report (whose bootstrap follows the records' order) gets them
    in the order the sequential runner writes them."""
    written = read_records(runs["sequential"] / "metrics.jsonl")
    plan = experiment_plan(_compose(), runs["sequential"])
    shuffled = [written[i] for i in np.random.default_rng(0).permutation(len(written))]
    assert [r.key for r in sequential_order(plan, shuffled)] == [r.key for r in written]
    assert [r.key for r in read_records(runs["lanes3"] / "metrics.jsonl")] != [r.key for r in written]


def test_the_same_lane_count_gives_the_same_records_and_logs(runs: dict[str, Path]) -> None:
    assert _records(runs["lanes3"]) == _records(runs["lanes3-again"])
    for log in sorted((runs["lanes3"] / "episodes").glob("*.json")):
        again = json.loads((runs["lanes3-again"] / "episodes" / log.name).read_text())
        mine = json.loads(log.read_text())
        for key in ("actions", "obs_digests", "retrievals", "reports"):
            assert mine[key] == again[key], (log.name, key)


def test_a_lockstep_run_resumes_to_the_uninterrupted_records(runs: dict[str, Path], tmp_path: Path) -> None:
    """A cut after a few episodes: resume reruns the unfinished worlds' lanes and writes only what is missing."""
    full = runs["lanes3"]
    cut = tmp_path / "cut"
    cut.mkdir()
    shutil.copy(full / "fingerprint.json", cut / "fingerprint.json")
    lines = (full / "metrics.jsonl").read_text().splitlines()
    (cut / "metrics.jsonl").write_text("\n".join(lines[:5]) + "\n")
    run(_compose("experiment.lanes=3", "experiment.resume=true"), cut)
    assert _records(cut) == _records(full)
    assert len(read_metrics(cut / "metrics.jsonl")) == len(lines)  # nothing written twice


@pytest.mark.parametrize("lanes", [-1, 4097])
def test_a_bad_lane_count_is_refused_in_one_line(lanes: object) -> None:
    with pytest.raises(
        ConfigError, match=rf"^experiment.lanes: {lanes} is not allowed; allowed: an integer in \[0, 4096\]$"
    ):
        validate(_compose(f"experiment.lanes={lanes}"))


def test_lanes_with_videos_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"experiment.lanes: 4 is not allowed; allowed: 0 .* video.enabled=true"):
        validate(_compose("experiment.lanes=4", "video.enabled=true"))


class FakeEmbedder:
    def __init__(self) -> None:
        self.batches: list[int] = []

    def cache_frames(self, images: np.ndarray, /) -> None:
        self.batches.append(len(images))


def _lane(name: str, steps: int, log: list[str], embeds: bool = True) -> Lane:
    def body():
        for i in range(steps):
            yield {"image": np.zeros((4, 4, 3), np.uint8)}
            log.append(f"{name}{i}")

    return Lane(body(), embeds)


def test_lanes_advance_one_step_per_round_and_wait_for_a_place() -> None:
    log: list[str] = []
    embedder = FakeEmbedder()
    lanes = [_lane("a", 2, log), _lane("b", 1, log, embeds=False), _lane("c", 2, log)]
    run_lanes(lanes, Lockstep(2, embedder))
    assert log == ["a0", "b0", "a1", "c0", "c1"]  # c starts when b ends
    assert embedder.batches == [1, 2, 1]  # b's frames are not embedded; one call per round


def _world_lane(env: UnderwaterEnv, actions: list[int], seen: list, caught: list[str]):
    """A lane that resets ``env``, then pauses at each observation and at each env step."""
    obs, _ = env.reset(seed=0)
    for action in actions:
        yield obs
        try:
            result = yield EnvStep(env, action)
        except ValueError as error:
            caught.append(str(error))
            raise
        seen.append(result)
        obs = result[0]


def test_the_lanes_worlds_are_stepped_in_one_batch_each_as_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each round steps every lane's world in one batch (one call while all three run); each lane gets
    what its world's own ``step`` gives; an error in one world is raised inside its lane and stops the run."""
    batches: list[int] = []
    real = lockstep_module.step_together

    def counting(envs, actions, **options):
        batches.append(len(envs))
        return real(envs, actions, **options)

    monkeypatch.setattr(lockstep_module, "step_together", counting)
    plans = {4: [2, 2, 1, 2], 9: [0, 2, 2], 21: [2, 1]}
    seen: dict[int, list] = {seed: [] for seed in plans}
    caught: list[str] = []
    lanes = [
        Lane(_world_lane(UnderwaterEnv(world_seed=seed, image_size=16), acts, seen[seed], caught), embeds=False)
        for seed, acts in plans.items()
    ]
    run_lanes(lanes, Lockstep(3))
    assert batches == [3, 3, 2, 1]
    for seed, acts in plans.items():
        alone = UnderwaterEnv(world_seed=seed, image_size=16)
        alone.reset(seed=0)
        for action, result in zip(acts, seen[seed], strict=True):
            single = alone.step(action)
            assert np.array_equal(result[0]["image"], single[0]["image"]) and result[1:4] == single[1:4]
    bad = [Lane(_world_lane(UnderwaterEnv(world_seed=s, image_size=16), acts, [], caught), False)
           for s, acts in ((4, [2, 2]), (9, [2, 9]))]  # fmt: skip
    with pytest.raises(ValueError, match=r"action=9 is not one of"):
        run_lanes(bad, Lockstep(2))
    assert len(caught) == 1 and "action=9" in caught[0]  # raised inside the lane whose world failed


class FaultyEnv(UnderwaterEnv):
    """World 1001's thrusters fail at the fifth action of its second task (the batched step and the
    single one both act through ``_act``)."""

    def _act(self, action: int) -> tuple[bool, bool, bool]:
        if self.world_seed == 1001 and self.task_index == 1 and self.step_count == 4:
            raise RuntimeError("thruster fault")
        return super()._act(action)


@pytest.mark.parametrize("lanes", [0, 2])
def test_an_env_error_stops_the_run_with_its_episode_recorded_as_aborted(tmp_path: Path, lanes: int) -> None:
    """Sequential or in lockstep, an error in a world's step is raised inside its run: the episode is
    written as aborted (resume runs it again) and the run stops."""
    plan = ExperimentPlan(
        "faulty", [("s", ("wreck", "barrel"))], [1000, 1001], 0, "dev", "random", [("oracle", Condition.single)]
    )
    writer = RunWriter(tmp_path, episode_logs=False)
    with pytest.raises(EpisodeAborted, match=r"task 2 \(barrel\) aborted after 4 steps: RuntimeError: thruster fault"):
        run_experiment(
            plan,
            make_env=lambda tasks, world: FaultyEnv(tasks=tasks, world_seed=world, image_size=16),
            make_agent=lambda name, env: OracleAgent(env),
            writer=writer,
            lockstep=Lockstep(lanes) if lanes else None,
        )
    records = read_records(tmp_path / "metrics.jsonl")
    aborted = [(r.world_seed, r.task_index, r.abort_reason) for r in records if r.aborted]
    assert aborted == [(1001, 2, "RuntimeError: thruster fault")]
    assert (1001, 1) in {(r.world_seed, r.task_index) for r in records if not r.aborted}


def test_batched_frames_do_not_depend_on_the_rest_of_the_batch() -> None:
    """The batch graph's rows are the same in a batch of 1 or 70 (so any lane count writes the same
    records), and within float32 rounding of the one-frame graph's."""
    frames = np.random.default_rng(0).integers(0, 256, (70, 64, 64, 3), dtype=np.uint8)
    together, alone, one_frame = ClipEmbedder(threads=1), ClipEmbedder(threads=1), ClipEmbedder(threads=1)
    together.cache_frames(frames)
    for frame in frames[:8]:
        alone.cache_frames(frame[None])
    assert together.frames_embedded == 70
    np.testing.assert_array_equal(together.embed_images(frames[:8]), alone.embed_images(frames[:8]))
    single = np.concatenate([one_frame.embed_images(f[None]) for f in frames[:8]])
    np.testing.assert_allclose(together.embed_images(frames[:8]), single, atol=1e-6)


def test_the_command_line_refuses_a_bad_lane_count_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "embodmem", "experiment.lanes=2.5", f"hydra.run.dir={out}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip() == "embodmem-run: error: experiment.lanes: '2.5' is not allowed; allowed: an integer"
    assert not out.exists()
