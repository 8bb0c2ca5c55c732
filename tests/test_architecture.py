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
    assert "Contracts: 3 kept, 0 broken" in out


@pytest.mark.parametrize(
    "leaf_name, addition, reported",
    [
        ("checks.py", "\n\ndef _cycle() -> None:\n    import embodmem.config  # noqa: F401\n", ".checks -> .config"),
        # TYPE_CHECKING imports count too (the snapshot once reached back to the memory class so)
        (
            "memory/snapshot.py",
            "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from embodmem.memory.episodic import AgentMemory  # noqa: F401\n",
            ".snapshot -> .episodic",
        ),
        # an agent may not read the world generator
        (
            "agents/explorer.py",
            "\n\nimport embodmem.envs.world  # noqa: F401, E402\n",
            "embodmem.agents.explorer -> embodmem.envs.world",
        ),
    ],
    ids=["cycle", "type-checking-cycle", "agent-reads-world"],
)
def test_a_broken_contract_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], leaf_name: str, addition: str, reported: str
) -> None:
    """The check is live: each planted import breaks a contract, which it reports."""
    script = typecheck_script()
    tree = script.link_tree(tmp_path / "tree")
    leaf = tree / "embodmem" / leaf_name
    if leaf.parent.is_symlink():  # a linked package folder: a real folder of links in its place
        source = leaf.parent.resolve()
        leaf.parent.unlink()
        leaf.parent.mkdir()
        for entry in source.iterdir():
            (leaf.parent / entry.name).symlink_to(entry)
    text = leaf.read_text()
    leaf.unlink()  # a real file in place of the link: the repository stays as it is
    leaf.write_text(text + addition)
    status = script.run_import_contracts(tree)
    out = capsys.readouterr().out
    assert status != 0 and "BROKEN" in out and reported in out, out
    original = (ROOT / "embodmem" / leaf_name) if not leaf_name.startswith("agents/") else ROOT / leaf_name
    assert original.read_text() == text


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
