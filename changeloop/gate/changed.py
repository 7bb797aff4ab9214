"""What changed between the content a receipt was made for and the content now.

A stale receipt's reason names the paths that differ, so "prove again" comes
with why: a test that wrote ``__pycache__/`` into an unignored tree (``--sandbox
none``) reads differently from an edit someone forgot. Both trees are in the
repository's object store when this machine computed them (``git write-tree``
left them there); a receipt made elsewhere (CI) names a tree this store may not
have, and then nothing is said beyond the ids.
"""

from __future__ import annotations

import re
from pathlib import Path

from changeloop.git.repo import git

__all__ = ["LIMIT", "changed_paths"]

LIMIT = 5  # paths named; the rest are counted
_TREE = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1 or SHA-256: never an option
_WORDS = {"A": "added", "D": "removed", "M": "changed", "T": "changed type"}


def changed_paths(repo: Path, made: str, now: str) -> str | None:
    """``added a, changed b (+3 more)``, or None when git cannot compare the two trees."""
    if not (_TREE.fullmatch(made) and _TREE.fullmatch(now)):
        return None
    argv = ["diff-tree", "-r", "-z", "--no-renames", "--name-status", made, now]
    proc = git(argv, cwd=repo, check=False)
    if proc.returncode != 0:  # a tree this object store does not have
        return None
    fields = proc.stdout.split(b"\0")
    pairs = list(zip(fields[0::2], fields[1::2], strict=False))
    said = [
        f"{_WORDS.get(status.decode()[:1], 'changed')} {path.decode(errors='replace')}"
        for status, path in pairs
        if status
    ]
    if not said:
        return None
    more = f" (+{len(said) - LIMIT} more)" if len(said) > LIMIT else ""
    return ", ".join(said[:LIMIT]) + more
