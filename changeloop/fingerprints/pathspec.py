"""Git's ``:(glob)`` pathspec matching, in Python, byte for byte as git 2.39 does it.

``inputs`` (docs/processes.md) follow git's pathspec semantics, so ``src`` covers
everything under ``src/``. Asking git per provider would cost one process per
provider; this module answers the same question from a listing made once:

    spec = Pathspec.parse("src/**/*.py")
    spec.matches(b"src/a/b.py")  # paths are the bytes git stores

What git does (dir.c ``match_pathspec_item``, wildmatch.c with ``WM_PATHNAME``):
- the pattern is normalised like a path (``./`` and ``//`` dropped, ``src/.``
  is ``src/``); an empty pattern (``.``) matches everything;
- the pattern compared *literally* matches a path that equals it or lies under
  it (``src`` and ``src/`` cover ``src/a``; ``a.py/`` matches no file);
- a pattern with a wildcard (``* ? [`` or ``\\``) also matches a path that
  starts with the literal part before the first wildcard and whose rest
  wildmatches: ``*``, ``?`` and ``[...]`` never match ``/``; ``**`` matches
  across directories only when it stands between slashes or at the ends of
  the part after that literal prefix (so ``src**`` covers ``src/a`` but
  ``a**b`` does not cross a ``/``); a wildcard that matches a directory's name
  does not cover its contents (``src/b*`` matches no ``src/b/c``);
- a malformed class (``[`` without ``]``, an unknown ``[:name:]``) matches
  nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Pathspec", "literal_prefix", "normalize"]

_SPECIAL = b"*?[\\"
_CLASS_TESTS: dict[bytes, Callable[[str], bool]] = {
    b"alnum": str.isalnum,
    b"alpha": str.isalpha,
    b"blank": lambda ch: ch in " \t",
    b"cntrl": lambda ch: ord(ch) < 32 or ord(ch) == 127,
    b"digit": str.isdigit,
    b"graph": lambda ch: 33 <= ord(ch) <= 126,
    b"lower": str.islower,
    b"print": lambda ch: 32 <= ord(ch) <= 126,
    b"punct": lambda ch: 33 <= ord(ch) <= 126 and not ch.isalnum(),
    b"space": lambda ch: ch in " \t\n\r",  # git's isspace: no \v, no \f
    b"upper": str.isupper,
    b"xdigit": lambda ch: ch in "0123456789abcdefABCDEF",
}
# git's ctype is ASCII only: a byte >= 128 is in no named class.
_CLASSES = {
    name: frozenset(c for c in range(1, 128) if test(chr(c))) for name, test in _CLASS_TESTS.items()
}


class _Malformed(Exception):
    """wildmatch's WM_ABORT_ALL: the pattern can match nothing."""


def normalize(pattern: str) -> bytes:
    """The pattern as git keeps it: ``.`` and empty components dropped, ``..`` resolved.

    A trailing slash survives (``src/.`` is ``src/``): it limits the match to
    directories. ``..`` above the top is left in place and then matches nothing
    (preflight refuses such paths before a run).
    """
    raw = pattern.encode("utf-8", "surrogateescape")
    parts: list[bytes] = []
    for part in raw.split(b"/"):
        if part in (b"", b"."):
            continue
        if part == b".." and parts and parts[-1] != b"..":
            parts.pop()
        else:
            parts.append(part)
    out = b"/".join(parts)
    if out and (raw.endswith(b"/") or raw.endswith(b"/.")):
        out += b"/"
    return out


