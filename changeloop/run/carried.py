"""Inputs digests carried over from the signed no-change record.

A provider's inputs digest (``fingerprint.InputsIndex.digest``) is a function of
its globs and of the files they match in the repository's content tree: path,
mode and blob id of each. When the record's tree and this run's tree differ only
in paths none of a provider's globs match, the matched files are the same files
with the same modes and ids, so the digest over the new tree *is* the recorded
one. ``git diff-tree -r`` names every path whose mode or id differs (added and
deleted ones included) without listing the thousands that are equal: one
changed file costs one diff, not a listing of the whole tree and 100 digests.

Anything this cannot judge exactly (a submodule on either side, a diff git
refuses, globs the record does not hold) is None, and the caller computes the
digest in full. docs/fingerprints.md, "Carried inputs digests", says why it is exact.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from changeloop.fingerprints.fingerprint import InputsIndex, literal_dirs, matching, subtree_entries
from changeloop.git.repo import git

__all__ = ["Carried", "KnownInputs", "globs_key"]

GITLINK = "160000"
SYMLINK = "120000"


class KnownInputs(NamedTuple):
    """What a verified no-change record says about one repository's earlier tree."""

    tree: str
    digests: Mapping[str, str]  # globs_key(globs) -> inputs digest over ``tree``
    symlinks: tuple[str, ...]  # the links in ``tree``


def globs_key(globs: Sequence[str]) -> str:
    """The key a set of ``inputs`` globs is recorded under (their order never matters)."""
    return json.dumps(sorted(globs))


class Carried:
    """The record's digests for one repository, checked against this run's tree."""

    def __init__(self, workdir: Path, known: KnownInputs, tree: str) -> None:
        self._workdir, self._tree = workdir, tree
        self._known = known
        self._changes = _changes(workdir, known.tree, tree)
        paths = sorted(os.fsencode(p) for p in self._changes or {})
        self._paths = paths

    @property
    def usable(self) -> bool:
        return self._changes is not None

    def digest(self, globs: Sequence[str]) -> str | None:
        """The recorded digest when no changed path is matched by ``globs``, else None."""
        if self._changes is None:
            return None
        recorded = self._known.digests.get(globs_key(globs))
        if recorded is None or matching(self._paths, globs):
            return None
        return recorded

    def partial(self, globs: Sequence[str]) -> InputsIndex | None:
        """An index of only the directories ``globs`` can match in the new tree (None: list
        the whole tree). Neither tree holds a gitlink, so no submodule is expanded."""
        if self._changes is None:
            return None
        dirs = literal_dirs(globs)
        entries = subtree_entries(self._workdir, self._tree, dirs) if dirs else None
        return InputsIndex.of_entries(self._workdir, entries) if entries is not None else None

    def symlinks(self) -> list[str] | None:
        """The links in the new tree: the recorded ones the diff left alone, plus its new ones."""
        if self._changes is None:
            return None
        kept = {p for p in self._known.symlinks if p not in self._changes}
        added = {p for p, mode in self._changes.items() if mode == SYMLINK}
        return sorted(kept | added)


def _changes(workdir: Path, old: str, new: str) -> dict[str, str] | None:
    """Path -> its mode in ``new`` ("000000" when deleted) for every path that differs."""
    if old == new:
        return {}
    proc = git(
        ["diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", old, new],
        cwd=workdir,
        check=False,
    )
    if proc.returncode != 0:
        return None
    out: dict[str, str] = {}
    fields = proc.stdout.split(b"\0")
    k = 0
    while k < len(fields):
        meta = fields[k]
        if not meta:
            k += 1
            continue
        if not meta.startswith(b":") or k + 1 >= len(fields):
            return None  # not the raw format this reads: judge nothing
        old_mode, new_mode = meta[1:].split(b" ")[:2]
        if GITLINK.encode() in (old_mode, new_mode):
            return None  # a submodule's files are expanded beside it: list in full
        out[os.fsdecode(fields[k + 1])] = new_mode.decode()
        k += 2
    return out
