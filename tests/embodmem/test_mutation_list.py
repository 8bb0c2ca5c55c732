"""The reviewed equivalent mutants (benchmarks/mutation_equivalent.txt) name lines the code still has:
an entry whose line changed no longer proves anything, and the mutation run refuses to start on it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _mutation_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_mutation", ROOT / "benchmarks" / "mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through sys.modules
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_every_listed_equivalent_names_a_line_its_module_still_has() -> None:
    mutation = _mutation_script()
    equivalents = mutation.read_equivalents(mutation.EQUIVALENTS)
    assert equivalents
    stale = mutation.stale_equivalents(equivalents)
    assert not stale, [f"{e.module} :: {e.function} :: {e.edit}" for e in stale]


def test_a_stale_entry_is_refused_before_any_mutant_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mutation = _mutation_script()
    listed = tmp_path / "equivalent.txt"
    listed.write_text("embodmem/stats.py :: mean_ci :: a line that is gone ==> another :: why\n", encoding="utf-8")
    try:
        code = mutation.main(["--equivalents", str(listed), "--results", str(tmp_path / "r.md")])
    except SystemExit as exit:
        code = exit.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a line that is gone" in err and "--equivalents" in err
    assert not (tmp_path / "r.md").exists()
