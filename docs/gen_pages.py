"""Pages the docs build generates from the source (mkdocs-gen-files runs this at every build).

- ``configuration.md``: every key of the Hydra configs with its default and meaning
  (``scripts/config_reference.py``);
- ``api.md``: the API reference, one mkdocstrings block per public module;
- ``results.md``: every results file of ``benchmarks/results/``, ``probes/results/`` and
  ``tools/results/``, included as it is (pymdownx.snippets), with its figures' images.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[1]

API_MODULES = (
    ("The public API", ["embodmem.api"]),
    ("Running", ["embodmem", "embodmem.runner", "embodmem.plugins", "embodmem.provenance", "embodmem.splits"]),
    (
        "Environments",
        ["embodmem.envs.underwater", "embodmem.envs.vector", "embodmem.envs.config", "embodmem.envs.tasks"],
    ),
    ("Memory", ["embodmem.memory.episodic", "embodmem.memory.config", "embodmem.retrieval"]),
    ("Embedding", ["embodmem.embedding.embedder"]),
    ("Agents", ["embodmem.agents.base", "embodmem.agents.config", "embodmem.agents.memory_agent"]),
    ("Metrics", ["embodmem.metrics", "embodmem.transfer", "embodmem.stats"]),
)
"""Sections of the API reference and the modules each shows (those that exist in this checkout)."""

MAPPED_PACKAGES = {"embodmem.envs": "envs", "embodmem.agents": "agents"}
"""Installed from other folders of the repository (pyproject's package-dir), which griffe's static
finder does not follow: these modules are read from their folders (``paths: ["."]`` in mkdocs.yml)."""


def _source_name(module: str) -> str:
    for installed, folder in MAPPED_PACKAGES.items():
        if module == installed or module.startswith(installed + "."):
            return folder + module[len(installed) :]
    return module


def _exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _config_reference() -> str:
    spec = importlib.util.spec_from_file_location("config_reference", ROOT / "scripts" / "config_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module.render()


def _api_reference() -> str:
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings (mkdocstrings). `embodmem.api` is the stable surface for plug-ins;",
        "the other modules are documented for readers of the code.",
        "",
    ]
    for title, modules in API_MODULES:
        present = [m for m in modules if _exists(m)]
        if not present:
            continue
        lines += [f"## {title}", ""]
        for module in present:
            source = _source_name(module)
            lines += [f"::: {source}", "    options:", "      heading_level: 3"]
            if source != module:
                lines.append(f'      heading: "{module}"')
            lines.append("")
    return "\n".join(lines)


RESULT_FOLDERS = (
    ("Benchmarks", "benchmarks/results", "One question, one command, one file each (`benchmarks/README.md`)."),
    ("Probes", "probes/results", "Hostile and broken input, and how it is received (`probes/README.md`)."),
    ("Calibration", "tools/results", "Chosen on calibration and dev worlds only (`tools/README.md`)."),
)
"""The folders of results files the Results page shows, in this order."""


def _title(path: Path) -> str:
    for line in path.read_text().splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return "(no title line)"


def _results_page() -> str:
    lines = [
        "# Results",
        "",
        "Every results file of the repository, as its script wrote it (each names the command that",
        "regenerates it; the newer ones also the commit, the machine and the date). The headline figures",
        "of the README are checked against these files by `tests/test_readme_figures.py`.",
        "",
    ]
    for heading, folder, about in RESULT_FOLDERS:
        lines += [f"## {heading}", "", f"{about} Folder: `{folder}/`.", ""]
        for path in sorted((ROOT / folder).glob("*")):
            relative = path.relative_to(ROOT).as_posix()
            if path.suffix == ".png":
                with mkdocs_gen_files.open(f"results/{path.name}", "wb") as image:
                    image.write(path.read_bytes())
                lines += [f"### `{path.name}`", "", f"![{path.name}](results/{path.name})", ""]
            elif path.suffix == ".md":
                lines += [f"### `{path.name}`", "", f"{_title(path)}", "", f'??? note "{relative}"', ""]
                lines += [f'    --8<-- "{relative}"', ""]
            elif path.suffix == ".json":
                lines += [f"### `{path.name}`", "", f"Raw figures (JSON): `{relative}`.", ""]
    return "\n".join(lines)


with mkdocs_gen_files.open("results.md", "w") as page:
    page.write(_results_page())
with mkdocs_gen_files.open("configuration.md", "w") as page:
    page.write(_config_reference())
with mkdocs_gen_files.open("api.md", "w") as page:
    page.write(_api_reference())
