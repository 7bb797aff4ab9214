"""``changeloop completion bash|zsh``: a static shell-completion script for every verb and flag.

The script is generated from the parser itself by shtab, so it never drifts
from the command line, and the shell sources plain text: nothing of
changeloop runs while completing (argcomplete would start Python on each Tab).

    changeloop completion bash > ~/.local/share/bash-completion/completions/changeloop
    changeloop completion zsh > "${fpath[1]}/_changeloop"
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from changeloop.cli import common

if TYPE_CHECKING:
    from changeloop.cli.boundary import Said

SHELLS = ("bash", "zsh")


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "completion",
        help="print a shell-completion script (bash or zsh) for every verb and flag",
        description=(
            "Print a static completion script on stdout; source it from your shell's\n"
            "start-up file. It is generated from changeloop's own parser."
        ),
        epilog=(
            "examples:\n"
            "  changeloop completion bash > ~/.local/share/bash-completion/completions/changeloop\n"
            '  changeloop completion zsh > "${fpath[1]}/_changeloop"\n\n'
            "exit codes: 0 printed, 2 an unknown shell"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    common.add_common(parser)
    parser.set_defaults(func=run)


def empty(said: Said) -> dict[str, Any]:
    """The ``--json`` document of a refused or interrupted ``completion``."""
    return {"version": "1", "shell": said.value("shell"), "script": None}


def run(args: argparse.Namespace) -> int:
    import shtab

    from changeloop.cli.main import build_parser

    script = shtab.complete(build_parser(), shell=args.shell)
    if common.json_mode(args):
        common.emit_json({"version": "1", "shell": args.shell, "script": script})
    else:
        sys.stdout.write(script if script.endswith("\n") else script + "\n")
    return 0
