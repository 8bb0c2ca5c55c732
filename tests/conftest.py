"""Settings for the whole test run: no test writes into the repository.

Hypothesis would keep its example database and its constants cache in ``.hypothesis/`` under the
working directory; here both live in a temporary folder (the database in memory), removed at exit.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile

from hypothesis import configuration, settings
from hypothesis.database import InMemoryExampleDatabase

_HOME = tempfile.mkdtemp(prefix="embodmem-hypothesis-")
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
configuration.set_hypothesis_home_dir(_HOME)
settings.register_profile("embodmem", database=InMemoryExampleDatabase())
settings.load_profile("embodmem")
