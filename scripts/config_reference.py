"""The configuration reference (docs/configuration.md), generated from the Hydra configs.

Every key of the composed default config with its type, its default and its meaning, read from the
structured-config dataclasses (``embodmem.config.Config`` and the parts' settings classes it holds)
and their field docstrings; then every option of every config group, with the comment at the top of
its YAML file and the keys it changes. Nothing here is written by hand, so the page cannot drift from
the code: the docs build (``mkdocs build``, through ``docs/gen_pages.py``) renders it afresh.

    python scripts/config_reference.py                              # print the page
    python scripts/config_reference.py --out /tmp/configuration.md  # or write it
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import json
import sys
import textwrap
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import yaml
from hydra import compose, initialize_config_module
from omegaconf import DictConfig, ListConfig, OmegaConf

import embodmem.configs
from embodmem.atomic import atomic_write_text
from embodmem.config import Config

GROUP_DIR = Path(embodmem.configs.__file__).resolve().parent
"""The shipped config groups (``configs/`` in the repository)."""


@dataclass(frozen=True)
class Key:
    """One settable key of the composed config."""

    path: str
    type: str
    default: str
    meaning: str


@functools.cache
def _class_node(cls: type) -> ast.ClassDef | None:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(sys.modules[cls.__module__])))
    except (OSError, TypeError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            return node
    return None


def field_docstrings(cls: type) -> dict[str, str]:
    """The string literal under each field of a dataclass and of its dataclass bases (PEP 257's
    attribute docstrings, which Python itself drops)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        node = _class_node(klass) if dataclasses.is_dataclass(klass) else None
        if node is None:
            continue
        body = node.body
        for stmt, after in zip(body, body[1:]):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[stmt.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _dataclass_of(cls: type, name: str) -> type | None:
    """The dataclass type of field ``name`` of ``cls``, when its annotation is one (a nested group)."""
    hint = typing.get_type_hints(cls).get(name)
    return hint if isinstance(hint, type) and dataclasses.is_dataclass(hint) else None


def _show(value: Any) -> str:
    if isinstance(value, (DictConfig, ListConfig)):
        value = OmegaConf.to_container(value, resolve=False)
    if isinstance(value, Enum):
        value = value.value
    if value is None:
        return "null"
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=str)
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def keys(cls: type, cfg: DictConfig, prefix: str = "") -> Iterator[Key]:
    """Every key under ``cls`` (depth first), its default taken from the composed ``cfg``."""
    docs = field_docstrings(cls)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        path = f"{prefix}{f.name}"
        nested = _dataclass_of(cls, f.name)
        if nested is not None:
            yield from keys(nested, cfg, f"{path}.")
            continue
        default = OmegaConf.select(cfg, path, default="(not in the default config)")
        yield Key(path, str(f.type), _show(default), docs.get(f.name, ""))


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _yaml_comment(path: Path) -> str:
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return " ".join(lines)


def _yaml_changes(path: Path) -> str:
    data = yaml.safe_load(path.read_text()) or {}
    data.pop("defaults", None)
    data.pop("_self_", None)
    if not isinstance(data, dict) or not data:
        return ""
    flat = OmegaConf.to_container(OmegaConf.create(data), resolve=False)
    return ", ".join(f"`{k}={_show(v)}`" for k, v in _flatten(flat))


def _flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from _flatten(v, f"{prefix}{k}.")
    else:
        yield prefix.rstrip("."), value


def group_options() -> Iterator[tuple[str, str, str, str]]:
    """(group, option, what its YAML file says, the keys it sets) for every shipped option."""
    for path in sorted(GROUP_DIR.rglob("*.yaml")):
        relative = path.relative_to(GROUP_DIR)
        if relative.parent == Path("."):
            continue
        yield str(relative.parent), relative.stem, _yaml_comment(path), _yaml_changes(path)


def render() -> str:
    """The whole page (markdown)."""
    with initialize_config_module("embodmem.configs", version_base="1.3"):
        cfg = compose("config")
    lines = [
        "# Configuration reference",
        "",
        "Generated from the structured configs (`embodmem/config.py` and the settings classes it holds)",
        "and the YAML files in `configs/` by `python scripts/config_reference.py`; every key can be set on",
        "the command line (`embodmem-run key=value`) or through `embodmem.compose([...])`. Defaults are",
        "those of `embodmem-run` with no overrides.",
        "",
    ]
    sections: dict[str, list[Key]] = {}
    for key in keys(Config, cfg):
        sections.setdefault(key.path.split(".")[0] if "." in key.path else "top level", []).append(key)
    for section, section_keys in sections.items():
        lines += [f"## `{section}`" if section != "top level" else "## Top level", ""]
        lines += ["| key | type | default | meaning |", "|---|---|---|---|"]
        for key in section_keys:
            lines.append(f"| `{key.path}` | `{_cell(key.type)}` | `{_cell(key.default)}` | {_cell(key.meaning)} |")
        lines.append("")
    lines += [
        "## Config groups",
        "",
        "Choose an option with `group=option` (e.g. `embodmem-run memory=pq`). Each option's file holds",
        "only what differs from its schema's defaults above.",
        "",
        "| group | option | what it is | keys it sets |",
        "|---|---|---|---|",
    ]
    for group, option, comment, changes in group_options():
        lines.append(f"| `{group}` | `{option}` | {_cell(comment)} | {_cell(changes)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="write the page here instead of printing it")
    args = parser.parse_args()
    page = render()
    if args.out is None:
        print(page, end="")
    else:
        atomic_write_text(args.out, page)


if __name__ == "__main__":
    main()
