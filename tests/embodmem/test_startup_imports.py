"""``embodmem-run --help`` and a refused command line load no model, index, renderer or plotting
library: the config is composed, every key checked and the one line printed first. Each case runs in
a fresh interpreter (the imports of this test process prove nothing); what it imported is read back
from ``sys.modules``, never timed (benchmarks/startup.py measures the time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("torch", "open_clip", "timm", "wandb", "numba", "faiss", "cv2", "matplotlib", "minigrid", "networkx")
"""What neither the help nor a refusal needs: the CLIP, the memory index, the renderer, the plots."""

PROBE = """
import json, sys
args, heavy = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.argv = ["embodmem-run", *args]
from embodmem.app import main
try:
    main()
    code = 0
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "loaded": sorted(m for m in heavy if m in sys.modules)}))
"""


def imports_of(
    args: list[str], cwd: Path, modules: tuple[str, ...] = HEAVY, timeout: float = 120
) -> tuple[int, list[str], str]:
    """Exit code, which of ``modules`` it loaded, and stderr of ``embodmem-run ARGS`` in a fresh
    interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args), json.dumps(modules)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return int(report["code"]), list(report["loaded"]), done.stderr


def printed_by(probe: str, cwd: Path) -> list[str]:
    """The words ``probe`` (Python source) prints in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.split()


@pytest.mark.parametrize(
    "args",
    [
        ["agent=nope"],
        ["env.max_steps=-5"],
        [
            "world/changes=moved_half",
            "experiment.sequence=revisit_shallow8",
            "world.changes.changes.2.object=kraken",
        ],
    ],
    ids=["unknown-agent", "out-of-range", "bad-world-change"],
)
def test_a_refused_command_line_imports_no_heavy_module(args: list[str], tmp_path: Path) -> None:
    code, loaded, stderr = imports_of(args, tmp_path)
    assert code == 2 and stderr.startswith("embodmem-run: error: ") and stderr.count("\n") == 1, stderr
    assert loaded == [], f"refusing {args} imported {loaded}"
    assert list(tmp_path.iterdir()) == []


def test_help_imports_no_heavy_module(tmp_path: Path) -> None:
    code, loaded, stderr = imports_of(["--help"], tmp_path)
    assert code == 0, stderr
    assert loaded == [], f"--help imported {loaded}"


@pytest.mark.slow  # imports torch and open_clip: tens of seconds on a busy 2-core machine
def test_the_clip_module_loads_without_wandb(tmp_path: Path) -> None:
    """timm, under open_clip, would import wandb (an optional extra, seconds to import) at start-up;
    the embedder's module keeps it out, and wandb still imports afterwards for the trackers."""
    pytest.importorskip("wandb")
    probe = (
        "import sys, embodmem.embedding.model\n"
        "before = 'wandb' in sys.modules\n"
        "import wandb\n"
        "print(before, bool(wandb.__version__))\n"
    )
    assert printed_by(probe, tmp_path) == ["False", "True"]


NOT_FOR_A_CPU_JOB = ("torch", "open_clip", "openai")
"""What a CPU job of the stock agents never needs: the frames go through the shipped ONNX graphs,
the texts come from the text table, and only a VLM agent talks to an HTTP server."""


@pytest.mark.parametrize("extra", [[], ["experiment.poison_k=5"]], ids=["suite", "implanted-frames"])
def test_a_cpu_job_imports_no_torch_and_no_http_client(extra: list[str], tmp_path: Path) -> None:
    """Also a run that implants K frames at once before a task (they take the batch graph)."""
    args = [
        "experiment=suite",
        "experiment.variants=[memory]",
        "experiment.baselines=[explorer]",
        "experiment.split=dev",
        "experiment.world_seeds=[1000]",
        "experiment.sequences=[wreck_then_barrel]",
        "embedder.device=auto",
        "logger.progress=false",
        "logger.plots=false",
        "logger.episode_logs=false",
        f"hydra.run.dir={tmp_path / 'run'}",
        *extra,
    ]
    code, loaded, stderr = imports_of(args, tmp_path, NOT_FOR_A_CPU_JOB, timeout=300)
    assert code == 0, stderr
    assert (tmp_path / "run" / "metrics.jsonl").is_file()
    assert loaded == [], f"a CPU job imported {loaded}"


def test_the_plugin_api_imports_the_http_client_only_for_its_vlm_names(tmp_path: Path) -> None:
    """A memory or policy plug-in imports ``embodmem.api``; only its VLM names need openai."""
    probe = (
        "import sys, embodmem.api as api\n"
        "before = 'openai' in sys.modules\n"
        "names = [api.VLMPolicy.__name__, api.ChatBackend.__name__, api.CallableBackend.__name__]\n"
        "print(before, 'openai' in sys.modules, *names)\n"
    )
    assert printed_by(probe, tmp_path) == ["False", "True", "VLMPolicy", "ChatBackend", "CallableBackend"]
