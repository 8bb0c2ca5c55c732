"""Tests for embodmem/replay.py: exact re-simulation of logged episodes, refusal of bad logs, the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from embodmem.agents.random_agent import RandomAgent
from embodmem.condition import Condition
from embodmem.envs.config import EnvConfig
from embodmem.envs.spec import ACTION_NAMES
from embodmem.envs.underwater import UnderwaterEnv
from embodmem.episode_log import LOG_FORMAT, seal
from embodmem.metrics_record import EpisodeRecord, SequenceContext
from embodmem.replay import ReplayError, ReplayMismatch, load_log, main, replay, simulate
from embodmem.runner import EpisodeResult, RunWriter, SequenceSpec, StepEvent, run_episode
from embodmem.video import EpisodeRecorder
from tests.embodmem.video_helpers import assert_faststart, decode

ENV_KW: dict[str, Any] = {"size": 24, "max_steps": 20, "image_size": 32, "odometry_noise": 0.1}
"""Odometry noise draws from the episode RNG: a replay must reproduce it too."""
FPS = 3


def write_logged_episode(run_dir: Path, start: str, world_seed: int = 2, recorder: EpisodeRecorder | None = None):
    """Run one real episode through the runner and RunWriter; return its log path, the images the
    agent saw, and the result."""
    env = UnderwaterEnv(tasks=("wreck", "barrel"), world_seed=world_seed, **ENV_KW)
    agent = RandomAgent(seed=4, stop_probability=0.0)
    images: list[np.ndarray] = []

    def on_step(ctx: StepEvent) -> None:
        images.append(ctx.obs["image"].copy())
        if recorder is not None:
            recorder.step(ctx)

    if recorder is not None:
        recorder.bind(env, agent)
    outcome = run_episode(env, agent, {"task": "barrel", "world_seed": world_seed, "start": start}, 7, on_step=on_step)
    spec = SequenceSpec("wreck_then_barrel", ("wreck", "barrel"), world_seed, 0, Condition.single)
    context = SequenceContext(outcome.trace.start_pose)
    record = EpisodeRecord.finished(
        outcome.measures, outcome.wall_time_s, outcome.stats, spec.identity("r", agent, 1), context
    )
    result = EpisodeResult(record, outcome)
    if recorder is not None:
        recorder.finish(result)
    RunWriter(run_dir, env=EnvConfig(**ENV_KW)).write(result)
    return run_dir / "episodes" / f"{record.name}.json", images, result


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
    assert len(sim.steps) == len(images) == len(result.outcome.trace.actions)
    for i, (rec, seen) in enumerate(zip(sim.steps, images)):
        assert np.array_equal(rec.image, seen), f"step {i + 1} differs"
    for key in ("success", "spl", "steps", "path_length", "collisions"):
        assert getattr(sim.summary, key) == getattr(result.record, key)


def test_replay_renders_a_video(tmp_path: Path, logged) -> None:
    log_path, images, _ = logged
    out = tmp_path / "replay.mp4"
    res = replay(log_path, out, size=32, fps=FPS)
    assert res.video == out and res.steps == len(images)
    assert res.frames == len(images) + FPS
    frames = decode(out)
    assert len(frames) == res.frames and frames[0].shape == (92, 96, 3)
    assert_faststart(out)


def test_replay_draws_logged_retrievals(tmp_path: Path, logged) -> None:
    log_path, _, _ = logged

    def add(log: dict) -> None:
        hit = {"score": 0.9, "node": 3, "pose": [4.0, 5.0, 1], "task": "wreck", "step": 11}
        log["retrievals"] = [{"step": 2, "query": "find oil drums", "hits": [hit]}]

    path = edited(tmp_path, log_path, add)
    sim = simulate(load_log(path), path)
    assert sim.steps[1].retrievals is not None and sim.steps[1].retrievals[0].pose == (4, 5, 1)
    assert sim.steps[1].query == "find oil drums" and sim.steps[0].retrievals is None


def test_recorder_and_replay_render_the_same_video(tmp_path: Path) -> None:
    cfg = SimpleNamespace(enabled=True, episodes="all", fps=FPS, size=32, format="mp4")
    recorder = EpisodeRecorder(cfg, tmp_path / "videos")
    log_path, _, result = write_logged_episode(tmp_path, "fixed0", recorder=recorder)
    assert result.video is not None
    live = decode(tmp_path / result.video)
    again = decode(replay(log_path, tmp_path / "replay.mp4", size=32, fps=FPS).video)
    assert len(live) == len(again) == len(result.outcome.trace.actions) + FPS
    assert all(np.array_equal(a, b) for a, b in zip(live, again)), "one rendering path"


# --------------------------------------------------------------------------- refused logs


def test_altered_action_is_caught_at_the_first_diverging_step(tmp_path: Path, logged) -> None:
    log_path, _, result = logged
    actions = result.outcome.trace.actions
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
            lambda log: log.update(format="embodmem-episode/2"),
            r"field format: 'embodmem-episode/2' is not 'embodmem-episode/3' \(a foreign file, or one written by another",
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


def test_one_retrieval_type_from_memory_hit_to_log_and_back() -> None:
    """A real memory hit becomes a Retrieval in one place; the log form reads back equal (no thumbnail)."""
    from embodmem.memory import AgentMemory, FrameMeta, MemoryConfig
    from embodmem.retrieval import Retrieval, RetrievalEvent
    from embodmem.video import retrievals_from_log

    mem = AgentMemory(MemoryConfig(dim=8, keep_thumbnails=True, thumbnail_size=4))
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(6, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    image = np.full((16, 16, 3), 90, np.uint8)
    for i, v in enumerate(vecs):
        mem.observe(v, FrameMeta("r", "wreck", 0, i, float(i), 2.0, heading=i % 4, thumbnail=image))
    hits = mem.query(vecs[3], k=3)
    found = [Retrieval.from_hit(h) for h in hits]
    assert found[0].pose == (3.0, 2.0, 3) and found[0].step == 3 and found[0].task == "wreck"
    assert found[0].score == pytest.approx(1.0) and found[0].thumbnail is not None
    assert Retrieval.from_hit(hits[0], score=0.25).score == 0.25  # e.g. the memory agent's P(target)
    event = RetrievalEvent(4, "find a sunken ship", found)
    written = json.loads(json.dumps(event.to_log()))
    assert set(written["hits"][0]) == {"score", "node", "pose", "task", "step"}
    back = RetrievalEvent.from_log(written)
    assert back == event and all(r.thumbnail is None for r in back.hits)
    assert retrievals_from_log([written]) == {4: ("find a sunken ship", list(back.hits))}


def test_doctests() -> None:
    import doctest

    import embodmem.agents.vlm.memory as vlm_memory
    import embodmem.episode_log as episode_log
    import embodmem.rerun as rerun
    import embodmem.retrieval as retrieval

    for module in (retrieval, episode_log, rerun, vlm_memory):
        assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0, module.__name__


def test_log_format_tag_is_the_runners() -> None:
    assert LOG_FORMAT == "embodmem-episode/3"


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
    assert main([str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main([str(logged[0]), "--out", str(tmp_path / "v.gif")]) == 1
    assert ".mp4, .webm" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main([str(logged[0]), "--size", "8"])
    assert exc.value.code == 2


# --------------------------------------------------------------------------- agent replay (embodmem.rerun)

SMALL_RUN = ["env.max_steps=25", "logger.progress=false", "logger.plots=false"]
"""One world (1001), wreck then barrel: memory agent warm and cold, explorer baseline; 6 logs."""
WARM2 = "seq=wreck_then_barrel-world=1001-seed=0-task=2-agent=memory-cond=warm.json"
WARM1 = "seq=wreck_then_barrel-world=1001-seed=0-task=1-agent=memory-cond=warm.json"


def _run(out: Path, overrides: list[str]) -> Path:
    from hydra import compose, initialize_config_dir

    from embodmem.app import CONFIG_DIR, run

    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=SMALL_RUN + overrides)
    run(cfg, out)
    return out


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("agent-run"), [])


def in_run(tmp_path: Path, run_dir: Path, name: str, edit, reseal: bool = True) -> Path:
    """A changed copy of one of the run's logs, in a copy of the run directory (its config beside it)."""
    copy = tmp_path / "run"
    (copy / "episodes").mkdir(parents=True, exist_ok=True)
    (copy / "config.yaml").write_bytes((run_dir / "config.yaml").read_bytes())
    return edited(copy / "episodes", run_dir / "episodes" / name, edit, reseal)


