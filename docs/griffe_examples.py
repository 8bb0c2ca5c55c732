"""A griffe extension for the API reference: read ``Example:`` sections as ``Examples:``.

The project's docstrings head their doctests ``Example:``, which Google style allows, but griffe's
Google parser only knows ``Examples:`` and would render the doctest lines as Markdown (where
``[2, 2]`` reads as a link). The docstrings stay as they are; only the docs build reads them so.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE_HEADER = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename a docstring's ``Example:`` header to ``Examples:`` before it is parsed."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE_HEADER.sub(r"\1Examples:", obj.docstring.value)
