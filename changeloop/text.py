"""Make text from untrusted sources safe to print on a terminal or in JSON.

Signed strings (a receipt's change, issuer, reason, …) are chosen by whoever
signed them. Printed raw, an ANSI escape in one could clear the screen, recolour
"invalid" as "valid" or hide a line; a lone surrogate could crash the writer.
Everything that prints such text escapes it first (docs/threat-model.md).

Usage::

    escape_controls("\\x1b[2Jok")          # '\\\\x1b[2Jok' — one visible line
    escape_controls("a\\nb", keep="\\n")   # newline kept (our own multi-line messages)
    escape_json_text(json.dumps(doc, ensure_ascii=False))  # same JSON, no raw C1/bidi
"""

from __future__ import annotations

import io
import re
from typing import TextIO, cast

# C0 controls, DEL, C1 controls, lone surrogates, line/paragraph separators,
# and the bidirectional overrides/isolates that reorder what a reader sees.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_controls(text: str, keep: str = "") -> str:
    """``text`` with every control-like character written as a visible escape.

    ``keep`` lists characters to leave alone (``"\\n\\t"`` for our own
    multi-line messages). Printable text, accents and emoji pass unchanged.
    """
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: m[0] if m[0] in keep else _escape(m[0]), text)


_JSON_UNSAFE = re.compile("[\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def escape_json_text(text: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) with the characters
    ``json`` leaves raw but a terminal would act on written as ``\\uXXXX``.

    Such characters can only occur inside JSON strings, where ``\\uXXXX`` means
    the same character: the document is unchanged for any JSON reader.
    """
    if not _JSON_UNSAFE.search(text):
        return text
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


class TerminalText(io.TextIOBase):
    """A text stream that escapes control characters (keeping newline and tab)
    before they reach ``out``: for views that quote signed reasons and names
    (the ``prove`` board), so no quoted string can drive the terminal."""

    def __init__(self, out: TextIO) -> None:
        super().__init__()
        self._out = out

    def write(self, text: str) -> int:
        self._out.write(escape_controls(text, keep="\n\t"))
        return len(text)

    def flush(self) -> None:
        self._out.flush()

    def isatty(self) -> bool:
        return self._out.isatty()

    def as_textio(self) -> TextIO:
        """This stream, typed as what views accept."""
        return cast(TextIO, self)


# The name evidence.yaml gives the one repository it leaves unnamed (config/evidence.py).
IMPLICIT_REPOSITORY = "self"


def repository_words(name: str) -> str:
    """How user-facing text names a repository: ``this repository`` for the one
    evidence.yaml leaves unnamed (never its internal name), else ``repository web``."""
    return "this repository" if name == IMPLICIT_REPOSITORY else f"repository {name}"
