"""``changeloop`` entry point: one error boundary for every verb (DESIGN.md §9).

``main(argv) -> int`` is what tests call; ``entry()`` is the console script and
``python -m changeloop``. SIGINT, SIGTERM and SIGHUP (a closed terminal) are
handled from the first line of this module — before ``typing``, argparse, the
verbs or anything else is imported — so an interruption at any point is exit
130 and, under ``--json``, still one document in the verb's shape with
``"interrupted": true``. Until ``main`` runs, a signal is only recorded (raising
inside an import would print a traceback); ``main`` turns it into the
interruption as soon as it starts, and a signal whose interruption was lost
(raised inside a finalizer) or came while the answer was printed still makes
the exit 130: never swallowed.

What reaches the boundary is answered, never a traceback: a
:class:`~changeloop.errors.ChangeloopError` is the user's mistake, an
``OSError`` is the environment saying no (a clean answer naming the path),
exception groups from task groups are unwrapped into those, and anything else
is a bug (exit 3, traceback written to a file).

Limit: the interpreter's own start-up (its ``site`` hooks, the console
script's first import), before the first line of changeloop runs, is not
ours; a signal there still ends the process the interpreter's way.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is imported after the handlers are in place
if TYPE_CHECKING:
    import signal as _signal
    from types import FrameType
else:
    import _signal  # the C module: ``signal`` builds its enums first (milliseconds more)

EXIT_INTERRUPTED = 130
# SIGHUP is the terminal closing: a run ends as it does on SIGTERM.
_HANDLED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)


class _Signals:
    """SIGINT/SIGTERM/SIGHUP → one ``KeyboardInterrupt`` while armed; otherwise only recorded."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.armed = False
        self.raised = False
        self.installed = False
        self.previous: dict[int, object] = {}

    def handler(self, signum: int, frame: FrameType | None) -> None:  # noqa: ARG002 (signal handler signature)
        self.received.append(signum)
        if self.armed and not self.raised:
            self.raised = True
            raise KeyboardInterrupt

    def install(self) -> bool:
        """Install in the main thread; True when this call installed them."""
        if self.installed:
            return False
        try:
            for sig in _HANDLED:
                self.previous[sig] = _signal.signal(sig, self.handler)
        except ValueError:  # not the main thread: the caller owns signals
            self.restore()
            return False
        self.installed = True
        return True

    def restore(self) -> None:
        for sig, previous in self.previous.items():
            _signal.signal(sig, previous if previous is not None else _signal.SIG_DFL)  # type: ignore[arg-type]
        self.previous.clear()
        self.installed = False

    def arm(self) -> None:
        """From now on a signal interrupts; one that came earlier interrupts right away."""
        self.raised = False
        self.armed = True
        if self.received:
            self.raised = True
            raise KeyboardInterrupt

    def disarm(self) -> None:
        self.armed = False


SIGNALS = _Signals()


def _launched_as_cli() -> bool:
    """The console script or ``python -m changeloop`` (not an import by a test or a library)."""
    first = sys.argv[0] if sys.argv else ""
    name = first.replace("\\", "/").rsplit("/", 1)[-1]
    return name in ("changeloop", "changeloop.exe") or first.replace("\\", "/").endswith(
        "changeloop/__main__.py"
    )


if _launched_as_cli():  # before any other import of this module
    SIGNALS.install()

import argparse  # noqa: E402 - after the handlers, on purpose
import errno  # noqa: E402
import importlib  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any, TextIO  # noqa: E402 - after the handlers, on purpose

from changeloop import __version__  # noqa: E402
from changeloop.cli import argtypes, common, help_examples  # noqa: E402
from changeloop.errors import (  # noqa: E402
    NO_PROCESS,
    NO_THREAD,
    ChangeloopError,
    Location,
    Problem,
    filesystem_cause,
)

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
)
_CRASH_DIR: list[str] = []  # the system temp dir, for crash logs that must outlive the run


