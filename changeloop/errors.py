"""One error type for every mistake a user can make.

The CLI prints these (or puts them in ``--json`` ``errors``) and never shows a
traceback for them; anything else reaching the CLI is a bug and is reported as
one, with the traceback written to a log file.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Location:
    """Where in a file a problem sits; lines and columns are 1-based."""

    path: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        if self.line is None:
            return self.path
        if self.column is None:
            return f"{self.path}:{self.line}"
        return f"{self.path}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Problem:
    """One thing wrong, in the shape of docs/verbs/prove.md ``errors[]``."""

    code: str
    message: str
    location: Location | None = None
    fix: str | None = None
    providers: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.location is not None:
            out["path"] = self.location.path
            if self.location.line is not None:
                out["line"] = self.location.line
            if self.location.column is not None:
                out["column"] = self.location.column
        if self.fix:
            out["fix"] = self.fix
        if self.providers:
            out["providers"] = list(self.providers)
        return out

    def render(self) -> str:
        """``where: message``; a message that starts with its own path says it once
        (``keys/a.key already exists``; ``q.json:2:1 is not valid JSON``)."""
        loc = self.location
        if loc is not None and self.message.startswith(loc.path + " "):
            text = f"{loc}{self.message[len(loc.path) :]}"
        else:
            text = f"{loc}: {self.message}" if loc is not None else self.message
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text


class ChangeloopError(Exception):
    """A user-facing failure carrying one or more problems.

    ``exit_code`` is 2 for configuration/preflight refusals (docs/verbs/prove.md) and 1
    for failures such as a rejected receipt.
    """

    def __init__(self, problems: Problem | list[Problem], exit_code: int = 2) -> None:
        self.problems: list[Problem] = problems if isinstance(problems, list) else [problems]
        self.exit_code = exit_code
        super().__init__("\n".join(p.render() for p in self.problems))


class ConfigError(ChangeloopError):
    """evidence.yaml / execution.yaml / workspace could not be read into a plan."""


class PreflightError(ChangeloopError):
    """The plan is well-formed but refused before anything runs."""


class FileRefused(ChangeloopError):
    """A file changeloop must read is missing, not a regular file, too big or unreadable.

    ``reason`` completes "<what> <path> …" ("is a FIFO (named pipe), not a
    regular file"); callers that turn it into a finding or an unreadable report
    use it as is. Exit 2 when it reaches the CLI before anything ran.
    """

    def __init__(
        self, path: object, what: str, reason: str, *, missing: bool = False, exit_code: int = 2
    ) -> None:
        self.path = str(path)
        self.what = what
        self.reason = reason
        self.missing = missing
        super().__init__(
            Problem(
                code="file_refused",
                message=f"{what} {self.path} {reason}",
                location=Location(self.path),
                fix=f"give the {what} as a regular file you can read",
            ),
            exit_code=exit_code,
        )


class StateRefused(ChangeloopError):
    """The workspace state (``.changeloop/``) cannot be trusted or used as it is (exit 2)."""

    def __init__(self, path: object, message: str, fix: str) -> None:
        self.path = str(path)
        super().__init__(
            Problem(code="state_refused", message=message, location=Location(self.path), fix=fix),
            exit_code=2,
        )


# What a thread or process that cannot start is called everywhere (a process limit was hit).
NO_THREAD = "cannot start a thread: resource temporarily unavailable"
NO_PROCESS = "cannot start a process: resource temporarily unavailable"


def filesystem_cause(exc: OSError, path: object) -> tuple[str, str]:
    """(the cause in words, the fix) of a filesystem error at ``path``: its real cause.

    A read-only file system or a full disk is said as such, never as a
    permissions problem: its fix is another one.
    """
    where = str(path)
    code = exc.errno
    if code == errno.EROFS:
        return (
            "read-only file system",
            f"the file system holding {where} is mounted read-only: remount it read-write,"
            " or run changeloop in a checkout on a writable file system",
        )
    if code in (errno.ENOSPC, errno.EDQUOT):
        cause = "no space left on device" if code == errno.ENOSPC else "disk quota exceeded"
        return (
            cause,
            f"free space on the file system holding {where} (`df -h {where}`);"
            " `changeloop state prune` frees what older runs keep",
        )
    if code in (errno.EACCES, errno.EPERM):
        return (
            exc.strerror or "permission denied",
            f"run changeloop as a user who may read and write {where}, or fix its permissions",
        )
    return (
        exc.strerror or str(exc),
        f"check that {where} exists and that you may read and write it",
    )
