"""``python -m embodmem.report DIR``: the same as ``embodmem-report DIR``."""

from __future__ import annotations

from embodmem.report.cli import main

raise SystemExit(main())
