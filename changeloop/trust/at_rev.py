"""A change's trust material as another git revision holds it (``--trust-from REV``).

Example::

    found = read_at_rev(plan, "main")
    found.commit        # the commit ``main`` names
    found.providers     # external provider -> ProviderTrust, or None: no change at main

Everything is read from git's object store, never from the checkout:
``execution.yaml`` at REV (through the same loader and schema as the checkout's),
and each ``publicKeyFile`` it names, resolved beside it *at REV*. Only regular
blobs are read (a symlink at REV is refused, not followed), each with a size cap.
A change that does not exist at REV has no material at all.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from changeloop.errors import ChangeloopError, FileRefused, Problem
from changeloop.fsio import KIB
from changeloop.git.repo import git
from changeloop.model import Plan
from changeloop.trust.records import ProviderTrust, of_provider

__all__ = ["AtRev", "read_at_rev"]

KEY_LIMIT = 64 * KIB
_REGULAR = ("100644", "100755")
_ARCHIVED = re.compile(r"^\d{4}-\d{2}-\d{2}-(.+)$")


@dataclass(frozen=True)
class AtRev:
    rev: str
    commit: str
    change_path: str | None  # the change's directory at REV (repository-relative), or None
    providers: Mapping[str, ProviderTrust] | None  # None: the change does not exist at REV
    others: frozenset[str] = frozenset()  # providers at REV that are not external


def read_at_rev(plan: Plan, rev: str) -> AtRev:
    """The trust material of ``plan``'s change at ``rev`` (a ChangeloopError, exit 2, when
    ``rev`` names no commit or what it holds cannot be read)."""
    top = _toplevel(plan.root)
    commit = _commit(top, rev)
    where = _change_at(top, commit, plan)
    if where is None:
        return AtRev(rev, commit, None, None)
    execution = _entry(top, commit, f"{where}/execution.yaml")
    if execution is None:
        return AtRev(rev, commit, where, {})
    from changeloop.config.execution import execution_from_document  # noqa: PLC0415 - config pulls in yaml; only reading trust at a revision needs it
    from changeloop.config.yamlio import MAX_BYTES, parse_yaml_bytes  # noqa: PLC0415 - config pulls in yaml; only reading trust at a revision needs it

    shown = f"{rev}:{where}/execution.yaml"
    raw = _blob(top, execution, MAX_BYTES, shown)
    doc = parse_yaml_bytes(raw, Path(shown), shown)

    shown_dir = PurePosixPath(shown).parent

    def read_key(path: Path) -> bytes:
        # Beside execution.yaml *at REV*: the checkout's files never enter.
        try:
            beside = PurePosixPath(path.as_posix()).relative_to(shown_dir)
        except ValueError:  # an absolute publicKeyFile
            beside = None
        inside = _inside(PurePosixPath(where) / beside) if beside is not None else None
        if inside is None:
            raise FileRefused(path, "publicKeyFile", f"leaves the repository at {rev}")
        entry = _entry(top, commit, inside)
        if entry is None:
            raise FileRefused(path, "publicKeyFile", f"does not exist at {rev}", missing=True)
        return _blob(top, entry, KEY_LIMIT, f"{rev}:{inside}")

    execution_doc = execution_from_document(doc, read_key=read_key)
    providers = {
        name: of_provider(p)
        for name, p in execution_doc.providers.items()
        if p.adapter == "external"
    }
    others = frozenset(n for n, p in execution_doc.providers.items() if p.adapter != "external")
    return AtRev(rev, commit, where, providers, others)


def _refused(message: str, fix: str) -> ChangeloopError:
    return ChangeloopError(
        Problem(code="trust_from_unknown", message=message, fix=fix), exit_code=2
    )


def _toplevel(root: Path) -> Path:
    proc = git(["rev-parse", "--show-toplevel"], cwd=root, check=False)
    if proc.returncode != 0:
        raise ChangeloopError(
            Problem(
                code="trust_from_not_git",
                message=f"--trust-from reads another revision, and {root} is not in a git"
                " repository",
                fix="run in a git checkout, or name the keys with --public-key or"
                " --trust-keyring instead",
            ),
            exit_code=2,
        )
    return Path(proc.stdout.decode().strip())


def _commit(top: Path, rev: str) -> str:
    """The commit ``rev`` names; never an option, never a path inside a tree."""
    if not rev or rev.startswith("-") or any(c in rev for c in "\0\n\r") or ":" in rev:
        raise _refused(
            f"--trust-from {rev!r} is not a revision name",
            "name a branch, tag or commit of this repository, e.g. --trust-from origin/main",
        )
    proc = git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=top, check=False)
    if proc.returncode != 0:
        raise _refused(
            f"--trust-from {rev!r} names no commit of this repository",
            "fetch the base branch first (e.g. `git fetch origin main`), then name it as git"
            " does: --trust-from origin/main",
        )
    return proc.stdout.decode().strip()


def _entry(top: Path, commit: str, path: str) -> tuple[str, str, str] | None:
    """(mode, type, object id) of ``path`` at ``commit``, or None when it is not there."""
    proc = git(["ls-tree", "-z", commit, "--", path], cwd=top, check=False)
    if proc.returncode != 0 or not proc.stdout:
        return None
    head, _, name = proc.stdout.rstrip(b"\0").partition(b"\t")
    if name.decode(errors="replace") != path:
        return None
    mode, kind, oid = head.decode().split()
    return mode, kind, oid


def _blob(top: Path, entry: tuple[str, str, str], limit: int, shown: str) -> bytes:
    """The bytes of a regular blob (``shown``: ``REV:path``, for refusals), at most ``limit``."""
    mode, kind, oid = entry
    if kind != "blob" or mode not in _REGULAR:
        what = "a symlink" if mode == "120000" else f"a {kind}"
        raise FileRefused(shown, "the file", f"is {what} at that revision, not a regular file")
    size = git(["cat-file", "-s", oid], cwd=top).stdout.decode().strip()
    if int(size) > limit:
        raise FileRefused(shown, "the file", f"is larger than {limit // KIB} KiB ({size} bytes)")
    return git(["cat-file", "blob", oid], cwd=top).stdout


def _change_at(top: Path, commit: str, plan: Plan) -> str | None:
    """The change's directory at ``commit``: where it is here, else active or archived by id."""
    here = _relative(top, plan.change.path)
    changes = _relative(top, plan.root / "openspec" / "changes")
    candidates = [c for c in (here, f"{changes}/{plan.change.id}" if changes else None) if c]
    for candidate in candidates:
        entry = _entry(top, commit, candidate)
        if entry is not None and entry[1] == "tree":
            return candidate
    if changes is None:
        return None
    listing = ["ls-tree", "-z", "--name-only", commit, "--", f"{changes}/archive/"]
    proc = git(listing, cwd=top, check=False)
    for name in sorted(proc.stdout.split(b"\0")):
        base = posixpath.basename(name.decode(errors="replace"))
        match = _ARCHIVED.match(base)
        if match and match[1] == plan.change.id:
            return f"{changes}/archive/{base}"
    return None


def _relative(top: Path, path: Path) -> str | None:
    try:
        rel = path.resolve().relative_to(top.resolve()).as_posix()
    except ValueError:
        return None
    return rel if rel != "." else None


def _inside(path: PurePosixPath) -> str | None:
    """``path`` normalised, or None when it climbs out of the repository."""
    normal = posixpath.normpath(path.as_posix())
    if normal.startswith("../") or normal == ".." or normal.startswith("/"):
        return None
    return normal
