"""The one error boundary every verb runs inside: verbs raise, this answers.

Example::

    def body(boundary: Boundary) -> int:
        args = parse(argv)
        boundary.said = said_of(argv, args)    # the verb's shape knows its arguments now
        return args.func(args)                 # a verb returns its exit code, or raises

    return run_bounded(argv, body)

Inside it a signal interrupts (:data:`changeloop.process.signals.SIGNALS` is
armed), stdout is watched so a ``--json`` document is never doubled, and
whatever escapes the verb is answered once, in the verb's own ``--json`` shape
(each verb module's ``empty``) plus ``errors``:

- a :class:`~changeloop.errors.ChangeloopError` is the user's mistake (its exit code);
- an ``OSError`` is the environment saying no (exit 1, naming the path and its real
  cause), and so is a thread or process that cannot be started (a limit was reached);
- ``KeyboardInterrupt`` (Ctrl-C, SIGTERM, SIGHUP) is exit 130 with ``"interrupted": true``;
- exception groups from task groups are unwrapped into those;
- anything else is our bug: exit 3, the traceback in a crash log, never on the terminal.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TextIO

from changeloop.cli import common
from changeloop.errors import (
    NO_PROCESS,
    NO_THREAD,
    ChangeloopError,
    Location,
    Problem,
    filesystem_cause,
)
from changeloop.process.signals import EXIT_INTERRUPTED, SIGNALS

EXIT_CRASH = 3
VERBS = (
    "prove",
    "evidence",
    "receipt",
    "keygen",
    "gate",
    "summary",
    "quality",
    "adapters",
    "report",
    "state",
    "completion",
)
_WITH_SUB_VERBS = ("evidence", "receipt", "quality", "adapters", "state")


class UsageError(Exception):
    """argparse refused the command line (it already printed the usage and the message)."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        self.message = message
        self.fix = fix
        super().__init__(message)


@dataclass(frozen=True)
class Said:
    """What the command line said, as far as it was understood (``args`` once parsed)."""

    verb: str | None
    sub: str | None
    first: str | None  # the first positional word after the verb (and its sub-verb)
    args: argparse.Namespace | None = None

    def value(self, name: str) -> Any:
        """``args.<name>`` once parsed, else the first positional word."""
        if self.args is not None and hasattr(self.args, name):
            value = getattr(self.args, name)
            return None if value is None else str(value) if not isinstance(value, str) else value
        return self.first

    @property
    def json(self) -> bool:
        return self.args is not None and common.json_mode(self.args)


def said_of(argv: Sequence[str], args: argparse.Namespace | None = None) -> Said:
    """The verb, its sub-verb and first positional, read from raw argv."""
    words: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        if word == "--":
            break
        if word == "--root":
            skip = True
            continue
        if not word.startswith("-"):
            words.append(word)
    verb = words[0] if words and words[0] in VERBS else None
    rest = words[1:] if verb else []
    if verb in _WITH_SUB_VERBS:
        return Said(verb, rest[0] if rest else None, rest[1] if len(rest) > 1 else None, args)
    return Said(verb, None, rest[0] if rest else None, args)


def json_wanted(argv: Sequence[str], args: argparse.Namespace | None) -> bool:
    if args is not None:
        return common.json_mode(args)
    words = list(argv)
    return "--json" in words[: words.index("--") if "--" in words else None]


def empty_shape(said: Said) -> dict[str, Any]:
    """The verb's empty ``--json`` document: each verb module says its own."""
    if said.verb is None:
        return {"version": "1"}
    module = importlib.import_module(f"changeloop.cli.{said.verb}")
    shape: dict[str, Any] = module.empty(said)
    return shape


