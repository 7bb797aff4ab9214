"""``changeloop`` entry point: the parser, and every verb run inside one error boundary.

``main(argv) -> int`` is what tests call; ``entry()`` is the console script and
``python -m changeloop``. The signal layer (:mod:`changeloop.process.signals`:
SIGINT, SIGTERM and SIGHUP, a closed terminal) is installed from the first
moment this module runs — before ``typing``, argparse, the verbs or anything
heavy is imported — so an interruption at any point is exit 130 and, under
``--json``, still one document in the verb's shape with ``"interrupted":
true``. What a verb raises is answered by :mod:`changeloop.cli.boundary`; a
signal that came while the answer was printed still makes the exit 130.

Limit: the interpreter's own start-up (its ``site`` hooks, the console
script's first import), before the first line of changeloop runs, is not
ours; a signal there still ends the process the interpreter's way.
"""

from __future__ import annotations

import sys

from changeloop.process.signals import EXIT_INTERRUPTED, HANDLED, SIGNALS


def _launched_as_cli() -> bool:
    """The console script or ``python -m changeloop`` (not an import by a test or a library)."""
    first = sys.argv[0] if sys.argv else ""
    name = first.replace("\\", "/").rsplit("/", 1)[-1]
    return name in ("changeloop", "changeloop.exe") or first.replace("\\", "/").endswith(
        "changeloop/__main__.py"
    )


if _launched_as_cli():  # before any heavy import below
    SIGNALS.install()

import argparse  # noqa: E402 - after the handlers, on purpose
import difflib  # noqa: E402
import importlib  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any, NoReturn  # noqa: E402

from changeloop import __version__  # noqa: E402
from changeloop.cli import argtypes, common  # noqa: E402
from changeloop.cli.boundary import VERBS, Boundary, UsageError, run_bounded, said_of  # noqa: E402

__all__ = ["VERBS", "build_parser", "entry", "main"]


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors to the boundary instead of exiting.

    An unknown choice (a verb, a sub-verb) gets the closest known one: ``did you
    mean 'prove'?``. Each verb's parser reports its own usage.
    """

    def error(self, message: str) -> NoReturn:
        message = _did_you_mean(message)
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise UsageError(message, f"see `{self.prog} --help`")


def _did_you_mean(message: str) -> str:
    """argparse's ``invalid choice: 'prov' (choose from …)`` with the nearest choice named."""
    import re

    found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if found is None:
        return message
    choices = re.findall(r"'([^']*)'", found.group(2)) or [
        c.strip() for c in found.group(2).split(",")
    ]
    close = difflib.get_close_matches(found.group(1), choices, n=1, cutoff=0.5)
    return f"{message}; did you mean {close[0]!r}?" if close else message


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``verb`` (read from argv), that verb's parser alone.

    A verb's arguments parse the same either way; registering only the one asked
    for spares importing and building the others (a re-prove answered from its
    no-change record is start-up time). Without a verb (``--help``, a usage
    error, completion) every verb is registered.
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
            "  changeloop evidence doctor <change>   what stands between this change and a proof?\n"
            "  changeloop evidence init <change>     preview the wiring (add --write)\n"
            "  changeloop prove <change>             run it and write receipts\n"
            "Shell completion: changeloop completion bash|zsh (docs/verbs/completion.md)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"changeloop {__version__}")
    common.add_common(parser)
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    for name in VERBS if verb is None else (verb,):
        importlib.import_module(f"changeloop.cli.{name}").register(sub)
    argtypes.type_names(parser)
    return parser


def _verb_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Any:
    """The most specific parser the arguments reached (``prove``, ``evidence doctor``…)."""
    here: Any = parser
    while True:
        actions = [a for a in here._actions if isinstance(a, argparse._SubParsersAction)]
        if not actions:
            return here
        chosen = getattr(args, actions[0].dest, None)
        if chosen is None or chosen not in actions[0].choices:
            return here
        here = actions[0].choices[chosen]


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    return run_bounded(raw, lambda boundary: _dispatch(raw, boundary))


def _dispatch(raw: list[str], boundary: Boundary) -> int:
    """Parse and run the verb; a failure is raised to the boundary, which answers it."""
    from changeloop.process.groups import private_tempdir
    from changeloop.workspace.accepted import one_check_per_invocation

    common.forget_root()
    said = boundary.said
    if "--version" in raw and "--json" in raw and said.verb is None:
        common.emit_json({"version": "1", "changeloop": __version__})
        return 0
    if not raw:  # a bare `changeloop`: what it can do
        build_parser().print_help()
        return 0
    parser = build_parser(said.verb)
    args, extra = parser.parse_known_args(raw)
    boundary.said = said_of(raw, args)
    if extra:  # the verb's own usage, not the top-level one
        _verb_parser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    with private_tempdir(), one_check_per_invocation():  # temp files that name their owner
        code: int = args.func(args)
    return code


def entry() -> None:
    _leave(main())


def _leave(code: int) -> None:
    """Exit with ``code`` once the answer is flushed, without the interpreter's shutdown.

    Its shutdown puts SIGINT/SIGTERM/SIGHUP back to their defaults, so a signal in its last
    milliseconds would kill the process instead of making the exit 130; and CPython marks a
    KeyboardInterrupt raised inside ``exec`` of a string (dataclasses build their methods so,
    at import) as unhandled even when caught, and kills the process with SIGINT at shutdown.
    From the block on, a signal can only be pending: it is counted, never lost.
    """
    import contextlib
    import os
    import signal

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nobody is reading
            stream.flush()
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    if SIGNALS.received or set(signal.sigpending()) & set(HANDLED):
        code = EXIT_INTERRUPTED  # told to stop while the answer was being given: never swallowed
    os._exit(code)
