"""The package's structure: no import cycle, a light config layer, a typed runner-agent contract.

The import contracts live in ``pyproject.toml`` ([tool.importlinter]) and are checked by
``scripts/typecheck.py`` on the installed layout (``embodmem.agents`` is ``agents/``); here the same
check runs on a tree built in a temporary folder, and once more on a tree with a cycle put in, which
it must refuse.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def typecheck_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("typecheck", ROOT / "scripts" / "typecheck.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_import_contracts_hold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = typecheck_script()
    tree = script.link_tree(tmp_path / "tree")
    assert (tree / "embodmem" / "agents" / "base.py").resolve() == ROOT / "agents" / "base.py"
    status = script.run_import_contracts(tree)
    out = capsys.readouterr().out
    assert status == 0, out
    assert "Contracts: 2 kept, 0 broken" in out


def test_an_import_cycle_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The check is live: a leaf module that imports the config layer back makes a cycle it reports."""
    script = typecheck_script()
    tree = script.link_tree(tmp_path / "tree")
    leaf = tree / "embodmem" / "checks.py"
    text = leaf.read_text()
    leaf.unlink()  # a real file in place of the link: the repository stays as it is
    leaf.write_text(text + "\n\ndef _cycle() -> None:\n    import embodmem.config  # noqa: F401\n")
    status = script.run_import_contracts(tree)
    out = capsys.readouterr().out
    assert status != 0 and "BROKEN" in out and ".checks -> .config" in out, out
    assert (ROOT / "embodmem" / "checks.py").read_text() == text


def _probes(path: Path) -> list[str]:
    """``hasattr(...)`` / ``getattr(...)`` calls in ``path``, as source text."""
    tree = ast.parse(path.read_text())
    return [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr")
    ]


@pytest.mark.parametrize(
    "path",
    [
        ROOT / "embodmem" / "runner.py",
        ROOT / "embodmem" / "app.py",
        *sorted((ROOT / "embodmem" / "video").glob("*.py")),
    ],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_the_runner_and_the_recorder_use_the_agent_contract_not_probes(path: Path) -> None:
    """They call the methods of Agent and MemoryCarrier (agents/base.py); mypy checks the calls."""
    assert _probes(path) == []
