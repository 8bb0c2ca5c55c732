"""The generated configuration reference (scripts/config_reference.py, rendered into the docs site)
lists every key of the composed default config, and every config group option shipped in configs/."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from omegaconf import OmegaConf

import embodmem

ROOT = Path(__file__).resolve().parents[1]


def _reference_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("config_reference", ROOT / "scripts" / "config_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _leaf_keys(value: object, prefix: str = "") -> list[str]:
    if isinstance(value, dict) and value:
        return [key for k, v in value.items() for key in _leaf_keys(v, f"{prefix}{k}.")]
    return [prefix.rstrip(".")]


def test_every_key_and_option_is_in_the_reference() -> None:
    page: str = _reference_module().render()
    container = OmegaConf.to_container(embodmem.compose([]), resolve=False)
    assert isinstance(container, dict)
    container.pop("hydra", None)
    missing = [key for key in _leaf_keys(container) if f"| `{key}` |" not in page]
    assert not missing, f"keys missing from the configuration reference: {missing}"
    options = sorted(p for p in (ROOT / "configs").rglob("*.yaml") if p.parent != ROOT / "configs")
    assert options
    for path in options:
        assert f"| `{path.relative_to(ROOT / 'configs').parent.as_posix()}` | `{path.stem}` |" in page, path