def test_every_log_of_a_real_run_replays_with_its_agent(run_dir: Path) -> None:
    logs = sorted((run_dir / "episodes").glob("*.json"))
    assert len(logs) == 6
    for path in logs:
        log = json.loads(path.read_text())
        result = replay(path, video=False)
        check = result.agent_check
        assert check is not None, (path.name, result.agent_skipped)
        assert (check.agent, check.condition) == (log["record"]["agent"], log["record"]["condition"])
        assert check.episodes == log["task_index"] and check.actions == len(log["actions"])
        assert check.retrievals == len(log["retrievals"])
    assert sum(len(json.loads(p.read_text())["retrievals"]) for p in logs) > 0, "the run retrieved something"


def test_cli_says_what_each_mode_verified(run_dir: Path, capsys) -> None:
    log = run_dir / "episodes" / WARM2
    assert main([str(log), "--check"]) == 0
    assert "agent memory/warm re-run from" in capsys.readouterr().out
    assert main([str(log), "--check", "--no-agent"]) == 0
    assert "environment only (not asked (--no-agent)): actions and retrievals not recomputed" in capsys.readouterr().out
    assert main([str(log), "--check", "--agent", "--config", str(run_dir / "config.yaml")]) == 0
    with pytest.raises(SystemExit):
        main([str(log), "--agent", "--no-agent"])
    capsys.readouterr()


