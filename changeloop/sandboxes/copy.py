"""``--sandbox copy``: tracked plus untracked-not-ignored files, copied.

The file list is git's own (``git ls-files --cached --others --exclude-standard``),
so ignored output such as ``node_modules/``, ``target/`` or ``.venv/`` is never
copied, deleted files are skipped, and nested repositories are left out; a
submodule is copied by the same rule as a repository of its own
(:func:`copy_submodules`), an uninitialized one is an empty folder. Files
are copied by GNU ``cp -a --reflink=auto --parents`` in parallel batches (one per
CPU): copy-on-write clones where the filesystem has them (btrfs, XFS), a real
copy otherwise — never hardlinks, which would let a provider's in-place write
reach the user's file. Modes, symlinks and timestamps are kept.

The copy is then made a repository of its own (``own_repo``): its index is the
one the identity is computed with — the copy's own work tree hashed into the
source repository's object store — so it names exactly what the sandbox holds
even if the user edits files while the copy is made, ``git ls-files`` inside
lists the copied files (untracked ones included) and ``git status`` is clean.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from changeloop.errors import ChangeloopError, Problem
from changeloop.git import submodules
from changeloop.git.commit import with_config
from changeloop.git.identity import identity_from_tree
from changeloop.git.index import stage, virtualenv_excludes
from changeloop.git.repo import GitLayout, git, git_env, layout
from changeloop.model import ContentIdentity, Repository, SandboxMode
from changeloop.sandboxes import own_repo
from changeloop.sandboxes.base import Sandbox, new_dir, remove_sandbox

_ARGV_BUDGET = 96 * 1024  # bytes of paths per cp invocation, well under ARG_MAX


class Copy(Sandbox):
    def __init__(self, path: Path, identity: ContentIdentity, notes: tuple[str, ...] = ()) -> None:
        self.mode: SandboxMode = "copy"
        self.path = path
        self.identity = identity
        self.notes = notes

    def remove(self) -> None:
        remove_sandbox(self.path)


def list_files(source: Path, exclude: Path | None) -> list[str]:
    """Paths (relative to ``source``) of tracked and untracked-not-ignored files that exist."""
    listed = git(
        [
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
            "--",
            ".",
            *virtualenv_excludes(source),
        ],
        cwd=source,
    )
    deleted = git(["ls-files", "-z", "--deleted"], cwd=source)
    gone = set(deleted.stdout.split(b"\0"))
    # A submodule is copied as a repository of its own (copy_submodules), never by cp -a.
    gone.update(os.fsencode(path) for path, _commit in submodules.gitlinks(source))
    skip = None
    if exclude is not None and exclude.is_relative_to(source):
        skip = exclude.relative_to(source).as_posix().encode() + b"/"
    out: list[str] = []
    seen: set[bytes] = set()
    for raw in listed.stdout.split(b"\0"):
        # b"" ends the list; "dir/" is a nested repository; unmerged paths repeat.
        if not raw or raw.endswith(b"/") or raw in gone or raw in seen:
            continue
        if skip is not None and (raw + b"/").startswith(skip):
            continue
        seen.add(raw)
        out.append(os.fsdecode(raw))
    return out


def _batches(paths: Sequence[str], parts: int) -> list[list[list[str]]]:
    """``parts`` contiguous slices (directories stay together), each in argv-sized batches."""
    size = -(-len(paths) // max(parts, 1))
    slices = [paths[i : i + size] for i in range(0, len(paths), size)] if paths else []
    out: list[list[list[str]]] = []
    for piece in slices:
        batches: list[list[str]] = [[]]
        used = 0
        for path in piece:
            cost = len(path) + 1
            if used + cost > _ARGV_BUDGET and batches[-1]:
                batches.append([])
                used = 0
            batches[-1].append(path)
            used += cost
        out.append(batches)
    return out


def copy_files(source: Path, dest: Path, paths: Sequence[str]) -> None:
    """Copy ``paths`` from ``source`` into ``dest`` keeping the layout, one worker per CPU."""
    dest.mkdir(parents=True, exist_ok=True)
    # Parallel `cp --parents` workers race to create shared parent directories
    # ("File exists"); create every parent first, once.
    for parent in sorted({p.rpartition("/")[0] for p in paths} - {""}):
        (dest / parent).mkdir(parents=True, exist_ok=True)
    lanes = _batches(paths, os.cpu_count() or 1)
    procs: list[tuple[subprocess.Popen[bytes], list[list[str]]]] = []
    failures: list[str] = []

    def start(batches: list[list[str]]) -> None:
        batch = batches.pop(0)
        cmd = ["cp", "-a", "--reflink=auto", "--parents", "-t", str(dest), "--", *batch]
        procs.append((subprocess.Popen(cmd, cwd=source, stderr=subprocess.PIPE), batches))

    for lane in lanes:
        start(lane)
    while procs:
        proc, rest = procs.pop(0)
        _out, err = proc.communicate()
        if proc.returncode != 0:
            failures.append(err.decode(errors="replace").strip())
        if rest:
            start(rest)
    if failures:
        raise ChangeloopError(
            Problem(
                code="sandbox_copy_failed",
                message=f"copying {source} into its sandbox failed: {failures[0]}",
                fix="check free disk space and that no file was removed during the copy",
            ),
            exit_code=1,
        )


def index_copy(path: Path, source: Path, lay: GitLayout) -> tuple[str, ContentIdentity]:  # noqa: ARG001 (kept for callers)
    """Write the copy's own index; return its full tree and the identity in it.

    The index (``<copy>/.git/index``) is seeded from the user's (top-level
    repositories only: its paths must match the copy's layout) and compared with
    ``core.checkStat=minimal``: ``cp -a`` keeps size, mode and mtime, so git
    re-hashes exactly the files whose stat differs from what the user's index
    recorded — the trust ``git status`` itself places in the stat cache,
    including its re-hash of racily clean entries (the index mtime is kept).
    Git runs against the source's repository (its config and excludes, its
    object store: the identity's tree must be there), and writes a plain index
    (no split index, untracked cache or fsmonitor data of the user's) that the
    sandbox's own git can read. Inside the sandbox, git's default stat checks
    re-hash what the user's stat data cannot vouch for.
    """
    full_tree, env = stage_copy(path, lay)
    identity = identity_from_tree(
        path, env, full_tree, prefix="", head_prefix=lay.prefix, head=lay.head
    )
    return full_tree, identity


def stage_copy(path: Path, lay: GitLayout) -> tuple[str, dict[str, str]]:
    """Stage the copy at ``path`` into its own index (see :func:`index_copy`); its tree."""
    index = path / ".git" / "index"
    if not lay.prefix and lay.index.is_file():
        shutil.copy2(lay.index, index)
    env = with_config(
        git_env(index, {"GIT_DIR": str(lay.git_dir), "GIT_WORK_TREE": str(path)}),
        {
            "core.checkStat": "minimal",
            "core.trustctime": "false",
            "core.splitIndex": "false",
            "core.untrackedCache": "false",
            "core.fsmonitor": "false",
        },
    )
    stage(path, env, include_untracked=True)
    full_tree = git(["write-tree"], cwd=path, env=env).stdout.decode().strip()
    return full_tree, env


def copy_submodules(source: Path, dest: Path, prefix: str = "") -> tuple[list[str], list[str]]:
    """Copy each initialized submodule of ``source`` into ``dest`` as a repository of its own.

    The main tree's rule, recursively: tracked plus untracked-not-ignored files
    of the submodule, copied; its own submodules first; then its index is
    staged from the copy (in the user's submodule object store) and its HEAD
    set to what the superproject's gitlink will name (``submodules.content_commit``),
    so staging the superproject afterwards records exactly that. Returns the
    uninitialized submodules' paths (left empty folders, as git leaves them,
    ``prefix``-ed) and the copied ones' (from ``dest``, for ``own_repo.activate``).
    """
    missing: list[str] = []
    copied: list[str] = []
    for rel, _commit in submodules.gitlinks(source):
        src, target = source / rel, dest / rel
        target.mkdir(parents=True, exist_ok=True)
        if not submodules.initialized(src):
            missing.append(prefix + rel)
            continue
        lay = layout(src)
        if lay.toplevel.resolve() != src.resolve():
            continue  # not a repository of its own: an empty folder, git's gitlink stands
        copy_files(src, target, list_files(src, None))
        nested_missing, nested = copy_submodules(src, target, f"{prefix}{rel}/")
        missing += nested_missing
        own_repo.init(target, lay)
        own_repo.activate(target, nested)
        tree, _env = stage_copy(target, lay)
        commit = submodules.content_commit(target, tree, lay)
        own_repo.finish(target, src, tree, lay, commit=commit)
        copied.append(rel)
    return missing, copied


def create(repo: Repository, base_dir: Path) -> Sandbox:
    source = repo.path.resolve()
    lay = layout(source)  # refuse a path that is not a git work tree, before copying anything
    path = new_dir(base_dir, repo.name, source.name)
    try:
        copy_files(source, path, list_files(source, base_dir.resolve()))
        missing, copied = copy_submodules(source, path)
        own_repo.init(path, lay)
        own_repo.activate(path, copied)
        full_tree, identity = index_copy(path, source, lay)
        own_repo.finish(path, source, full_tree, lay)
    except BaseException:
        remove_sandbox(path)
        raise
    return Copy(path, identity, tuple(submodules.note(p) for p in missing))
