"""Plug-ins from outside the package: examples/my_memory by module:Class path and by entry point.

The example package is used from its source folder (``sys.path``) and, for entry points, through a
``*.dist-info`` folder written into the test's tmp_path (what ``pip install`` would leave), so nothing
is installed and nothing is left behind. Installing it for real is examples/my_memory/ci.sh's job.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from omegaconf import DictConfig

import embodmem
from embodmem.app import build_agent, build_embedder, build_env, experiment_plan, main, run
from embodmem.config import ConfigError
from embodmem.plugins import installed
from embodmem.preflight import PreflightError, check_command_line, check_feasible, plugin_listing, plugin_overrides

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "my_memory"
EXAMPLE_SRC = EXAMPLE / "src"
RECENCY = "my_memory.memory:RecencyMemory"
POLICY = "my_memory.policy:make_agent"
SMALL = ["experiment.tasks=[wreck,barrel]", "env.max_steps=25", "logger.plots=false", "logger.progress=false"]
ONE_WORLD = "experiment.world_seeds=[1000]"

BAD_PLUGINS = '''
import numpy as np
from embodmem.api import AgentMemory


class HalfMemory:
    """A memory that forgot hit_vectors and load."""

    def __init__(self, config): self.config = config
    def reset(self): pass
    def observe(self, e, m): return None
    def flush(self): return 0
    def query(self, v, k=5, where=None, *, count_hits=True): return []
    def stats(self): return {}
    def sleep(self): return None
    def save(self, d): return d


class ActOnly:
    def act(self, observation): return 0


def make_nothing(ctx):
    return 42


make_nothing.needs_embedder = False


class FirstChoice:
    """An EQA answerer plug-in: always the first choice."""

    def __init__(self, embedder): self.embedder = embedder
    def start_tour(self, tour, spec): pass
    def observe(self, observation, step): pass
    def stats(self): return {}

    def answer(self, question):
        from embodmem.api import Answer
        return Answer(choice=question.choices[0]) if question.choices else Answer(point=(0.0, 0.0))


class FlakyMemory(AgentMemory):
    """The stock memory, whose third query fails."""

    def query(self, *args, **kwargs):
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls == 3:
            raise RuntimeError("index corrupted")
        return super().query(*args, **kwargs)
'''


def _forget(prefixes: tuple[str, ...]) -> None:
    for name in [m for m in sys.modules if m.split(".")[0] in prefixes]:
        del sys.modules[name]


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """examples/my_memory importable from its source folder."""
    monkeypatch.syspath_prepend(str(EXAMPLE_SRC))
    yield
    _forget(("my_memory",))


@pytest.fixture
def installed_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, example: None) -> None:
    """The example's entry points, as an installed distribution's metadata (no pip, nothing left behind)."""
    import tomllib

    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    dist = tmp_path / "site" / "embodmem_my_memory-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    lines = []
    for group, entries in project["entry-points"].items():
        lines += [f"[{group}]", *(f"{name} = {target}" for name, target in entries.items()), ""]
    (dist / "entry_points.txt").write_text("\n".join(lines))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))


@pytest.fixture
def bad_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    (tmp_path / "bad_plugins.py").write_text(textwrap.dedent(BAD_PLUGINS))
    (tmp_path / "broken_plugin.py").write_text("import torchvision_that_is_not_there\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    _forget(("bad_plugins", "broken_plugin"))


def test_the_example_runs_beside_the_stock_memory_on_two_worlds(
    tmp_path: Path, example: None, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = embodmem.compose(
        [
            *SMALL,
            "experiment.world_seeds=[1000,1001]",
            f"experiment.variants=[{RECENCY}]",
            f"experiment.baselines=[{POLICY}]",
        ]  # fmt: skip
    )
    records = run(cfg, tmp_path)
    runs = {(r.agent, str(r.condition)) for r in records}
    assert {(RECENCY, "warm"), (RECENCY, "cold"), ("memory", "warm"), (POLICY, "single")} <= runs
    assert len(records) == 2 * 2 * (2 * 2 + 1)  # worlds x tasks x (two memories warm+cold, one baseline)
    out = capsys.readouterr().out
    assert out.index("Memory designs side by side") < out.index("== sequence")
    designs = (tmp_path / "designs.csv").read_text()
    assert RECENCY in designs and POLICY in designs
    mine = [r for r in records if r.agent == RECENCY and str(r.condition) == "warm"]
    stock = [r for r in records if r.agent == "memory" and str(r.condition) == "warm"]
    # a different design: one float16 vector per (cell, heading), against the stock float32 store
    assert all(r.memory_bytes == r.memory_frames * 128 * 2 for r in mine)
    assert [r.memory_frames for r in mine] != [r.memory_frames for r in stock]


def test_entry_points_are_listed_named_and_resolved(
    installed_example: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert installed("memory")["recency"].value == RECENCY and installed("agent")["wall_follower"].value == POLICY
    listing = plugin_listing()
    assert "recency = my_memory.memory:RecencyMemory" in listing and "wall_follower = " in listing
    monkey_argv = ["embodmem-run", "--list-plugins"]
    old, sys.argv = sys.argv, monkey_argv
    try:
        main()
    finally:
        sys.argv = old
    assert "recency = my_memory.memory:RecencyMemory" in capsys.readouterr().out
    assert plugin_overrides(["agent=recency", "agent=wall_follower"], ROOT / "configs") == [
        "agent.memory=recency",
        "agent.plugin=wall_follower",
    ]
    cfg = embodmem.compose(["agent.memory=recency", "experiment.variants=[memory,memory_no_recall+recency]"])
    plan = experiment_plan(cfg, Path("unused"))
    assert [name for name, _ in plan.runs][:4] == ["recency", "recency", "memory", "memory"]
    assert plan.plugins == {"recency", "memory_no_recall+recency"}
    with pytest.raises(PreflightError) as err:  # an unknown name lists the installed plug-ins
        embodmem.compose(["experiment.variants=[recncy]"])
    assert "installed plug-ins: embodmem.agents: wall_follower, embodmem.memories: recency" in str(err.value)


def _refusal(argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(sys, "argv", ["embodmem-run", *argv])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["agent.memory=broken_plugin:Memory"], "module 'broken_plugin' does not import (ModuleNotFoundError: No module named 'torchvision_that_is_not_there')"),
        (["agent.memory=bad_plugins:Nope"], "module 'bad_plugins' has no attribute 'Nope'"),
        (["agent.memory=bad_plugins:HalfMemory"], "class bad_plugins:HalfMemory lacks the memory method(s) hit_vectors, load"),
        (["experiment.variants=[bad_plugins:HalfMemory]"], "lacks the memory method(s) hit_vectors, load"),
        (["agent=bad_plugins:ActOnly"], "class bad_plugins:ActOnly lacks the agent method(s) reset, end_task, episode_stats"),
        (["experiment.eqa.answerers=[bad_plugins:ActOnly]"], "class bad_plugins:ActOnly lacks the memory method(s) reset"),
        (["agent=no_such_plugin"], "agent: 'no_such_plugin' is not allowed; allowed: explorer, memory"),
        (["-m", "agent=memory,memory_naive"], "a memory variant is set with agent.variant=<name>"),
    ],
)  # fmt: skip
def test_a_bad_plugin_is_one_line_before_any_work(
    argv: list[str], message: str, bad_plugins: None, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    line = _refusal(
        [*argv, f"hydra.run.dir={tmp_path / 'run'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"], capsys, monkeypatch
    )
    assert message in line, line
    assert not (tmp_path / "run").exists() and not (tmp_path / "sweep").exists()


def test_a_factory_of_the_wrong_type_is_refused_before_any_episode(
    bad_plugins: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    line = _refusal(["agent=bad_plugins:make_nothing", *SMALL, f"hydra.run.dir={tmp_path}"], capsys, monkeypatch)
    assert "bad_plugins:make_nothing returned a int, not an agent: it lacks reset, act" in line
    assert not (tmp_path / "metrics.jsonl").exists()


def test_agent_equals_a_variant_name_runs_that_variant() -> None:
    assert plugin_overrides(["agent=memory_naive"], ROOT / "configs") == ["agent.variant=memory_naive"]
    jobs = check_command_line(["agent=memory_keep_all", "env.max_steps=5"], ROOT / "configs")
    assert jobs[0].agent.variant == "memory_keep_all"
    with pytest.raises(PreflightError, match="agent.variant=memory,memory_naive"):
        check_command_line(["-m", "agent=memory,memory_naive"], ROOT / "configs")


def test_a_plugin_failing_mid_run_is_its_own_record(bad_plugins: None, tmp_path: Path) -> None:
    cfg = embodmem.compose(
        [*SMALL, "experiment.world_seeds=[1000,1001]", "experiment.variants=[bad_plugins:FlakyMemory]"]
    )
    records = run(cfg, tmp_path)
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    failed = [r for r in lines if r.get("aborted")]
    assert failed and {r["agent"] for r in failed} == {"bad_plugins:FlakyMemory"}
    for r in failed:  # which world, which task, which step
        assert r["world_seed"] in (1000, 1001) and r["task"] in ("wreck", "barrel") and r["steps_before_abort"] >= 0
        assert r["abort_reason"] == "RuntimeError: index corrupted"
    stock = [r for r in records if r.agent == "memory"]
    assert len(stock) == 2 * 2 * 2  # every other run complete: worlds x conditions x tasks
    assert {r.agent for r in records} >= {"memory", "explorer"}


def _with_load(cfg: DictConfig, path: Path) -> DictConfig:
    """``cfg`` with ``experiment.load_memory`` set after composing (what check_feasible then refuses)."""
    out = cfg.copy()
    out.experiment.load_memory = str(path)
    return out


def test_save_and_load_keep_the_design(example: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from my_memory.memory import RecencyMemory

    from embodmem.agents.memory_agent import MemoryAgent
    from embodmem.memory import MemoryLoadError

    cfg = embodmem.compose(
        [*SMALL, ONE_WORLD, f"agent.memory={RECENCY}", "experiment.save_memory=true", "experiment.baselines=[]"]
    )
    run(cfg, tmp_path / "saved")
    snapshot = tmp_path / "saved" / "memory" / "world1000"
    # the same class loads it, through its own load
    embedder = build_embedder(cfg)
    env = build_env(cfg, ("wreck",), 1000)
    agent = build_agent(RECENCY, cfg, embedder, env, 0)
    assert isinstance(agent, MemoryAgent)
    agent.load_state(snapshot)
    assert type(agent.memory) is RecencyMemory and agent.memory.stats()["frames_kept"] > 0
    # the stock memory refuses it, at startup and in the agent (resume and replay load through it)
    with pytest.raises(
        PreflightError,
        match=r"memory of class my_memory.memory:RecencyMemory version '1' was saved, but this run's memory is embodmem.memory.episodic:AgentMemory",
    ):
        embodmem.compose([*SMALL, f"experiment.load_memory={snapshot}"])
    plain = build_agent("memory", embodmem.compose(SMALL), embedder, env, 0)
    assert isinstance(plain, MemoryAgent)
    with pytest.raises(MemoryLoadError, match="but this run's memory is embodmem.memory.episodic:AgentMemory"):
        plain.load_state(snapshot)
    # another version of the same class is refused too
    monkeypatch.setattr(RecencyMemory, "version", "2")
    with pytest.raises(
        MemoryLoadError,
        match="version '1' was saved, but this run's memory is my_memory.memory:RecencyMemory version '2'",
    ):
        agent.load_state(snapshot)
    # a stock snapshot into the plug-in: refused naming both
    run(
        embodmem.compose([*SMALL, ONE_WORLD, "experiment.save_memory=true", "experiment.baselines=[]"]),
        tmp_path / "stock",
    )
    stock_snapshot = tmp_path / "stock" / "memory" / "world1000"
    with pytest.raises(
        PreflightError, match="embodmem.memory.episodic:AgentMemory was saved, but this run's memory is my_memory"
    ):
        embodmem.compose([*SMALL, f"agent.memory={RECENCY}", f"experiment.load_memory={stock_snapshot}"])
    with pytest.raises(ConfigError, match="was saved, but this run's memory is my_memory.memory:RecencyMemory"):
        check_feasible(_with_load(cfg, stock_snapshot))  # the check the app runs before any work


@pytest.mark.parametrize(
    "overrides",
    [
        ["env.instance_goals=true", "experiment.tasks=[wreck,description.barrel.yellow_band]"],  # instance goals
        ["experiment=lifelong", "experiment.tasks=[wreck,barrel,wreck]"],  # lifelong: sleep between tasks
    ],
    ids=["instance_goals", "lifelong"],
)
def test_the_plugin_runs_in_other_experiments(overrides: list[str], example: None, tmp_path: Path) -> None:
    cfg = embodmem.compose([*SMALL, *overrides, f"experiment.variants=[{RECENCY}]", f"experiment.baselines=[{POLICY}]"])
    records = run(cfg, tmp_path)
    assert {RECENCY, POLICY} <= {r.agent for r in records}


def test_a_plugin_episode_replays_with_its_agent(example: None, tmp_path: Path) -> None:
    from embodmem.replay import replay

    cfg = embodmem.compose(
        [*SMALL, f"agent.memory={RECENCY}", "experiment.baselines=[]", "experiment.conditions=[warm]"]
    )
    run(cfg, tmp_path)
    log = next(p for p in sorted((tmp_path / "episodes").glob("*task=2*")) if "RecencyMemory" in p.name)
    result = replay(log, agent=True)
    assert result.agent_check is not None and result.agent_check.retrievals > 0


@pytest.mark.slow  # two fresh processes (about 30 s on an idle machine): the launcher, not the plug-in, is slow
def test_a_plugin_runs_in_a_joblib_multirun(example: None, tmp_path: Path) -> None:
    env = {**__import__("os").environ, "PYTHONPATH": f"{EXAMPLE_SRC}:{ROOT}"}
    cmd = [
        sys.executable, "-m", "embodmem", "-m", "hydra/launcher=joblib", "seed=0,1", f"agent={POLICY}",
        "experiment.baselines=[]", "experiment.tasks=[barrel]", "experiment.world_seeds=[1000]", "env.max_steps=10",
        "logger.progress=false", "logger.plots=false", f"hydra.sweep.dir={tmp_path}",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    for job in ("0", "1"):
        records = [json.loads(line) for line in (tmp_path / job / "metrics.jsonl").read_text().splitlines()]
        assert [r["agent"] for r in records] == [POLICY]


def test_a_plugin_runs_in_a_slurm_multirun(example: None, tmp_path: Path) -> None:
    from tests.embodmem.test_slurm import require_slurm

    require_slurm()
    env = {**__import__("os").environ, "PYTHONPATH": f"{EXAMPLE_SRC}:{ROOT}"}
    cmd = [
        sys.executable, "-m", "embodmem", "-m", "hydra/launcher=slurm", "seed=0,1", f"agent.memory={RECENCY}",
        "experiment.baselines=[]", "experiment.tasks=[barrel]", "experiment.world_seeds=[1000]", "env.max_steps=10",
        "experiment.conditions=[warm]", "logger.progress=false", "logger.plots=false", f"hydra.sweep.dir={tmp_path}",
        "hydra.launcher.timeout_min=5",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    for job in ("0", "1"):
        records = [json.loads(line) for line in (tmp_path / job / "metrics.jsonl").read_text().splitlines()]
        assert [r["agent"] for r in records] == [RECENCY]


def test_an_answerer_plugin_is_checked_built_and_named(bad_plugins: None) -> None:
    from embodmem.eqa.answerers import AnswererContext, build_answerer, check_answerers
    from embodmem.eqa.files import load_questions, question_file

    dev = load_questions(question_file("dev"))
    check_answerers(["blind", "bad_plugins:FirstChoice"])
    answerer = build_answerer("bad_plugins:FirstChoice", AnswererContext(None, dev, {}))  # type: ignore[arg-type]
    question = next(q for q in dev.questions if q.choices)
    assert answerer.name == "bad_plugins:FirstChoice" and answerer.answer(question).choice == question.choices[0]
    with pytest.raises(ValueError, match=r"^answerer 'psychic' is unknown; allowed: blind.*or a 'module:Class' path"):
        check_answerers(["psychic"])


def test_a_resume_refuses_a_plugin_name_that_now_means_another_class(
    example: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from my_memory.memory import RecencyMemory

    from embodmem.app import pin_plugins

    plan = experiment_plan(embodmem.compose([*SMALL, f"experiment.variants=[{RECENCY}]"]), tmp_path)
    pin_plugins(tmp_path, plan, resume=False)
    assert json.loads((tmp_path / "plugins.json").read_text()) == {RECENCY: f"{RECENCY} version 1"}
    pin_plugins(tmp_path, plan, resume=True)  # the same class: fine
    monkeypatch.setattr(RecencyMemory, "version", "2")
    with pytest.raises(
        ConfigError,
        match=rf"plug-in '{RECENCY}' was {RECENCY} version 1 in the run being resumed, now {RECENCY} version 2",
    ):
        pin_plugins(tmp_path, plan, resume=True)


@pytest.mark.slow  # pip-installs the example into a fresh venv and runs two worlds (minutes)
def test_the_ci_script_installs_the_example_and_finds_it_in_the_table() -> None:
    proc = subprocess.run(["bash", str(EXAMPLE / "ci.sh")], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "appears in the designs table" in proc.stdout
