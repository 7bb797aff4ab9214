"""What every road of ``prove`` shares: the verb's empty ``--json`` shape and ``--jobs``."""

from __future__ import annotations

import argparse
import os
from typing import Any

EMPTY: dict[str, Any] = {"version": "1", "status": "not-proven", "claims": {}, "providers": []}


def jobs_wanted(args: argparse.Namespace) -> int:
    """``--jobs``, or this machine's CPU count when it was not given (a cluster caps by it)."""
    return max(1, args.jobs or os.cpu_count() or 2)
