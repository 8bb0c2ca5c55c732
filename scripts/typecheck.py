"""Static checks of the installed package: mypy (types) and import-linter (no import cycles, layers).

``pyproject.toml`` maps ``embodmem.envs`` to ``envs/``, ``embodmem.agents`` to ``agents/`` and
``embodmem.configs`` to ``configs/``. Neither mypy nor import-linter follows a package-dir mapping, so
this script builds the layout a wheel installs, as a tree of symbolic links to the repository's own
files, and checks that tree; mypy's messages name the repository's paths again (``agents/base.py``,
not ``embodmem/agents/base.py``). Both tools read their settings from ``pyproject.toml``.

    python scripts/typecheck.py              # mypy, then the import contracts; exit 1 on any error
    python scripts/typecheck.py --mypy       # only mypy
    python scripts/typecheck.py --imports    # only the import contracts
    python scripts/typecheck.py --tree DIR   # build the linked tree in DIR (default: .mypy_cache/tree)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
SKIP = {"__pycache__"}


def package_dirs(root: Path = ROOT) -> dict[str, Path]:
    """``[tool.setuptools.package-dir]``: package name -> its folder in the repository."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    return {pkg: root / folder for pkg, folder in config["tool"]["setuptools"]["package-dir"].items()}


def link_tree(dest: Path, root: Path = ROOT) -> Path:
    """The installed layout under ``dest``: real folders where a mapped package holds another, links
    to the repository's files and folders everywhere else. Returns ``dest``."""
    mapping = package_dirs(root)
    if dest.exists():
        shutil.rmtree(dest)
    for pkg in sorted(mapping, key=lambda p: p.count(".")):
        target = dest.joinpath(*pkg.split("."))
        inner = {p.rpartition(".")[2] for p in mapping if p.rpartition(".")[0] == pkg}
        if inner:  # a real folder: its entries are links, the mapped subpackages come from their own folders
            target.mkdir(parents=True)
            for entry in mapping[pkg].iterdir():
                if entry.name not in SKIP and entry.name not in inner:
                    (target / entry.name).symlink_to(entry)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(mapping[pkg], target_is_directory=True)
    return dest


def repo_paths(text: str, root: Path = ROOT) -> str:
    """Tool output with the tree's paths (``embodmem/agents/x.py``) put back as the repository's."""
    mapping = package_dirs(root)
    for pkg in sorted(mapping, key=len, reverse=True):
        installed = pkg.replace(".", "/") + "/"
        repo = mapping[pkg].relative_to(root).as_posix() + "/"
        if installed != repo:
            text = re.sub(rf"(?m)^{re.escape(installed)}", repo, text)
    return text


def run_mypy(tree: Path, root: Path = ROOT) -> int:
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(root / "pyproject.toml")]
    cmd += ["--cache-dir", str(root / ".mypy_cache"), "-p", "embodmem"]
    proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
    print(repo_paths(proc.stdout + proc.stderr, root), end="")
    return proc.returncode


def run_import_contracts(tree: Path, root: Path = ROOT) -> int:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
    # Recent import-linter takes the config file as an argument; older releases (2.6, which the gateway
    # extra's litellm[proxy] pins leave us) only as --config. Pass it the way the installed one reads it.
    lint = (
        "import sys; from importlinter.cli import lint_imports_command as lint; "
        "positional = any(p.name == 'config_files' for p in lint.params); "
        "lint(sys.argv[1:] if positional else ['--config', *sys.argv[1:]])"
    )
    cmd = [sys.executable, "-c", lint, str(root / "pyproject.toml"), "--no-cache"]
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    print(proc.stdout + proc.stderr, end="")
    return proc.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mypy", action="store_true", help="run mypy only")
    parser.add_argument("--imports", action="store_true", help="check the import contracts only")
    parser.add_argument("--tree", type=Path, default=ROOT / ".mypy_cache" / "tree", help="where to build the tree")
    args = parser.parse_args(argv)
    both = not (args.mypy or args.imports)
    tree = link_tree(args.tree.resolve())
    status = 0
    if args.mypy or both:
        status |= run_mypy(tree)
    if args.imports or both:
        status |= run_import_contracts(tree)
    return 1 if status else 0


if __name__ == "__main__":
    raise SystemExit(main())
