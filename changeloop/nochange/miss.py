"""Why the no-change record did not answer (then the full path runs), and saying so on request."""

from __future__ import annotations

import os
import sys

EXPLAIN = "CHANGELOOP_EXPLAIN_NOCHANGE"  # set: say on stderr why the record was not used


class Miss(Exception):
    """Why the record does not answer this re-prove (the full path runs)."""


def explain(reason: str) -> None:
    """Say ``reason`` on stderr when ``CHANGELOOP_EXPLAIN_NOCHANGE`` is set; else nothing."""
    if os.environ.get(EXPLAIN):
        sys.stderr.write(f"no-change record not used: {reason}\n")
