"""Argument types for names that end up in a receipt: refused at parsing, before anything runs.

``receipt sign --issuer ''`` used to reach the signer (exit 3) and ``prove --issuer ''``
ran every provider before it could not seal. The verbs declare the flags; the rule that
such a name is never blank (and a capability matches the schemas' name pattern) is one
rule, applied to every verb's parser by :func:`type_names` from ``cli/main.py``.
Output paths are checked the same way, before the work: :func:`file_in_the_way`.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from changeloop.errors import ChangeloopError, Location, Problem

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # the schemas' `name` (capabilities)


def nonempty(value: str) -> str:
    """A name recorded in a receipt (issuer, provider): blank is refused before anything runs."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty (give a name, e.g. github-actions)")
    return value


def capability_name(value: str) -> str:
    """A capability as evidence.yaml names one (the schemas' name pattern)."""
    if not _NAME.match(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a capability name: use letters, digits, '.', '_' and '-',"
            " starting with a letter or digit (e.g. review)"
        )
    return value


_NAME_TYPES = {"--issuer": nonempty, "--provider": nonempty, "--capability": capability_name}


def type_names(parser: argparse.ArgumentParser) -> None:
    """Give every verb's free-text name flag its type (the verbs declare the flags; the
    rule that a receipt's names are never blank is one rule, so it lives here once)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                type_names(child)
            continue
        for flag in action.option_strings:
            if flag in _NAME_TYPES and action.type is None:
                action.type = _NAME_TYPES[flag]


def file_in_the_way(directory: Path) -> Path | None:
    """The existing path that is not a directory where ``directory`` (or one of its
    parents) must be one, if any: writing there would fail only after the work."""
    for candidate in (directory, *directory.parents):
        if candidate.exists() or candidate.is_symlink():
            return None if candidate.is_dir() else candidate
    return None


def refuse_out_file(flag: str, path: Path | None) -> None:
    """``--out FILE`` that is a directory, or lies under a file: exit 2 before the work
    (writing it afterwards fails with exit 1 and the work lost)."""
    if path is None:
        return
    if path.is_dir():
        where, message = path, f"{flag} names a directory; it must name a file to write"
    else:
        blocked = file_in_the_way(path.parent)
        if blocked is None:
            return
        where, message = blocked, f"{flag} {path} lies under it, and it is a file, not a directory"
    raise ChangeloopError(
        Problem(
            code="out_not_writable",
            message=message,
            location=Location(str(where)),
            fix=f"give {flag} a file path whose parent is a directory"
            f" (e.g. {flag} {path.name or 'out'}.json inside it)",
        )
    )


def positive_seconds(value: str) -> float:
    """A duration in seconds, more than zero (e.g. ``--dask-worker-timeout 30``)."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds above 0 (e.g. 30)")
    return seconds
