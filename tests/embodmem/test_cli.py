"""``embodmem-run`` as users meet it: bad values are one line and exit 2 before anything is written."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from embodmem.app import CONFIG_DIR
from embodmem.config import ConfigError, validate
from embodmem.preflight import PreflightError, check_command_line
from embodmem.report.tables import READING_GUIDE

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bad_inputs", ROOT / "probes" / "bad_inputs.py")
assert _spec is not None and _spec.loader is not None
bad_inputs = sys.modules["bad_inputs"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bad_inputs)


@pytest.mark.parametrize(("what", "args"), bad_inputs.BAD_VALUES, ids=[w for w, _ in bad_inputs.BAD_VALUES])
def test_bad_value_is_one_line_exit_2_and_leaves_nothing(what: str, args: list[str]) -> None:
    """The benchmark's list, through the real console script in an empty directory (no timing asserted)."""
    outcome = bad_inputs.run_one(args)
    assert outcome.exit_code == 2, (what, outcome.stderr[-2000:])
    assert outcome.stderr_lines == 1 and outcome.stderr.startswith("embodmem-run: error: "), outcome.stderr
    assert outcome.stdout == ""
    assert outcome.left == [], f"{what}: left {outcome.left} behind"
    assert bad_inputs.SECRET not in outcome.stderr
    key = next((a.split("=", 1)[0].lstrip("+") for a in args if "=" in a and not a.startswith("hydra/")), "")
    if key and "/" not in key and not key.startswith("hydra."):  # group options name the group instead
        assert key.split(".")[-1] in outcome.stderr, outcome.stderr


def test_the_list_covers_at_least_ten_values() -> None:
    assert len(bad_inputs.BAD_VALUES) >= 10


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["agent=oracle", "experiment.baselines=[]", "experiment.tasks=[barrel]"],
        ["-m", "seed=0,1", "agent=explorer,random", "hydra/launcher=joblib"],
        ["-m", "hydra/launcher=slurm", "seed=0,1"],
        ["experiment.load_memory=null", "+hydra.job.env_set.FOO=bar"],
    ],
)
def test_good_command_lines_pass_the_preflight(argv: list[str]) -> None:
    check_command_line(argv, CONFIG_DIR)


def test_every_job_of_a_sweep_is_checked() -> None:
    with pytest.raises(PreflightError, match=r"^experiment.world_seeds: -2 is not allowed; allowed: an integer >= 0$"):
        check_command_line(["-m", "seed=0,1", "experiment.world_seeds=[1000],[-2]"], CONFIG_DIR)


def test_a_key_is_never_echoed_in_full() -> None:
    key = "sk-live-abcdefghijklmnopqrstuvwxyz0123"
    with pytest.raises(PreflightError) as err:
        check_command_line(["agent=vlm_openai", f"agent.vlm.api_key_env={key}"], CONFIG_DIR)
    assert key not in str(err.value) and "sk-... (38 characters)" in str(err.value)


def test_validation_is_table_driven_and_names_key_value_and_allowed() -> None:
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["env.sonar_fov_deg=0"])
    with pytest.raises(ConfigError, match=r"^env.sonar_fov_deg: 0.0 is not allowed; allowed: a number in \(0, 360\]$"):
        validate(cfg)


def test_agents_never_stop_farther_than_the_task_counts_as_success() -> None:
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["env.success_distance_m=5"])
        validate(compose("config", overrides=["env.success_distance_m=5", "agent.stop_range_cells=1"]))
    with pytest.raises(
        ConfigError,
        match=r"^agent.stop_range_cells: 2.0 is not allowed; allowed: a number in \[1, env.success_distance_m / "
        r"env.cell_size_m = 1\]$",
    ):
        validate(cfg)


