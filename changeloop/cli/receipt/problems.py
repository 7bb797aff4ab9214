"""The refusals ``receipt verify`` and ``receipt import`` share, as Problems naming the file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from changeloop.errors import Location, Problem

if TYPE_CHECKING:  # registering the verb imports no verification code (PLC0415)
    from changeloop.signing.verify import VerificationError

NOTHING_IMPORTED = Problem(
    code="nothing_imported", message="nothing was imported (one refusal copies nothing)"
)


def check_failed(exc: VerificationError, path: Path) -> Problem:
    """``receipt_<check>``: the first check of the verification order that failed."""
    return Problem(
        code=f"receipt_{exc.check.lower()}",
        message=f"{exc.check} check failed: {exc.reason}",
        location=Location(str(path)),
    )


def unreadable(exc: OSError, path: Path) -> Problem:
    """The file could not be read at all (missing, a directory, no permission)."""
    return Problem(
        code="unreadable",
        message=f"cannot read receipt {path}: {exc.strerror}",
        location=Location(str(path)),
    )
