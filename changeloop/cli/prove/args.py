"""What every road of ``prove`` shares: the verb's empty ``--json`` shape and ``--jobs``."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from changeloop.cli.boundary import Said

EMPTY: dict[str, Any] = {"version": "1", "status": "not-proven", "claims": {}, "providers": []}


def empty(said: Said) -> dict[str, Any]:
    """The ``--json`` document of a refused or interrupted ``prove``."""
    return {**EMPTY, "change": said.value("change")}


def jobs_wanted(args: argparse.Namespace) -> int:
    """``--jobs``, or this machine's CPU count when it was not given (a cluster caps by it)."""
    return max(1, args.jobs or os.cpu_count() or 2)