class _UsageError(Exception):
    """argparse refused the command line (it already printed usage and the message)."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors to the boundary instead of exiting."""

    def error(self, message: str) -> Any:
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise _UsageError(message)


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``verb`` (read from argv), that verb's parser alone.

    A verb's arguments parse the same either way; registering only the one asked
    for spares importing and building the other eight (``prove`` answered from its
    no-change record runs in ~150 ms, issue 15). Without a verb (``--help``, a
    usage error) every verb is registered.
    """
    parser = _Parser(
        prog="changeloop",
        description=(
            "Prove OpenSpec changes with executed, signed evidence.\n\n"
            "A change declares in openspec/changes/<id>/evidence.yaml what must be true;\n"
            "changeloop runs the commands that prove it and writes signed receipts."
        ),
        epilog=(
            "Start here:\n"
            "  changeloop evidence detect <change>   what can prove this change?\n"
            "  changeloop evidence init <change>     preview the wiring (add --write)\n"
            "  changeloop prove <change>             run it and write receipts\n"
            "Docs: docs/ in the changeloop repository."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"changeloop {__version__}")
    common.add_common(parser)
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True
    for name in VERBS if verb is None else (verb,):
        importlib.import_module(f"changeloop.cli.{name}").register(sub)
    argtypes.type_names(parser)
    return parser


# -- the verb's --json shape, known without importing the verb ---------------
def _verb_of(argv: Sequence[str]) -> tuple[str | None, str | None, str | None]:
    """(verb, sub-verb, first positional after it) read from raw argv."""
    words: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        if word == "--root":
            skip = True
            continue
        if word.startswith("-"):
            continue
        words.append(word)
    verb = words[0] if words and words[0] in VERBS else None
    rest = words[1:] if verb else []
    if verb in ("evidence", "receipt"):
        sub = rest[0] if rest else None
        return verb, sub, rest[1] if len(rest) > 1 else None
    return verb, None, rest[0] if rest else None


def empty_shape(argv: Sequence[str], args: argparse.Namespace | None = None) -> dict[str, Any]:
    """The verb's empty ``--json`` document (DESIGN.md §7), from what is known so far."""
    verb, sub, positional = _verb_of(argv)
    change = getattr(args, "change", None) if args is not None else None
    shape: dict[str, Any] = {"version": "1"}
    if verb == "prove":
        shape.update(status="not-proven", claims={}, providers=[])
        shape["change"] = change or positional
    elif verb == "evidence":
        shape.update(root=None, change=change or positional)
        if sub == "doctor":
            shape.update(findings=[], unresolved=0)
        elif sub == "init":
            shape.update(written=False, added=[], unresolved=[])
        else:
            shape["repositories"] = {}
    elif verb == "receipt" and sub == "verify":
        file = getattr(args, "file", None)
        shape.update(file=None if file is None else str(file), valid=False)
    elif verb == "receipt" and sub == "import":
        shape.update(change=change, imported=[])
    elif verb == "state":
        shape.update(root=None)
    return {k: v for k, v in shape.items() if v is not None or k in ("root", "change")}


def _json_wanted(argv: Sequence[str], args: argparse.Namespace | None) -> bool:
    if args is not None:
        return common.json_mode(args)
    return "--json" in list(argv)[: list(argv).index("--") if "--" in argv else None]


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


# -- the boundary ------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    installed_here = SIGNALS.install()
    watched = _Watched(sys.stdout)
    sys.stdout = watched
    state: dict[str, argparse.Namespace] = {}
    try:
        try:
            SIGNALS.arm()
            from changeloop.process.groups import private_tempdir

            _CRASH_DIR.append(tempfile.gettempdir())
            with private_tempdir():  # temp files that name their owner (§5 Faults)
                code = _dispatch(raw, state)
            if SIGNALS.received:  # its KeyboardInterrupt was lost on the way (a finalizer ate it)
                SIGNALS.disarm()
                return _interrupted(raw, state.get("args"), watched)
        except KeyboardInterrupt:
            SIGNALS.disarm()
            return _interrupted(raw, state.get("args"), watched)
        except BaseExceptionGroup as group:
            SIGNALS.disarm()
            if _leaves_of(group, KeyboardInterrupt):
                return _interrupted(raw, state.get("args"), watched)
            raise
        finally:
            SIGNALS.disarm()
        return code
    finally:
        if sys.stdout is watched:
            sys.stdout = watched.inner
        if installed_here:
            SIGNALS.restore()
        SIGNALS.received.clear()


def _dispatch(raw: list[str], state: dict[str, argparse.Namespace]) -> int:
    """Parse and run the verb; every failure is answered here (KeyboardInterrupt excepted)."""
    common.forget_root()
    if "--version" in raw and "--json" in raw and _verb_of(raw)[0] is None:
        common.emit_json({"version": "1", "changeloop": __version__})
        return 0
    try:
        parser = build_parser(_verb_of(raw)[0])
        args = parser.parse_args(raw)
    except SystemExit as exc:  # --help, --version
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    except _UsageError as exc:
        problem = Problem(
            code="usage",
            message=exc.message,
            fix=f"see `{help_examples.help_for(*_verb_of(raw))} --help`",
        )
        return _answer(raw, None, ChangeloopError(problem), echo=False)  # argparse said it
    state["args"] = args
    from changeloop.workspace.state import one_check_per_invocation

    try:
        with one_check_per_invocation():
            code: int = args.func(args)
        return code
    except ChangeloopError as exc:
        return _answer(raw, args, exc)
    except BaseExceptionGroup as group:  # raised through a task group
        if _leaves_of(group, KeyboardInterrupt):
            raise
        user = _user_error(group)
        if user is None:
            return _crash(raw, args)
        return _answer(raw, args, user)
    except OSError as exc:  # the environment said no: a path, a permission, a full disk
        return _answer(raw, args, _os_error(exc))
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:
        if _no_thread(exc):  # the environment said no too: no thread to be had
            return _answer(raw, args, _limit_error())
        return _crash(raw, args)


