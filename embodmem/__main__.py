"""``python -m embodmem`` is ``embodmem-run``."""

from __future__ import annotations

from embodmem.app import main

main()
