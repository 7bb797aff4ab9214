"""``changeloop`` entry point: argparse, one module per verb, no tracebacks for users.

``main(argv) -> int`` is what tests call; ``entry()`` is the console script.
A :class:`~changeloop.errors.ChangeloopError` is a user's mistake and is
printed; any other exception is a bug: we say so and write the traceback to a
file instead of the terminal.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import traceback
from collections.abc import Sequence

from changeloop import __version__
from changeloop.cli import common
from changeloop.errors import ChangeloopError

VERBS = ("prove", "evidence", "receipt", "keygen", "report")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    from changeloop.cli import evidence, keygen, prove, receipt, report

    for module in (prove, evidence, receipt, keygen, report):
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help, --version, usage errors (exit 2)
        return int(exc.code or 0)
    try:
        code: int = args.func(args)
        return code
    except ChangeloopError as exc:
        return common.fail(args, exc, {"version": "1"})
    except BaseExceptionGroup as group:  # raised through a task group
        user = common.only_user_error(group)
        if user is None:
            return _crash()
        return common.fail(args, user, {"version": "1"})
    except KeyboardInterrupt:
        common.say("interrupted")
        return 130
    except OSError as exc:  # the environment said no: a path, a permission, a full disk
        where = f"{exc.filename}: " if exc.filename else ""
        common.say(f"error: {where}{exc.strerror or exc}")
        return 1
    except Exception:
        return _crash()


def _crash() -> int:
    """An unexpected exception is a bug: say so, keep the traceback out of the terminal."""
    with tempfile.NamedTemporaryFile(
        "w", prefix="changeloop-crash-", suffix=".log", delete=False
    ) as fh:
        traceback.print_exc(file=fh)
        where = fh.name
    common.say(
        "changeloop hit an unexpected error (a bug, not your mistake).\n"
        f"The traceback was written to {where}; please attach it to an issue."
    )
    return 3


def entry() -> None:
    sys.exit(main())
