"""Tests for embodmem/replay.py: exact re-simulation of logged episodes, refusal of bad logs, the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from embodmem.agents.random_agent import RandomAgent
from embodmem.envs.spec import ACTION_NAMES
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.episode_log import LOG_FORMAT, seal
from embodmem.replay import ReplayError, ReplayMismatch, load_log, main, replay, simulate
from embodmem.runner import RunWriter, run_episode
from embodmem.video import EpisodeRecorder
from tests.embodmem.video_helpers import decode

ENV_KW: dict[str, Any] = {"size": 24, "max_steps": 20, "image_size": 32, "odometry_noise": 0.1}
"""Odometry noise draws from the episode RNG: a replay must reproduce it too."""
FPS = 3


def write_logged_episode(run_dir: Path, start: str, world_seed: int = 2, recorder: EpisodeRecorder | None = None):
    """Run one real episode through the runner and RunWriter; return its log path, the images the
    agent saw, and the result."""
    env = UnderwaterEnv(tasks=("wreck", "barrel"), world_seed=world_seed, **ENV_KW)
    agent = RandomAgent(seed=4, stop_probability=0.0)
    images: list[np.ndarray] = []

    def on_step(ctx: dict[str, Any]) -> None:
        images.append(ctx["obs"]["image"].copy())
        if recorder is not None:
            recorder.step(ctx)

    if recorder is not None:
        recorder.bind(env, agent)
    result = run_episode(env, agent, {"task": "barrel", "world_seed": world_seed, "start": start}, 7, on_step=on_step)
    result.record.update(
        sequence="wreck_then_barrel", world_seed=world_seed, seed=0, task_index=2, agent="random", condition="single"
    )
    writer = RunWriter(run_dir, env_kwargs=dict(ENV_KW))
    writer.write(result)
    if recorder is not None:
        recorder.finish(result)
    return run_dir / result.record["episode_log"], images, result


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory):
    run_dir = tmp_path_factory.mktemp("run")
    return write_logged_episode(run_dir, "random")


def edited(tmp_path: Path, log_path: Path, edit, reseal: bool = True) -> Path:
    """A copy of the log changed by ``edit``; resealed (digest recomputed, as a deliberate editor
    could) unless ``reseal`` is False, so the checks behind the digest are exercised."""
    log = json.loads(log_path.read_text())
    edit(log)
    out = tmp_path / "edited.json"
    out.write_text(json.dumps(seal(log) if reseal else log))
    return out


# --------------------------------------------------------------------------- exact replay


@pytest.mark.parametrize("start", ["random", "fixed1"])
def test_replay_reproduces_every_observation(tmp_path: Path, logged, start: str) -> None:
    log_path, images, result = logged if start == "random" else write_logged_episode(tmp_path, start)
    sim = simulate(load_log(log_path), log_path)
    assert len(sim.steps) == len(images) == len(result.log["actions"])
    for i, (rec, seen) in enumerate(zip(sim.steps, images)):
        assert np.array_equal(rec.image, seen), f"step {i + 1} differs"
    for key in ("success", "spl", "steps", "path_length", "collisions"):
        assert sim.summary[key] == result.record[key]


def test_replay_renders_a_video(tmp_path: Path, logged) -> None:
    log_path, images, _ = logged
    out = tmp_path / "replay.mp4"
    res = replay(log_path, out, size=32, fps=FPS)
    assert res.video == out and res.steps == len(images)
    assert res.frames == len(images) + FPS
    frames = decode(out)
    assert len(frames) == res.frames and frames[0].shape == (92, 96, 3)


def test_replay_draws_logged_retrievals(tmp_path: Path, logged) -> None:
    log_path, _, _ = logged

    def add(log: dict) -> None:
        log["retrievals"] = [{"step": 2, "query": "find oil drums", "hits": [[0.9, 3, [4, 5, 1], "wreck", 11]]}]

    path = edited(tmp_path, log_path, add)
    sim = simulate(load_log(path), path)
    assert sim.steps[1].retrievals is not None and sim.steps[1].retrievals[0].pose == (4, 5, 1)
    assert sim.steps[1].query == "find oil drums" and sim.steps[0].retrievals is None


def test_recorder_and_replay_render_the_same_video(tmp_path: Path) -> None:
    cfg = SimpleNamespace(enabled=True, episodes="all", fps=FPS, size=32, format="mp4")
    recorder = EpisodeRecorder(cfg, tmp_path / "videos")
    log_path, _, result = write_logged_episode(tmp_path, "fixed0", recorder=recorder)
    live = decode(tmp_path / result.record["video"])
    again = decode(replay(log_path, tmp_path / "replay.mp4", size=32, fps=FPS).video)
    assert len(live) == len(again) == len(result.log["actions"]) + FPS
    assert all(np.array_equal(a, b) for a, b in zip(live, again)), "one rendering path"


# --------------------------------------------------------------------------- refused logs


def test_altered_action_is_caught_at_the_first_diverging_step(tmp_path: Path, logged) -> None:
    log_path, _, result = logged
    actions = result.log["actions"]
    k = next(i for i, a in enumerate(actions) if a == 2)  # a forward move: changing it changes the view

    def alter(log: dict) -> None:
        log["actions"][k], log["action_names"][k] = 0, "turn_left"

    path = edited(tmp_path, log_path, alter)
    with pytest.raises(
        ReplayMismatch, match=rf"diverges at step {k + 1}: the observation after action turn_left"
    ) as err:
        replay(path, tmp_path / "x.mp4")
    assert err.value.step == k + 1 and str(path) in str(err.value)
    assert not (tmp_path / "x.mp4").exists(), "nothing is written for a log that does not replay"


def test_altered_digest_is_caught(tmp_path: Path, logged) -> None:
    path = edited(tmp_path, logged[0], lambda log: log["obs_digests"].__setitem__(0, "0" * 16))
    with pytest.raises(ReplayMismatch, match="diverges at step 0: the observation after reset") as err:
        simulate(load_log(path), path)
    assert err.value.step == 0


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda b: b[: len(b) // 2], r"not valid JSON .*corrupted or truncated"),
        (lambda b: b[:100] + b"\x00garbage\xff" + b[120:], r"not valid JSON|cannot read"),
        (lambda b: b"", r"the file is empty"),
        (lambda b: b"[1, 2, 3]", r"not an episode log \(the JSON is a list"),
        (lambda b: b'{"hello": "world"}', r"field format: missing: not an embodmem episode log"),
        (lambda b: b"[" * 100_000 + b"]" * 100_000, r"nested too deeply|not valid JSON"),
    ],
    ids=["truncated", "corrupted", "empty", "list", "foreign", "deep"],
)
def test_corrupted_or_truncated_log_is_refused(tmp_path: Path, logged, mangle, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(mangle(logged[0].read_bytes()))
    with pytest.raises(ReplayError, match=message) as err:
        replay(path, tmp_path / "x.webm")
    assert str(err.value).startswith(str(path))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda log: log.update(format="embodmem-episode/0"),
            r"field format: 'embodmem-episode/0' is not 'embodmem-episode/2'",
        ),
        (lambda log: [log.pop(k) for k in ("actions", "env")], r"field actions: Field required"),
        (
            lambda log: log["obs_digests"].pop(),
            r"field obs_digests: \d+ observation digests for \d+ actions \(expected \d+\)",
        ),
        (lambda log: log.update(world_digest="0123456789abcdef"), r"world digest mismatch for world_seed=2"),
        (lambda log: log["actions"].__setitem__(0, 9), r"field actions.0: 9 is not one of"),
        (lambda log: log.update(actions="2,2,1"), r"field actions: Input should be a valid (list|array)"),
        (
            lambda log: log["env"].update(size=3),
            r"field env: cannot build the environment from the log's settings: EnvConfig.size: 3 is not allowed",
        ),
        (lambda log: log.update(start_pose=[0, 0, 0]), r"cannot reset to the logged start \[0, 0, 0\]"),
        (
            lambda log: (
                log["actions"].pop(),
                log["action_names"].pop(),
                log["obs_digests"].pop(),
                log["record"].update(steps=19),
            ),
            r"had not ended \(truncated log\?\)",
        ),
        (
            lambda log: (
                log["actions"].append(2),
                log["action_names"].append("forward"),
                log["obs_digests"].append("0" * 16),
                log["record"].update(steps=21),
            ),
            r"the episode ended at step 20",
        ),
    ],
    ids=["format", "missing", "digest-count", "world", "action-range", "action-type", "env", "start", "cut", "extra"],
)
def test_inconsistent_log_is_refused(tmp_path: Path, logged, edit, message: str) -> None:
    path = edited(tmp_path, logged[0], edit)
    with pytest.raises(ReplayError, match=message):
        replay(path, tmp_path / "x.mp4")


def test_log_format_tag_is_the_runners() -> None:
    assert LOG_FORMAT == "embodmem-episode/2"


# --------------------------------------------------------------------------- command line


def test_cli_success_prints_the_video_path(tmp_path: Path, logged, capsys) -> None:
    out = tmp_path / "v.mp4"
    assert main([str(logged[0]), "--out", str(out), "--size", "32", "--fps", "2"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert len(decode(out)) == len(logged[1]) + 2


def test_cli_check_only(tmp_path: Path, logged, capsys) -> None:
    assert main([str(logged[0]), "--check"]) == 0
    assert "steps replay exactly" in capsys.readouterr().out
    assert not logged[0].with_suffix(".replay.mp4").exists()


def test_cli_fails_loudly(tmp_path: Path, logged, capsys) -> None:
    def alter(log: dict) -> None:
        log["actions"][0] = (log["actions"][0] + 1) % 3
        log["action_names"][0] = ACTION_NAMES[log["actions"][0]]

    path = edited(tmp_path, logged[0], alter)
    assert main([str(path), "--check"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("embodmem-replay: error: ") and "diverges at step 1" in err and str(path) in err
    assert main([str(tmp_path / "missing.json")]) == 1
    assert "no such file" in capsys.readouterr().err
    assert main([str(logged[0]), "--out", str(tmp_path / "v.gif")]) == 1
    assert ".mp4, .webm" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main([str(logged[0]), "--size", "8"])
    assert exc.value.code == 2


# --------------------------------------------------------------------------- tamper sweep


def _attack_module():
    import importlib.util
    import sys

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "benchmarks"))
    spec = importlib.util.spec_from_file_location("attack_episode_log", root / "benchmarks" / "attack_episode_log.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_field_alteration_is_refused_with_one_line(tmp_path: Path) -> None:
    """Every field of a real log changed in value or type, or removed: refused (exit 1, one line
    naming the field), never accepted, never a traceback."""
    counts, examples = _attack_module().attack("fields", tmp_path)
    assert counts["refused"] == sum(counts.values()) > 500, {k: v[:5] for k, v in examples.items() if k != "refused"}
    assert all("field " in e for e in examples["refused"])


def test_resealed_alterations_refused_unless_not_recomputable(tmp_path: Path) -> None:
    """With the digest recomputed, everything the replay recomputes or cross-checks is still
    refused; what is accepted is only what nothing recomputes (retrieval contents, run labels)."""
    counts, examples = _attack_module().attack("resealed", tmp_path)
    assert counts["traceback"] == 0 and counts["other"] == 0, examples.get("traceback")
    free = ("retrievals", "record.", "record ", "start ", "task_index ", "condition ")
    recomputed = ("record.success", "record.spl ", "record.steps", "record.collisions", "record.path_length")
    accepted = examples.get("accepted", [])
    assert all(e.startswith(free) for e in accepted), accepted
    assert not any(e.startswith(recomputed) and "-0.0" not in e for e in accepted), accepted
    for must in ("actions", "action_names", "obs_digests", "start_pose", "world_seed", "episode_seed", "env", "task "):
        assert not any(e.startswith(must) for e in accepted), must
