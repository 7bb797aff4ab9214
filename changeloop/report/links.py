"""Paths relative to the workspace root, and links relative to the page.

Example::

    links = Links(plan.root, out_dir)
    links.href(".changeloop/runs/20260101T000000Z/unit/unit.log")   # "../runs/…/unit.log"
"""

from __future__ import annotations

import os
from pathlib import Path


class Links:
    """Where the workspace is and where the page goes: links stay valid when both move."""

    def __init__(self, root: Path, out_dir: Path) -> None:
        self.root = root.resolve()
        self.out_dir = out_dir.resolve()

    def href(self, rel: str) -> str:
        target = self.root / rel
        return Path(os.path.relpath(target, self.out_dir)).as_posix()
