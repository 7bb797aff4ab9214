"""A loaded YAML file with where each of its values stands, so that a problem found long
after loading (in preflight, in trust) still names its line and column.

The plan's records keep the :class:`Document` their configuration came from
(``Evidence.marks``, ``Execution.marks``); :mod:`changeloop.config.yamlio` makes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from changeloop.errors import Location

YamlPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Document:
    """A loaded YAML file: plain ``data`` plus marks addressable by path."""

    path: Path
    display: str
    data: Any
    value_marks: dict[YamlPath, tuple[int, int]] = field(default_factory=dict)
    key_marks: dict[YamlPath, tuple[int, int]] = field(default_factory=dict)

    def mark(self, path: Sequence[str | int], *, key: bool = False) -> tuple[int, int] | None:
        """(line, column) of the value at ``path`` (or its key), else the nearest ancestor's."""
        current = tuple(path)
        while True:
            if key and current in self.key_marks:
                return self.key_marks[current]
            if current in self.value_marks:
                return self.value_marks[current]
            if not current:
                return None
            current = current[:-1]

    def location(self, path: Sequence[str | int], *, key: bool = False) -> Location:
        found = self.mark(path, key=key)
        if found is None:
            return Location(self.display)
        return Location(self.display, found[0], found[1])
