"""The temporary index a content identity is staged in (never the user's index file).

It is seeded from a copy of the user's index (git's stat cache: unchanged files are
not hashed again), and then made to follow the bytes of the work tree:

- an entry the user flagged ``--assume-unchanged`` or ``--skip-worktree`` (one
  ``git add`` would not look at, so an edit to it would leave the tree id as it
  was) is dropped and added afresh, hashed: its stat data is not trusted;
- where git would convert what it hashes (``core.autocrlf``, a ``text``/``eol``/
  ``filter``/``ident``/``working-tree-encoding`` attribute), the files concerned are
  hashed again as they are on disk (``git hash-object --no-filters``): line-ending
  normalisation and clean filters must not let the bytes a check reads change
  under one tree id.

Both checks run beside ``git add`` (two small git processes in parallel), so a
repository with neither pays nothing more than they cost.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from changeloop.errors import ChangeloopError, Problem
from changeloop.git.repo import GitLayout, common_dir, git, git_env

__all__ = ["seed_index", "stage", "virtualenv_excludes"]

# `git ls-files -v` tags: lower case = assume-unchanged, "S" = skip-worktree. The patterns
# read the listing with a NUL before its first entry and after its last, so each starts
# with a literal (which `re` scans for) instead of an `^` alternative tried at every byte.
_FLAGGED = re.compile(rb"\0([a-zS]) ([^\0]*)")
_SETTINGS = r"^core\.(autocrlf|attributesfile)$"  # what decides conversion outside the tree
_ATTRS = ("text", "eol", "crlf", "filter", "ident", "working-tree-encoding")
# a `.gitattributes` entry: at the top (after its tag) or in a directory
_ATTRIBUTES_FILE = (
    re.compile(rb"\0[A-Za-z?] \.gitattributes\0"),
    re.compile(rb"/\.gitattributes\0"),
)


def seed_index(lay: GitLayout, tmp_index: Path, cwd: Path) -> None:
    """Start the temporary index from the user's (stat cache) or from HEAD."""
    if lay.index.is_file():
        # copy2 keeps the index's mtime: git's racy-clean check compares entry
        # mtimes against it, and a fresh mtime would make same-size edits made in
        # the same second as the last `git add` look unchanged.
        shutil.copy2(lay.index, tmp_index)
    elif lay.head is not None:
        git(["read-tree", "HEAD"], cwd=cwd, env=git_env(tmp_index))


def stage(cwd: Path, env: Mapping[str, str], *, include_untracked: bool) -> None:
    """Bring the temporary index to the working-tree content of ``cwd``'s subtree, its
    bytes as they are (no index flag hides a file, no conversion changes one)."""
    mode = "-A" if include_untracked else "-u"
    spec = [".", *virtualenv_excludes(cwd)] if include_untracked else ["."]
    add = ["-c", "advice.addEmbeddedRepo=false", "add", mode, "--", *spec]
    # read before `git add` rewrites the index (it renames a new one into place)
    listing = _start(["ls-files", "-v", "-z", "--full-name"], cwd, env)
    config = _start(["config", "-z", "--get-regexp", _SETTINGS], cwd, env)
    try:
        git(add, cwd=cwd, env=env)
        listed = b"\0" + _finish(listing, "ls-files -v") + b"\0"  # NUL-framed, as above
        configured = _finish(config, "config", ok=(0, 1))
    finally:  # whatever failed, neither process nor its pipes outlive this call
        for proc in (listing, config):
            if proc.returncode is None:
                proc.kill()
                proc.communicate()
    flagged = [m.group(2) for m in _FLAGGED.finditer(listed)]
    if flagged:
        _add_afresh(cwd, env, flagged)
        git(add, cwd=cwd, env=env)
    settings = dict(_pairs(configured))
    if _converts(cwd, env, listed, settings):
        _hash_raw(cwd, env, every=settings.get("core.autocrlf", "false") in ("true", "input"))