class _Watched:
    """stdout that remembers whether anything was written (so a document is never doubled)."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self.written = False

    def write(self, text: str) -> int:
        if text:
            self.written = True
        return self.inner.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Boundary:
    """Signals armed, stdout watched, and every escaping exception answered (see module doc)."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)
        self.said = said_of(self.argv)
        self.code = 0
        self._crash_dir = tempfile.gettempdir()  # not a private temp dir removed at exit
        self._installed = False
        self._stdout: _Watched | None = None

    def __enter__(self) -> Boundary:
        self._installed = SIGNALS.install()
        if self._installed:  # a call in a process whose CLI did not install them: a fresh start
            SIGNALS.received.clear()
        self._stdout = _Watched(sys.stdout)
        sys.stdout = self._stdout
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        SIGNALS.disarm()
        try:
            if exc is not None:
                self.code = self._answer(exc)
        finally:
            if self._stdout is not None and sys.stdout is self._stdout:
                sys.stdout = self._stdout.inner
            if self._installed:
                SIGNALS.restore()
        # ``received`` is kept: a signal from here to the exit still makes it 130 (main._leave)
        return exc is not None

    # -- the answers -------------------------------------------------------------
    def _answer(self, exc: BaseException) -> int:
        if isinstance(exc, SystemExit):  # argparse's --help and --version
            return int(exc.code or 0) if not isinstance(exc.code, str) else 2
        leaves = _leaves(exc)
        if any(isinstance(x, KeyboardInterrupt) for x in leaves):
            return self._interrupted()
        if all(
            isinstance(x, ChangeloopError | OSError | UsageError) or _no_thread(x) for x in leaves
        ):
            errors = [_as_error(x) for x in leaves]
            problems = list({(p.code, p.message): p for e in errors for p in e.problems}.values())
            echo = not all(isinstance(x, UsageError) for x in leaves)  # argparse said it
            return self._refused(problems, max(e.exit_code for e in errors), echo=echo)
        return self._crash(exc)

    def _document(self, extra: dict[str, Any]) -> None:
        watched = self._stdout
        if not json_wanted(self.argv, self.said.args) or (watched and watched.written):
            return
        common.emit_json({**empty_shape(self.said), **common.known_so_far(), **extra})

    def _refused(self, problems: list[Problem], code: int, *, echo: bool) -> int:
        self._document({"errors": [p.to_json() for p in problems]})
        for problem in problems if echo else ():
            common.say(f"error: {problem.render()}")
        return code

    def _interrupted(self) -> int:
        common.say("interrupted: running processes were stopped; unfinished work wrote nothing")
        self._document({"interrupted": True})
        return EXIT_INTERRUPTED

    def _crash(self, exc: BaseException) -> int:
        import traceback  # only for a crash (its imports are not free at start-up)

        with tempfile.NamedTemporaryFile(
            "w", prefix="changeloop-crash-", suffix=".log", delete=False, dir=self._crash_dir
        ) as fh:
            traceback.print_exception(exc, file=fh)
            where = fh.name
        message = (
            "changeloop hit an unexpected error (a bug, not your mistake).\n"
            f"The traceback was written to {where}; please attach it to an issue."
        )
        self._document({"errors": [{"code": "internal_error", "message": message, "path": where}]})
        common.say(message)
        return EXIT_CRASH


def run_bounded(argv: Sequence[str], body: Callable[[Boundary], int]) -> int:
    """``body(boundary)`` inside the boundary; the exit code however it ended."""
    with Boundary(argv) as boundary:
        SIGNALS.arm()  # a signal that came while starting up interrupts right here
        boundary.code = body(boundary)
        if SIGNALS.received:  # its KeyboardInterrupt was lost on the way (a finalizer ate it)
            raise KeyboardInterrupt
    return boundary.code


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside ``exc`` and its nested groups (anyio wraps task errors)."""
    found: list[BaseException] = []
    pending: list[BaseException] = [exc]
    while pending:
        one = pending.pop()
        if isinstance(one, BaseExceptionGroup):
            pending.extend(one.exceptions)
        else:
            found.append(one)
    return found


def _as_error(exc: BaseException) -> ChangeloopError:
    if isinstance(exc, ChangeloopError):
        return exc
    if isinstance(exc, UsageError):
        return ChangeloopError(Problem(code="usage", message=exc.message, fix=exc.fix))
    if not isinstance(exc, OSError):  # a thread that could not be started
        return _limit_error(NO_THREAD)
    path = exc.filename if isinstance(exc.filename, str) else None
    if path is None and exc.errno == errno.EAGAIN:  # fork() said no: a process limit
        return _limit_error(NO_PROCESS)
    cause, fix = filesystem_cause(exc, path or "the path")
    problem = Problem(
        code="filesystem_error",
        message=f"filesystem error: {cause}" + (f": {path}" if path else ""),
        location=Location(path) if path else None,
        fix=fix,
    )
    return ChangeloopError(problem, exit_code=1)


def _no_thread(exc: BaseException) -> bool:
    """Python could not start a thread: a limit on processes or threads was reached."""
    return isinstance(exc, RuntimeError) and "can't start new thread" in str(exc)


def _limit_error(what: str) -> ChangeloopError:
    problem = Problem(
        code="resource_limit",
        message=f"{what} (a limit on processes or threads: `ulimit -u`, a cgroup's pids.max)",
        fix="raise the limit, or give changeloop fewer jobs at once (--jobs 1)",
    )
    return ChangeloopError(problem, exit_code=1)