def _hit(log: dict, field: str, value: Any, event: int = -1, hit: int = 0) -> None:
    h = log["retrievals"][event]["hits"][hit]
    if field in ("x", "y", "heading"):
        h["pose"][("x", "y", "heading").index(field)] = value
    else:
        h[field] = value


def _first_move(log: dict) -> int:
    """Index of the first move (forward, backward or a strafe): a turn in its place must diverge."""
    return next(i for i, a in enumerate(log["actions"]) if a not in (0, 1, 3))


def _turn(log: dict) -> None:
    k = _first_move(log)
    log["actions"][k], log["action_names"][k] = 0, "turn_left"


TAMPERED = [
    ("score", lambda log: _hit(log, "score", log["retrievals"][-1]["hits"][0]["score"] + 1e-9), r"hits\.0\.score"),
    ("x", lambda log: _hit(log, "x", log["retrievals"][-1]["hits"][0]["pose"][0] + 1), r"hits\.0\.pose\.0"),
    ("heading", lambda log: _hit(log, "heading", (log["retrievals"][-1]["hits"][0]["pose"][2] + 1) % 4), r"pose\.2"),
    ("task", lambda log: _hit(log, "task", "aircraft"), r"hits\.0\.task: the log has 'aircraft'"),
    ("step", lambda log: _hit(log, "step", log["retrievals"][-1]["hits"][0]["step"] + 1), r"hits\.0\.step"),
    ("node", lambda log: _hit(log, "node", None), r"hits\.0\.node: the log has None"),
    ("query", lambda log: log["retrievals"][-1].update(query="find the aircraft"), r"retrievals\.\d+\.query"),
    ("hit-dropped", lambda log: log["retrievals"][-1]["hits"].pop(), r"retrievals\.\d+\.hits\.\d: the log has nothing"),
    (
        "event-dropped",
        lambda log: log["retrievals"].pop(),
        r"retrievals\.\d+: the log has nothing, the agent retrieves",
    ),
    ("action", _turn, r"field actions\.\d+: the log has 0 \(turn_left\), the agent chooses [2456] \(\w+\)"),
    ("agent-stat", lambda log: log["record"].update(memory_queries=99), r"its outcome: field record\.memory_queries"),
    ("label", lambda log: log["record"].update(split="test"), r"field record\.split: the log has 'test'"),
]


