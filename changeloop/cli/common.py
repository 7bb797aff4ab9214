"""Flags and output helpers every verb shares.

Every verb accepts ``--root`` and ``--json`` after the verb too (docs/design.md).
With ``--json`` exactly one JSON document goes to stdout and human text to
stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
# output convention), null when the verb needed none (keygen, receipt verify); and
# ``--root`` as the user typed it, carried into every command we suggest.
_FOUND: list[Path] = []
_GIVEN: list[Path] = []


def find_root(args: argparse.Namespace) -> Path:
    """The workspace root (``--root``, else found upward), remembered for the document."""
    from changeloop.workspace import discovery as workspace

    given = root_arg(args)
    root = workspace.find_root(override=given)
    _FOUND[:] = [root]
    _GIVEN[:] = [given] if given is not None else []
    return root


def forget_root() -> None:
    """A new invocation (tests call ``main`` many times in one process)."""
    _FOUND.clear()
    _GIVEN.clear()
    _KNOWN.clear()


# What a verb learnt that its refusal's document must still say (the trust it judged
# with): the error boundary adds these fields to the verb's empty shape.
_KNOWN: dict[str, Any] = {}


def known_for_refusal(**fields: Any) -> None:
    _KNOWN.update(fields)


def known_so_far() -> dict[str, Any]:
    return dict(_KNOWN)


# Text recorded for a later replay (the no-change record's board) cannot know the
# directory it will be read from, nor how --root will be spelled: while recording,
# paths and --root are written as tokens that :func:`replayed` fills in.
_RECORDING: list[bool] = []
_ROOT_MARK = "\u27e6root\u27e7"  # ⟦root⟧: the workspace root, as shown from here
_ARG_MARK = "\u27e6--root\u27e7"
_CD = re.compile("\u27e6cd (.*?)\u27e7")


@contextlib.contextmanager
def recording() -> Iterator[None]:
    _RECORDING.append(True)
    try:
        yield
    finally:
        _RECORDING.pop()


def replayed(text: str) -> str:
    """Recorded text with its tokens filled in for this directory and this ``--root``."""
    root = _FOUND[0] if _FOUND else Path.cwd()
    text = _CD.sub(lambda m: _cd_prefix(root / m.group(1)), text)
    base = shown(root)
    text = text.replace(_ROOT_MARK + "/", "" if base == "." else base + "/")
    return text.replace(_ARG_MARK, _root_arg())


def _root_arg() -> str:
    return f" --root {shlex.quote(str(_GIVEN[0]))}" if _GIVEN else ""


def shown(path: Path | str) -> str:
    """A path as the user can use it from here: relative to the current directory when it
    lies below it, else absolute."""
    absolute = Path(path).absolute()
    if _RECORDING and _FOUND:
        try:
            return f"{_ROOT_MARK}/{absolute.relative_to(_FOUND[0].absolute()).as_posix()}"
        except ValueError:
            return str(absolute)
    try:
        return absolute.relative_to(Path.cwd()).as_posix() or "."
    except (ValueError, OSError):
        return str(absolute)


def command(*words: str) -> str:
    """``changeloop <words>`` with ``--root`` carried as the user typed it."""
    return shlex.join(["changeloop", *words]) + (_ARG_MARK if _RECORDING else _root_arg())


def carry_root(line: str) -> str:
    """A suggested ``changeloop …`` line (made elsewhere) with ``--root`` carried."""
    if line.startswith("changeloop ") and " --root " not in line:
        return line + (_ARG_MARK if _RECORDING else _root_arg())
    return line


def from_root(line: str) -> str:
    """A command written for the workspace root (doctor's playbook), pasteable from here:
    ``changeloop`` carries ``--root``; anything else runs in the root."""
    if line.startswith("changeloop "):
        return carry_root(line)
    return in_dir(_FOUND[0], line) if _FOUND else line


def in_dir(directory: Path, line: str) -> str:
    """``cd <dir> && line`` when ``directory`` is not where the user is."""
    if _RECORDING and _FOUND:
        try:
            rel = directory.absolute().relative_to(_FOUND[0].absolute()).as_posix()
        except ValueError:
            return f"cd {shlex.quote(str(directory.absolute()))} && {line}"
        return f"\u27e6cd {rel}\u27e7{line}"
    return _cd_prefix(directory) + line


def _cd_prefix(directory: Path) -> str:
    if directory.absolute() == Path.cwd().absolute():
        return ""
    return f"cd {shlex.quote(shown(directory))} && "


Step = tuple[str, str | None]  # a command to paste, and why (or None)


def steps_text(steps: list[Step]) -> str:
    """OpenSpec's ending: ``Next steps:`` and the commands to paste, each with why."""
    if not steps:
        return ""
    # Not aligned in columns: a recorded board is replayed with other path lengths.
    lines = [f"  {c}  # {why}" if why else f"  {c}" for c, why in steps]
    return "\nNext steps:\n" + "\n".join(lines) + "\n"


def next_steps(steps: list[Step]) -> None:
    """Print :func:`steps_text` to stderr."""
    text = steps_text(steps)
    if text:
        say(text.rstrip("\n"))


def json_mode(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "json", False))


def emit_json(doc: Any) -> None:
    """One JSON document on stdout; characters a terminal would act on are escaped
    (``\\uXXXX``, the same value to any JSON reader: signed strings end up here)."""
    if isinstance(doc, dict) and "root" not in doc:
        head = {"version": doc["version"]} if "version" in doc else {}
        doc = {**head, "root": str(_FOUND[0]) if _FOUND else None, **doc}
    text = json.dumps(doc, indent=2, ensure_ascii=False)
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
