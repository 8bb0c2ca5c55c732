"""The Hydra config groups, shipped as package data (``pkg://embodmem.configs``).

Importing this package registers the structured-config schemas, so
``hydra.initialize_config_module("embodmem.configs")`` followed by ``compose`` works on its own.
"""

from __future__ import annotations

from embodmem.config import register_configs

register_configs()
