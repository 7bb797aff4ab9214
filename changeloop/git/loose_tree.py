"""A tree id computed in-process from the loose tree object ``git write-tree`` just left.

The no-change check (changeloop.nochange) compares a repository's content tree,
``openspec/`` left out, with the recorded one; when they are equal, hashing the
top-level tree without that one entry here saves the ``git mktree`` that would
write it (changeloop.git.identity.content_tree). Anything unusual — a packed object,
an alternate store, an object format this Python cannot hash — is None, and git
answers instead.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from changeloop.git.repo import GitLayout

_OBJECT_LIMIT = 16 * 1024 * 1024  # a top-level tree is a few KiB; anything bigger: ask git


def top_without(lay: GitLayout, tree: str, name: str) -> str | None:
    """The id of ``tree`` with its top-level entry ``name`` left out, hashed here from the
    loose object ``git write-tree`` left in the object store; None when it is not a loose
    object there (packed, in an alternate store) or does not hash to ``tree`` (then git
    answers, as before). The same bytes ``git mktree`` would write: removing one entry
    keeps git's order, and a tree's id is the hash of its header and entries."""
    path = lay.git_dir / "objects" / tree[:2] / tree[2:]
    try:
        with path.open("rb") as fh:
            raw = fh.read(_OBJECT_LIMIT + 1)
        if len(raw) > _OBJECT_LIMIT:
            return None
        data = zlib.decompress(raw)
    except (OSError, zlib.error):
        return None
    try:
        if hashlib.new(lay.object_format, data).hexdigest() != tree:
            return None
    except ValueError:  # an object format this Python cannot hash
        return None
    header, _nul, body = data.partition(b"\0")
    if header != b"tree %d" % len(body):
        return None
    size = len(bytes.fromhex(tree))  # the binary id's length: 20 (sha1) or 32 (sha256)
    kept: list[bytes] = []
    at = 0
    while at < len(body):
        space = body.find(b" ", at)
        nul = body.find(b"\0", space + 1)
        end = nul + 1 + size
        if space < 0 or nul < 0 or end > len(body):
            return None
        if body[space + 1 : nul] != os.fsencode(name):
            kept.append(body[at:end])
        at = end
    if sum(map(len, kept)) == len(body):
        return tree
    out = b"".join(kept)
    return hashlib.new(lay.object_format, b"tree %d\0" % len(out) + out).hexdigest()