@pytest.mark.parametrize(("edit", "field"), [(e, f) for _, e, f in TAMPERED], ids=[n for n, _, _ in TAMPERED])
def test_tampered_agent_output_is_refused_naming_episode_step_and_field(
    tmp_path: Path, run_dir: Path, edit, field: str
) -> None:
    """Each alteration, with the digest recomputed, is refused by the agent re-run (one line naming the
    episode, the step and the field); left unsealed, the digest refuses it first."""
    path = in_run(tmp_path, run_dir, WARM2, edit)
    with pytest.raises(ReplayMismatch, match=field) as err:
        replay(path, video=False)
    message = str(err.value)
    assert message.startswith(f"{path}: episode memory/warm task 2 (barrel) of wreck_then_barrel, world 1001, seed 0, ")
    assert ", step " in message or ", its outcome: " in message
    assert "\n" not in message
    unsealed = in_run(tmp_path, run_dir, WARM2, edit, reseal=False)
    with pytest.raises(ReplayError, match="field digest"):
        replay(unsealed, video=False)


def test_tampered_action_names_its_step(tmp_path: Path, run_dir: Path) -> None:
    log = json.loads((run_dir / "episodes" / WARM2).read_text())
    k = _first_move(log)
    with pytest.raises(ReplayMismatch, match=rf", step {k + 1}: field actions\.{k}: ") as err:
        replay(in_run(tmp_path, run_dir, WARM2, _turn), video=False)
    assert err.value.step == k + 1
    # the environment-only check refuses it too, as a diverging observation (no field named)
    with pytest.raises(ReplayMismatch, match=rf"diverges at step {k + 1}"):
        replay(in_run(tmp_path, run_dir, WARM2, _turn), video=False, agent=False)


def test_retrievals_are_accepted_by_the_environment_check_alone(tmp_path: Path, run_dir: Path) -> None:
    """What --no-agent cannot see: a resealed retrieval change passes it, the agent re-run refuses it."""
    path = in_run(tmp_path, run_dir, WARM2, lambda log: _hit(log, "task", "aircraft"))
    assert replay(path, video=False, agent=False).agent_check is None
    with pytest.raises(ReplayMismatch, match="task"):
        replay(path, video=False)


def test_measured_times_are_not_recomputed_but_typed(tmp_path: Path, run_dir: Path) -> None:
    """wall_time_s cannot be recomputed: another value is accepted, another type is not."""
    path = in_run(tmp_path, run_dir, WARM2, lambda log: log["record"].update(wall_time_s=123.0))
    assert replay(path, video=False).agent_check.not_recomputed == ("wall_time_s", "memory_query_ms", "run_id")
    path = in_run(tmp_path, run_dir, WARM2, lambda log: log["record"].update(wall_time_s="fast"))
    with pytest.raises(ReplayError, match=r"field record\.wall_time_s"):
        replay(path, video=False)


def _set_world(log: dict) -> None:
    log["world_seed"] = log["record"]["world_seed"] = 1002


