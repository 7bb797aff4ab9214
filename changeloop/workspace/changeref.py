"""A change directory as found on disk: the one type a no-change re-prove needs from the plan.

Kept apart from :mod:`changeloop.model` (which re-exports it) so that finding a change
does not build the model's two dozen dataclasses (a share of a re-prove's start-up).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ChangeRef:
    """A change directory found the way OpenSpec finds it."""

    id: str
    path: Path
    archived: bool = False
