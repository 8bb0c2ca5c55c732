"""Replay into Rerun: a tiny run's episodes logged into an .rrd, read back with Rerun's own reader;
in a changing world, every stale-target visit the episode's record counts is an event of its own."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from embodmem.app import CONFIG_DIR, run
from embodmem.episode_log import read_log
from embodmem.replay import main as replay_main

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("rerun") is None, reason="needs the 'rerun-sdk' package: pip install -e '.[rerun]'"
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rerun_run")
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["env.max_steps=25", "logger.progress=false", "logger.plots=false"])
    run(cfg, out)
    return out


@pytest.fixture(scope="module")
def changing_run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The memory agent, warm, in the default world with the oil drum it passed while looking for the
    sunken ship moved far away before it is asked for drums: it goes back to the empty place."""
    out = tmp_path_factory.mktemp("rerun_changing_run")
    overrides = [
        "env.max_steps=45",
        "logger.progress=false",
        "logger.plots=false",
        "experiment.conditions=[warm]",
        "experiment.baselines=[]",
        "world.changes.name=moved_drum",
        "world.changes.changes=[{action: move, object: barrel, instance: 0, task: 2, to: far}]",
    ]
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    run(cfg, out)
    return out


def _events(path: Path) -> dict[str, list[tuple[int, str, str]]]:
    """(step, level, text) of every ``events`` row, per episode name."""
    import rerun.chunk

    events: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    for chunk in rerun.chunk.RrdReader(str(path)).store().stream():
        entity = chunk.entity_path.replace("\\", "")
        if not entity.endswith("/events"):
            continue
        name = entity.removeprefix("/episodes/").removesuffix("/events")
        for row in chunk.to_record_batch().to_pylist():
            for level, text in zip(row["TextLog:level"], row["TextLog:text"], strict=True):
                events[name].append((int(row[f"step:{name}"]), level, text))
    return events


def _read(path: Path) -> tuple[dict[str, Counter[str]], dict[str, int]]:
    """Rows per (entity, timeline) and static rows per entity, read with rerun.chunk.RrdReader."""
    import rerun.chunk

    timed: dict[str, Counter[str]] = defaultdict(Counter)
    static: dict[str, int] = Counter()
    for chunk in rerun.chunk.RrdReader(str(path)).store().stream():
        entity = chunk.entity_path.replace("\\", "")
        if chunk.is_static:
            static[entity] += chunk.num_rows
        for timeline in chunk.timeline_names:
            if timeline.startswith("step:"):
                timed[entity][timeline] += chunk.num_rows
    return timed, static


def test_a_run_directory_becomes_one_timeline_per_episode(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.rrd"
    assert replay_main([str(run_dir), "--rerun", str(out)]) == 0
    timed, static = _read(out)
    logs = {p.stem: read_log(p) for p in sorted((run_dir / "episodes").glob("*.json"))}
    assert len(logs) == 6
    assert not any(text.startswith("stale-target visit") for rows in _events(out).values() for _, _, text in rows)
    for name, log in logs.items():
        root = f"/episodes/{name}"
        steps = len(log.actions)
        timeline = f"step:{name}"
        for entity in ("camera", "sonar", "map/robot", "map/heading", "map/trail", "metrics/distance_m"):
            assert timed[f"{root}/{entity}"] == {timeline: steps}, (name, entity)
        assert static[f"{root}/map/seabed"] == 1 and static[f"{root}/map/target"] == 1
        queries = timed[f"{root}/memory/query"][timeline]
        assert queries == len(log.retrievals), name  # every logged memory query, at its step
        if log.record.agent == "memory":
            assert timed[f"{root}/graph"] == {timeline: steps}, name
            if log.retrievals:
                assert timed[f"{root}/memory/hit0/thumbnail"][timeline] == queries
                assert timed[f"{root}/memory/hit0/info"][timeline] == queries


def test_bad_command_lines_are_one_line(tmp_path: Path, run_dir: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "embodmem.replay", str(run_dir), "--rerun", str(tmp_path / "out.mp4")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == f"embodmem-replay: error: --rerun: {str(tmp_path / 'out.mp4')!r} is not allowed; allowed: a .rrd file"
    )
    (tmp_path / "empty").mkdir()
    assert replay_main([str(tmp_path / "empty"), "--rerun", str(tmp_path / "x.rrd")]) == 1
    assert not (tmp_path / "x.rrd").exists()


def test_stale_target_visits_are_warnings_one_per_visit(changing_run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "changing.rrd"
    assert replay_main([str(changing_run_dir), "--rerun", str(out)]) == 0
    events = _events(out)
    logs = {p.stem: read_log(p) for p in sorted((changing_run_dir / "episodes").glob("*.json"))}
    assert len(logs) == 2
    visits_in_all = 0
    for name, log in logs.items():
        stale = [(step, level, text) for step, level, text in events[name] if text.startswith("stale-target visit")]
        visits = log.record.stat("stale_target_visits")
        assert len(stale) == visits, name
        assert [text.split(":")[0] for _, _, text in stale] == [f"stale-target visit {k}" for k in range(1, visits + 1)]
        assert all(level == "WARN" for _, level, _ in stale)
        assert all("the barrel stood here before move of barrel 0 (task 2, step 0)" in text for _, _, text in stale)
        assert [step for step, _, _ in stale] == sorted(step for step, _, _ in stale)
        assert all(1 <= step <= len(log.actions) for step, _, _ in stale)
        visits_in_all += visits
    assert visits_in_all > 0  # the run exercises what it checks