def _leaves_of(group: BaseExceptionGroup[BaseException], kind: type[BaseException]) -> bool:
    return any(isinstance(leaf, kind) for leaf in common.leaves(group))


def _user_error(group: BaseExceptionGroup[BaseException]) -> ChangeloopError | None:
    """A group of user errors and filesystem errors, as one answer; None if anything else."""
    leaves = common.leaves(group)
    if not leaves or not all(
        isinstance(x, ChangeloopError | OSError) or _no_thread(x) for x in leaves
    ):
        return None
    errors = [
        x
        if isinstance(x, ChangeloopError)
        else _os_error(x)
        if isinstance(x, OSError)
        else _limit_error()
        for x in leaves
    ]
    problems = [p for e in errors for p in e.problems]
    unique = list({(p.code, p.message): p for p in problems}.values())
    return ChangeloopError(unique, exit_code=max(e.exit_code for e in errors))


def _os_error(exc: OSError) -> ChangeloopError:
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


def _limit_error(what: str = NO_THREAD) -> ChangeloopError:
    problem = Problem(
        code="resource_limit",
        message=f"{what} (a limit on processes or threads: `ulimit -u`, a cgroup's pids.max)",
        fix="raise the limit, or give changeloop fewer jobs at once (--jobs 1)",
    )
    return ChangeloopError(problem, exit_code=1)


def _answer(
    raw: Sequence[str],
    args: argparse.Namespace | None,
    error: ChangeloopError,
    *,
    echo: bool = True,
) -> int:
    """A user-facing error: the verb's document plus ``errors`` (``--json``) and stderr text."""
    if _json_wanted(raw, args):
        doc = empty_shape(raw, args)
        doc["errors"] = [p.to_json() for p in error.problems]
        common.emit_json(doc)
    for problem in error.problems if echo else ():
        common.say(f"error: {problem.render()}")
    return error.exit_code


def _interrupted(raw: Sequence[str], args: argparse.Namespace | None, out: _Watched) -> int:
    common.say("interrupted: nothing more was started; running processes were stopped")
    if _json_wanted(raw, args) and not out.written:
        common.emit_json({**empty_shape(raw, args), "interrupted": True})
    return EXIT_INTERRUPTED


def _crash(raw: Sequence[str], args: argparse.Namespace | None) -> int:
    """An unexpected exception is a bug: say so, keep the traceback out of the terminal."""
    with tempfile.NamedTemporaryFile(
        "w",
        prefix="changeloop-crash-",
        suffix=".log",
        delete=False,
        dir=_CRASH_DIR[-1] if _CRASH_DIR else None,  # not the private dir, removed at exit
    ) as fh:
        import traceback  # only for a crash (its imports are not free at start-up)

        traceback.print_exc(file=fh)
        where = fh.name
    message = (
        "changeloop hit an unexpected error (a bug, not your mistake).\n"
        f"The traceback was written to {where}; please attach it to an issue."
    )
    if _json_wanted(raw, args) and not (isinstance(sys.stdout, _Watched) and sys.stdout.written):
        doc = empty_shape(raw, args)
        doc["errors"] = [{"code": "internal_error", "message": message, "path": where}]
        common.emit_json(doc)
    common.say(message)
    return 3


def entry() -> None:
    code = main()
    if SIGNALS.received:  # told to stop while the answer was being given: never swallowed
        code = EXIT_INTERRUPTED
    if code == EXIT_INTERRUPTED:
        _exit_now(code)
    sys.exit(code)


def _exit_now(code: int) -> None:
    """Leave with ``code`` once the answer is flushed, skipping the interpreter's shutdown.

    CPython marks a KeyboardInterrupt raised inside ``exec`` of a string (dataclasses and
    namedtuples build their methods that way, at import) as unhandled even when we caught it,
    and its shutdown then kills the process with SIGINT instead of exiting 130.
    """
    import contextlib
    import os

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nobody is reading
            stream.flush()
    os._exit(code)
