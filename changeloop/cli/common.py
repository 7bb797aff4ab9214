"""Flags and output helpers every verb shares.

Every verb accepts ``--root`` and ``--json`` after the verb too (DESIGN.md §2.5).
With ``--json`` exactly one JSON document goes to stdout and human text to
stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from changeloop.jsontext import indented
from changeloop.text import escape_controls, escape_json_text


def add_common(parser: argparse.ArgumentParser) -> None:
    """Options accepted both before and after the verb."""
    parser.add_argument(
        "--root",
        type=Path,
        default=argparse.SUPPRESS,
        metavar="DIR",
        help="workspace root (the directory holding openspec/); default: found upward from cwd",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print exactly one JSON document on stdout; human text goes to stderr",
    )


def root_arg(args: argparse.Namespace) -> Path | None:
    root: Path | None = getattr(args, "root", None)
    return root


# The workspace root this invocation computed for: every document carries it (OpenSpec's
# output convention), null when the verb needed none (keygen, receipt verify).
_FOUND: list[Path] = []


def find_root(args: argparse.Namespace) -> Path:
    """The workspace root (``--root``, else found upward), remembered for the document."""
    from changeloop.workspace import discovery as workspace

    root = workspace.find_root(override=root_arg(args))
    _FOUND[:] = [root]
    return root


def forget_root() -> None:
    """A new invocation (tests call ``main`` many times in one process)."""
    _FOUND.clear()


def json_mode(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "json", False))


def emit_json(doc: Any) -> None:
    """One JSON document on stdout; characters a terminal would act on are escaped
    (``\\uXXXX``, the same value to any JSON reader: signed strings end up here)."""
    if isinstance(doc, dict) and "root" not in doc:
        head = {"version": doc["version"]} if "version" in doc else {}
        doc = {**head, "root": str(_FOUND[0]) if _FOUND else None, **doc}
    text = indented(doc)  # json.dumps(doc, indent=2, ensure_ascii=False), faster
    sys.stdout.write(escape_json_text(text) + "\n")
    sys.stdout.flush()


def say(text: str = "") -> None:
    """Human text: always stderr, so stdout stays machine-readable.

    Control characters other than newline and tab are escaped: messages quote
    signed strings and file contents, which must never drive the terminal.
    """
    sys.stderr.write(escape_controls(text, keep="\n\t") + "\n")


def add_public_keys(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--public-key PEM`` (repeatable): more keys to trust, for verbs that verify receipts."""
    parser.add_argument(
        "--public-key",
        type=Path,
        action="append",
        default=[],
        metavar="PEM",
        help=help_text,
    )