def _set_config(tmp_path: Path, run_dir: Path, old: str, new: str) -> Path:
    path = tmp_path / "other" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = (run_dir / "config.yaml").read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set_world, r"field world_seed: 1002 is not a world of .*config\.yaml \(its worlds: \[1001\]\)"),
        (lambda log: log["record"].update(seed=1), r"field record\.seed: 1 is not the seed of .*config\.yaml \(0\)"),
        (
            lambda log: log["record"].update(agent="explorer"),
            r"field record\.agent: explorer/warm is not among the runs of .*\(memory/warm, memory/cold, explorer/single\)",
        ),
        (lambda log: log["record"].update(sequence="deep_pair"), r"field record\.sequence: 'deep_pair' is not a seq"),
        (lambda log: log["env"].update(max_steps=26), r"field env\.max_steps: the log has 26, .*config\.yaml has 25"),
        (lambda log: log["record"].pop("agent"), r"field record\.agent: None is not a str"),
    ],
    ids=["world", "seed", "agent", "sequence", "env", "no-agent-label"],
)
def test_log_of_another_run_is_refused_before_any_work(tmp_path: Path, run_dir: Path, edit, message: str) -> None:
    path = in_run(tmp_path, run_dir, WARM2, edit)
    with pytest.raises(ReplayError, match=message) as err:
        replay(path, video=False)
    assert not isinstance(err.value, ReplayMismatch) and "\n" not in str(err.value)


def test_missing_or_mismatched_run_config_is_refused(tmp_path: Path, run_dir: Path, capsys) -> None:
    lone = tmp_path / "lone" / "episodes" / WARM2
    lone.parent.mkdir(parents=True)
    lone.write_bytes((run_dir / "episodes" / WARM2).read_bytes())
    assert replay(lone, video=False).agent_skipped == "no config.yaml beside episodes/"
    assert main([str(lone), "--check", "--agent"]) == 1
    err = capsys.readouterr().err
    assert "agent replay needs the run's config.yaml beside episodes/" in err and err.count("\n") == 1
    for old, new, message in [
        ("seed: 0\nrun_id", "seed: 3\nrun_id", r"field record\.seed: 0 is not the seed of"),
        ("  - 1001\n", "  - 1002\n", r"field world_seed: 1001 is not a world of"),
        ("max_steps: 25", "max_steps: 30", r"field env\.max_steps: the log has 25, .* has 30"),
        (
            "memory_k: 48",
            "memory_k: 2",
            # which hit differs first (its score, or a hit the agent no longer retrieves) depends on
            # the agent's numbers: match the field and both sides, not their formatting
            r"step \d+: field retrievals\.\d+\.hits\.\d+(\.\w+)?: the log has .+, the agent retrieves .+",
        ),
        ("max_steps: 25", "max_steps: [", r"not a usable run config"),
        ("max_steps: 25", "max_steps: -5", r"not a usable run config: env\.max_steps: -5 is not allowed"),
    ]:
        config = _set_config(tmp_path, run_dir, old, new)
        assert main([str(lone), "--check", "--config", str(config)]) == 1, new
        err = capsys.readouterr().err
        assert re.search(message, err) and err.count("\n") == 1, (new, err)


def test_sleep_poison_and_loaded_memory_replay(tmp_path: Path) -> None:
    """The re-run reproduces what the runner adds between tasks: false memories, sleep, a loaded memory."""
    warm_only = ["experiment.baselines=[]", "experiment.conditions=[warm]"]
    first = _run(
        tmp_path / "first",
        [*warm_only, "experiment.poison_k=3", "experiment.sleep_between_tasks=true", "experiment.save_memory=true"],
    )
    loaded = f"experiment.load_memory={first / 'memory' / 'world1001'}"
    second = _run(tmp_path / "second", [*warm_only, loaded, "run_id=named"])
    for run in (first, second):
        for name in (WARM1, WARM2):
            check = replay(run / "episodes" / name, video=False).agent_check
            assert check is not None and check.episodes == (1 if name == WARM1 else 2)
    saved = json.loads((second / "episodes" / WARM1).read_text())["record"]["memory_frames"]
    assert saved > json.loads((first / "episodes" / WARM1).read_text())["record"]["memory_frames"]
    assert replay(first / "episodes" / WARM2, video=False).agent_check.not_recomputed[-1] == "run_id"
    # a run_id the config sets is recomputed, so a changed one is refused
    assert "run_id" not in replay(second / "episodes" / WARM2, video=False).agent_check.not_recomputed
    with pytest.raises(ReplayMismatch, match=r"its outcome: field record\.run_id: the log has 'other'"):
        replay(in_run(tmp_path, second, WARM2, lambda log: log["record"].update(run_id="other")), video=False)