def _start(args: Sequence[str], cwd: Path, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["git", *args],
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _finish(proc: subprocess.Popen[bytes], what: str, ok: tuple[int, ...] = (0,)) -> bytes:
    out, err = proc.communicate()
    if proc.returncode not in ok:
        raise ChangeloopError(
            Problem(
                code="git_failed",
                message=f"git {what} failed: {err.decode(errors='replace').strip()}",
                fix="check that the repository path is a readable git work tree",
            ),
            exit_code=1,
        )
    return out


def _pairs(raw: bytes) -> list[tuple[str, str]]:
    """``git config -z --get-regexp`` output: ``key\\nvalue\\0`` records."""
    out = []
    for record in raw.split(b"\0"):
        if record:
            key, _nl, value = record.decode(errors="replace").partition("\n")
            out.append((key.lower(), value.strip().lower()))
    return out


def _add_afresh(cwd: Path, env: Mapping[str, str], paths: Sequence[bytes]) -> None:
    """Drop ``paths`` (full names) from the index and add those on disk again, hashed.

    Their stat data was recorded before a flag told git to stop looking: once the
    flag is dropped, an edit that kept the size within the same second (or restored
    the mtime) would still match it, and git would keep the old blob.
    """
    top = _toplevel(cwd, env)
    listing = b"".join(p + b"\0" for p in paths)
    git(["update-index", "--force-remove", "-z", "--stdin"], cwd=top, env=env, input_bytes=listing)
    present = [p for p in paths if os.path.lexists(top / os.fsdecode(p))]
    if present:
        git(
            ["add", "-f", "--pathspec-from-file=-", "--pathspec-file-nul"],
            cwd=top,
            env={**env, "GIT_LITERAL_PATHSPECS": "1"},
            input_bytes=b"".join(p + b"\0" for p in present),
        )


def _toplevel(cwd: Path, env: Mapping[str, str]) -> Path:
    out = git(["rev-parse", "--show-toplevel"], cwd=cwd, env=env).stdout
    return Path(os.fsdecode(out.strip()))


def _converts(
    cwd: Path, env: Mapping[str, str], listed: bytes, settings: Mapping[str, str]
) -> bool:
    """Whether ``git add`` may have hashed something other than the bytes on disk."""
    if settings.get("core.autocrlf", "false") in ("true", "input"):
        return True
    if any(p.search(listed) for p in _ATTRIBUTES_FILE) or (cwd / ".gitattributes").is_file():
        return True
    global_file = settings.get("core.attributesfile")
    candidates = [Path(global_file).expanduser()] if global_file else [_xdg_attributes()]
    candidates.append(common_dir(cwd, env) / "info" / "attributes")
    return any(_non_empty(p) for p in candidates)


def _xdg_attributes() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "git" / "attributes"


def _non_empty(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size > 0
    except OSError:
        return False


def _hash_raw(cwd: Path, env: Mapping[str, str], *, every: bool) -> None:
    """Hash again, as they are on disk, the staged files git would convert (all of them
    under ``core.autocrlf``), and put those blob ids in the index."""
    entries: dict[bytes, bytes] = {}  # full name -> mode
    listed = git(["ls-files", "-s", "-z", "--full-name", "--", "."], cwd=cwd, env=env).stdout
    for record in listed.split(b"\0"):
        meta, _tab, path = record.partition(b"\t")
        fields = meta.split(b" ")
        if len(fields) == 3 and fields[0] in (b"100644", b"100755"):
            entries[path] = fields[0]
    if not entries:
        return
    top = _toplevel(cwd, env)
    names = sorted(entries)
    if not every:
        names = _attributed(top, env, names)
    if not names:
        return
    paths = b"".join(os.fsencode(str(top)) + b"/" + n + b"\n" for n in names)
    if any(b"\n" in n for n in names):  # --stdin-paths reads lines: hash such names alone
        blobs = [
            git(
                ["hash-object", "-w", "--no-filters", "--", os.fsdecode(n)], cwd=top, env=env
            ).stdout.strip()
            for n in names
        ]
    else:
        out = git(
            ["hash-object", "-w", "--no-filters", "--stdin-paths"],
            cwd=top,
            env=env,
            input_bytes=paths,
        ).stdout
        blobs = out.split()
    info = b"".join(
        entries[n] + b" " + b + b"\t" + n + b"\0" for n, b in zip(names, blobs, strict=True)
    )
    git(["update-index", "-z", "--index-info"], cwd=top, env=env, input_bytes=info)


def _attributed(top: Path, env: Mapping[str, str], names: Sequence[bytes]) -> list[bytes]:
    """The ``names`` (full names) with a conversion attribute set: one ``git check-attr``."""
    listing = b"".join(n + b"\0" for n in names)
    out = git(
        ["check-attr", "-z", "--stdin", *_ATTRS], cwd=top, env=env, input_bytes=listing
    ).stdout
    fields = out.split(b"\0")
    found: set[bytes] = set()
    for k in range(0, len(fields) - 2, 3):
        path, _attr, value = fields[k], fields[k + 1], fields[k + 2]
        if value not in (b"unspecified", b"unset"):
            found.add(path)
    return [n for n in names if n in found]


def virtualenv_excludes(cwd: Path) -> list[str]:
    """Pathspecs leaving out top-level virtualenvs (a directory holding ``pyvenv.cfg``).

    A virtualenv is an installation, never source, yet Python < 3.13 does not
    ignore it itself: without this, an un-ignored ``.venv/`` of thousands of
    files would become part of the content identity
    (docs/decisions/021-a-virtualenv-is-never-content.md).
    """
    try:
        entries = list(os.scandir(cwd))
    except OSError:
        return []
    venvs = sorted(
        entry.name
        for entry in entries
        if entry.is_dir(follow_symlinks=False) and (Path(entry.path) / "pyvenv.cfg").is_file()
    )
    if not venvs:
        return []
    # An exclude pathspec naming an ignored path makes `git add` fail ("paths are
    # ignored", git 2.39): an ignored virtualenv is left out by git already.
    ignored = git(["check-ignore", "--", *venvs], cwd=cwd, check=False).stdout.decode()
    skip = {line.strip().rstrip("/") for line in ignored.splitlines()}
    return [f":(exclude){name}" for name in venvs if name not in skip]
