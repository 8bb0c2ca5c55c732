"""Every docstring example of the installed package runs, module by module, under its installed name.

The modules are found by walking the packages as installed (``embodmem.agents`` is the repository's
``agents/``), so each example imports the same module objects the code uses; ``--doctest-modules``
over the folders would import ``agents/`` a second time as a top-level package.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import embodmem
import embodmem.agents
import embodmem.envs

PACKAGES = (embodmem, embodmem.agents, embodmem.envs)
SKIP = {"embodmem.__main__", "embodmem.report.__main__"}
"""Modules that run a program when imported (the command-line entry points)."""


def module_names() -> list[str]:
    names = set()
    for package in PACKAGES:
        names.add(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            names.add(info.name)
    return sorted(names - SKIP)


MODULES = module_names()
FINDER = doctest.DocTestFinder(exclude_empty=True)


def examples(name: str) -> list[doctest.DocTest]:
    module = importlib.import_module(name)
    return [t for t in FINDER.find(module, name) if t.examples and t.name.startswith(name)]


def test_the_walk_finds_the_mapped_packages_and_their_examples() -> None:
    """The collector cannot pass by finding nothing: it sees every package and most examples."""
    for name in ("embodmem.agents.vlm.config", "embodmem.envs.underwater", "embodmem.memory.store", "embodmem.report"):
        assert name in MODULES
    with_examples = [name for name in MODULES if examples(name)]
    assert len(with_examples) >= 30, with_examples


@pytest.mark.parametrize("name", MODULES)
def test_module_examples(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here, never into the repository
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    for test in examples(name):
        runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(report)
