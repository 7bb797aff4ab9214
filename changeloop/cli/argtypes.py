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
