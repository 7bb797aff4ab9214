"""PLACEHOLDER for the `keygen` verb — replaced by its owner (see docs/ARCHITECTURE.md)."""

from __future__ import annotations

import argparse
from typing import Any

from changeloop.cli import common


def register(sub: Any) -> None:
    parser = sub.add_parser("keygen", help="(keygen: not built yet)")
    common.add_common(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    common.say("keygen is not built yet")
    return 2