def _class(pattern: bytes, i: int) -> tuple[frozenset[int], int]:
    """Parse ``[...]`` starting after the ``[`` at ``i``; returns (bytes matched, next index)."""
    n = len(pattern)
    negated = i < n and pattern[i] in b"!^"
    if negated:
        i += 1
    members: set[int] = set()
    prev: int | None = None
    first = True
    while True:
        if i >= n:
            raise _Malformed
        ch = pattern[i]
        if ch == ord("]") and not first:
            i += 1
            break
        first = False
        if ch == ord("\\"):
            i += 1
            if i >= n:
                raise _Malformed
            ch = pattern[i]
            members.add(ch)
            prev = ch
        elif ch == ord("-") and prev is not None and i + 1 < n and pattern[i + 1] != ord("]"):
            i += 1
            high = pattern[i]
            if high == ord("\\"):
                i += 1
                if i >= n:
                    raise _Malformed
                high = pattern[i]
            members.update(range(prev, high + 1))
            prev = None
        elif ch == ord("[") and i + 1 < n and pattern[i + 1] == ord(":"):
            end = pattern.find(b"]", i + 2)
            if end < 0:
                raise _Malformed
            name = pattern[i + 2 : end]
            if len(name) < 1 or not name.endswith(b":"):
                members.add(ch)  # no ":]": an ordinary "[" in the set
                prev = ch
            else:
                if name[:-1] not in _CLASSES:
                    raise _Malformed
                members.update(_CLASSES[name[:-1]])
                prev = None
                i = end
        else:
            members.add(ch)
            prev = ch
        i += 1
    allowed = frozenset(range(1, 256)) - members if negated else frozenset(members)
    return allowed - {ord("/")}, i


def _byte_class(allowed: frozenset[int]) -> bytes:
    if not allowed:
        return b"(?!)"
    return b"[" + b"".join(re.escape(bytes([c])) for c in sorted(allowed)) + b"]"


def _wild_regex(rest: bytes) -> bytes:
    """wildmatch(``rest``, text, WM_PATHNAME) as a regex body; text is the path after the prefix."""
    out: list[bytes] = []
    i, n = 0, len(rest)
    while i < n:
        ch = rest[i]
        if ch == ord("*"):
            j = i
            while j < n and rest[j] == ord("*"):
                j += 1
            double = j - i >= 2
            at_start = i == 0 or rest[i - 1] == ord("/")
            if double and at_start and j < n and rest[j] == ord("/"):
                out.append(b"(?:.*/)?")  # zero or more directories
                j += 1
            elif double and at_start and (j == n or rest[j : j + 2] == b"\\/"):
                out.append(b".*")
            else:
                out.append(b"[^/]*")
            i = j
        elif ch == ord("?"):
            out.append(b"[^/]")
            i += 1
        elif ch == ord("["):
            allowed, i = _class(rest, i + 1)
            out.append(_byte_class(allowed))
        elif ch == ord("\\"):
            if i + 1 >= n:
                raise _Malformed  # a trailing backslash matches no character
            out.append(re.escape(rest[i + 1 : i + 2]))
            i += 2
        else:
            out.append(re.escape(rest[i : i + 1]))
            i += 1
    return b"".join(out)


def _first_wildcard(text: bytes) -> int:
    return min((k for k in (text.find(bytes([c])) for c in _SPECIAL) if k >= 0), default=-1)


def literal_prefix(pattern: str) -> bytes | None:
    """:attr:`Pathspec.prefix` of ``pattern`` when it has wildcards, None when it has none."""
    text = normalize(pattern)
    cut = _first_wildcard(text)
    return None if cut < 0 else text[:cut]


@dataclass(frozen=True)
class Pathspec:
    """One normalised pattern: its literal form and, if it has wildcards, its regex."""

    text: bytes
    prefix: bytes  # the literal part before the first wildcard
    regex: re.Pattern[bytes] | None

    @classmethod
    def parse(cls, pattern: str) -> Pathspec:
        text = normalize(pattern)
        cut = _first_wildcard(text)
        if cut < 0:
            return cls(text, text, None)
        prefix = text[:cut]
        try:
            body = _wild_regex(text[cut:])
        except _Malformed:
            return cls(text, prefix, re.compile(b"(?!)"))
        return cls(text, prefix, re.compile(re.escape(prefix) + body + rb"\Z", re.DOTALL))

    def matches(self, path: bytes) -> bool:
        """Whether git's ``ls-files -- ':(glob)<pattern>'`` lists ``path``."""
        text = self.text
        if not text:
            return True
        if path.startswith(text) and (
            len(path) == len(text) or text.endswith(b"/") or path[len(text)] == ord("/")
        ):
            return True
        return self.regex is not None and self.regex.match(path) is not None
