"""Settings for the whole test run: no test writes into the repository, the temporary directory or the
home directory, and every skip names what to install or start.

Everything a test run writes outside pytest's ``tmp_path`` goes to one folder of the session's own,
removed at exit: the temporary directory itself (``TMPDIR`` and :data:`tempfile.tempdir`, so
``tmp_path``, the temp files of subprocesses, Stable-Baselines3's ``SB3-*`` log folders, ONNX Runtime's
session file and Torch's compiler cache land there too) and the caches libraries keep in the home
directory (Matplotlib's font cache, ONNX Runtime's telemetry under ``~/.cache``, Torch and Hugging
Face homes). Hypothesis keeps its example database in memory. Numba's cache of compiled kernels stays
where Numba puts it (``__pycache__`` beside the source), which git ignores.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import configuration, settings
from hypothesis.database import InMemoryExampleDatabase

SESSION_DIR = tempfile.mkdtemp(prefix="embodmem-tests-")
"""The one folder the whole run writes into outside the work tree; removed at exit."""
atexit.register(shutil.rmtree, SESSION_DIR, ignore_errors=True)


def _session_folder(name: str) -> str:
    path = os.path.join(SESSION_DIR, name)
    os.makedirs(path, exist_ok=True)
    return path


_TMP = _session_folder("tmp")
os.environ["TMPDIR"] = _TMP  # subprocesses
tempfile.tempdir = _TMP  # this process (tempfile caches the directory it found first)
for variable, folder in (
    ("XDG_CACHE_HOME", "cache"),
    ("XDG_CONFIG_HOME", "config"),
    ("XDG_DATA_HOME", "data"),
    ("MPLCONFIGDIR", "matplotlib"),
    ("TORCH_HOME", "torch"),
    ("TORCHINDUCTOR_CACHE_DIR", "torchinductor"),
    ("HF_HOME", "huggingface"),
):
    os.environ[variable] = _session_folder(folder)

configuration.set_hypothesis_home_dir(_session_folder("hypothesis"))
settings.register_profile("embodmem", database=InMemoryExampleDatabase())
settings.load_profile("embodmem")


SKIP_REASON_NAMES = ("pip install", "slurm-up.sh")
"""A skip must say what to install or start (an extra, or the Slurm cluster): a skip that names
nothing leaves a new user unable to run the test, and can hide a failure."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail") and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2])
        if not any(name in reason for name in SKIP_REASON_NAMES):
            report.outcome = "failed"
            report.longrepr = f"skipped without naming what to install or start ({SKIP_REASON_NAMES}): {reason}"
