"""Settings for the whole test run: no test writes into the repository, and every skip names what to
install or start.

Hypothesis would keep its example database and its constants cache in ``.hypothesis/`` under the
working directory; here both live in a temporary folder (the database in memory), removed at exit.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import configuration, settings
from hypothesis.database import InMemoryExampleDatabase

_HOME = tempfile.mkdtemp(prefix="embodmem-hypothesis-")
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
configuration.set_hypothesis_home_dir(_HOME)
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