# --------------------------------------------------------------------------- tamper sweeps


def _attack_module():
    import importlib.util
    import sys

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "probes"))
    spec = importlib.util.spec_from_file_location("attack_episode_log", root / "probes" / "attack_episode_log.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NOT_RECOMPUTABLE = ("record.wall_time_s ", "record.memory_query_ms ", "record.run_id ")
"""What the agent re-run cannot recompute: measured times, and the run label the output directory names."""
STRIDE = 5
"""The default run tries every 5th change; ``-m slow`` tries them all."""


@pytest.mark.parametrize("stride", [pytest.param(1, marks=pytest.mark.slow), STRIDE], ids=["all", "sample"])
def test_every_field_alteration_is_refused_with_one_line(tmp_path: Path, run_dir: Path, stride: int) -> None:
    """Every field of a real log changed in value or type, or removed: refused (exit 1, one line
    naming the field), never accepted, never a traceback."""
    counts, examples = _attack_module().attack("fields", tmp_path, stride, run_dir / "episodes" / WARM1)
    assert counts["refused"] == sum(counts.values()) > 1500 // stride, {
        k: v[:5] for k, v in examples.items() if k != "refused"
    }
    assert all("field " in e for e in examples["refused"])


@pytest.mark.parametrize("stride", [pytest.param(1, marks=pytest.mark.slow), STRIDE], ids=["all", "sample"])
def test_resealed_alterations_pass_the_environment_check_only_where_it_recomputes_nothing(
    tmp_path: Path, run_dir: Path, stride: int
) -> None:
    """With the digest recomputed and --no-agent, everything the environment replay recomputes or
    cross-checks is refused; what passes is the agent's own output, run labels (task_index and
    condition may be dropped: the record keeps them) and settings that do not change the
    re-simulation (e.g. the deep-water view range in a shallow task)."""
    counts, examples = _attack_module().attack("resealed-env", tmp_path, stride, run_dir / "episodes" / WARM1)
    assert counts["traceback"] == 0 and counts["other"] == 0, examples.get("traceback")
    free = ("retrievals", "record.", "record ", "start ", "task_index ", "condition ", "env")
    recomputed = ("record.success", "record.spl ", "record.steps", "record.collisions", "record.path_length")
    accepted = examples.get("accepted", [])
    assert any(e.startswith("retrievals") for e in accepted), "retrievals are invisible to the environment check"
    assert all(e.startswith(free) for e in accepted), accepted
    assert not any(e.startswith(recomputed) and "-0.0" not in e for e in accepted), accepted
    for must in ("actions", "action_names", "obs_digests", "start_pose", "world_seed", "episode_seed", "task "):
        assert not any(e.startswith(must) for e in accepted), must


@pytest.mark.parametrize("stride", [pytest.param(1, marks=pytest.mark.slow), STRIDE], ids=["all", "sample"])
def test_resealed_alterations_pass_the_agent_check_only_where_nothing_recomputes(
    tmp_path: Path, run_dir: Path, stride: int
) -> None:
    """With the digest recomputed and the agent re-run, only measured times and the run label pass."""
    counts, examples = _attack_module().attack("resealed-agent", tmp_path, stride, run_dir / "episodes" / WARM1)
    assert counts["traceback"] == 0 and counts["other"] == 0, examples.get("traceback")
    accepted = examples.get("accepted", [])
    assert all(e.startswith(NOT_RECOMPUTABLE) for e in accepted), accepted
    assert counts["refused"] > 1400 // stride
