"""PLACEHOLDER for the `evidence` verb — replaced by its owner (see docs/ARCHITECTURE.md)."""

from __future__ import annotations

import argparse
from typing import Any

from changeloop.cli import common


def register(sub: Any) -> None:
    parser = sub.add_parser("evidence", help="(evidence: not built yet)")
    common.add_common(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    common.say("evidence is not built yet")
    return 2