def test_library_chatter_stays_off_the_terminal_and_in_the_log(tmp_path: Path) -> None:
    """open_clip logs each model load at INFO (an embedder on torch builds the model: on the CPU one with
    the exported graphs and text table does not); the terminal shows the tables only, the job log keeps it."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "embodmem",
            "agent=explorer",
            "experiment.baselines=[]",
            "experiment.tasks=[barrel]",
            "env.max_steps=5",
            "embedder.runtime=torch",
            "logger.progress=false",
            "logger.plots=false",
            f"hydra.run.dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "[INFO]" not in proc.stdout + proc.stderr
    assert proc.stdout.rstrip().splitlines()[-1] == READING_GUIDE, "the run ends by pointing at the reading guide"
    assert "Loading full pretrained weights" in (tmp_path / "app.log").read_text()
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 1
    assert json.loads((tmp_path / "metrics.jsonl").read_text())["agent"] == "explorer"


def test_user_config_dirs_are_composed_as_hydra_will(tmp_path: Path) -> None:
    """hydra.searchpath and --config-dir reach the preflight's composer too (no false refusals)."""
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text("defaults:\n  - base_experiment\nworld_seeds: [-7]\n")
    for argv in (
        [f"hydra.searchpath=[file://{tmp_path}]", "experiment=mine"],
        ["--config-dir", str(tmp_path), "experiment=mine"],
    ):
        with pytest.raises(PreflightError, match=r"^experiment.world_seeds: -7 is not allowed"):
            check_command_line(argv, CONFIG_DIR)
    with pytest.raises(PreflightError, match=r"^experiment: 'mine' is not allowed; allowed: .*wreck_then_barrel"):
        check_command_line(["experiment=mine"], CONFIG_DIR)


@pytest.mark.parametrize(
    ("what", "name", "args"), bad_inputs.NEWCOMER_MISTAKES, ids=[w for w, _, _ in bad_inputs.NEWCOMER_MISTAKES]
)
def test_newcomer_mistake_is_one_line_exit_2_and_leaves_nothing(what: str, name: str, args: list[str]) -> None:
    """The 25 mistakes of probes/bad_inputs.py, through the real console scripts in an empty directory."""
    outcome = bad_inputs.run_one(args, name=name)
    assert outcome.exit_code == 2, (what, outcome.stderr[-2000:])
    assert outcome.stderr_lines == 1 and outcome.stderr.startswith(f"{name}: error: "), outcome.stderr
    assert outcome.stdout == "" and outcome.left == [], (what, outcome.stdout, outcome.left)
    assert bad_inputs.SECRET not in outcome.stderr


def test_the_newcomer_list_has_25_mistakes_in_three_commands() -> None:
    assert len(bad_inputs.NEWCOMER_MISTAKES) == 25
    assert {name for _, name, _ in bad_inputs.NEWCOMER_MISTAKES} == {
        "embodmem-run",
        "embodmem-report",
        "embodmem-replay",
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seed", "1"], "--seed: not an option of embodmem-run; config values are set as key=value, e.g. seed=1 "),
        (["--agent=memory"], "e.g. agent=memory "),
        (
            ["experiment.world_seeds=1001"],
            "experiment.world_seeds: 1001 is not allowed; allowed: a list, e.g. experiment.world_seeds=[1001]",
        ),
        (
            ["agent=base_agent"],
            "agent: 'base_agent' is not allowed (a schema the configs extend); allowed: explorer, memory,",
        ),
        (["experiment=wreck_then_barrel.yaml"], "(option names, without .yaml: experiment=wreck_then_barrel)"),
        (["-m", "agent=memory,base_agent"], "agent: 'base_agent' is not allowed"),
        (["seed=abc"], "seed: 'abc' is not allowed; allowed: an integer"),
    ],
)
def test_hints_name_the_fix(argv: list[str], message: str) -> None:
    with pytest.raises(PreflightError) as err:
        check_command_line(argv, CONFIG_DIR)
    assert message in str(err.value)


def test_allowed_lists_leave_out_the_schema_entries() -> None:
    with pytest.raises(PreflightError) as err:
        check_command_line(["agent=octopus"], CONFIG_DIR)
    assert "allowed: explorer, memory" in str(err.value) and "base_" not in str(err.value)


def test_compose_is_the_cli_config_with_the_cli_checks(recwarn: pytest.WarningsRecorder) -> None:
    """The README's snippet: embodmem.compose applies embodmem-run's checks, and Hydra does not warn."""
    import embodmem

    cfg = embodmem.compose(["agent=explorer", "env.max_steps=50"])
    assert cfg.agent.name == "explorer" and cfg.env.max_steps == 50 and "hydra" not in cfg
    assert not [w for w in recwarn if "version_base" in str(w.message)]
    for overrides, message in [
        (["env.max_steps=-5"], "env.max_steps: -5 is not allowed; allowed: an integer >= 1"),
        (["agent=base_agent"], "agent: 'base_agent' is not allowed"),
        (["seed=0,1"], "seed=0,1: a sweep; compose() makes one job"),
    ]:
        with pytest.raises(PreflightError, match=re.escape(message)):
            embodmem.compose(overrides)
