"""Find the workspace root and its changes exactly the way OpenSpec does.

changeloop is "one more verb" of an OpenSpec tree, so a directory that
``openspec`` treats as a change must be one here, and nothing else may be::

    root = find_root()                      # nearest ancestor with a real openspec/
    ref = find_change(root, "add-greeting") # active first, then archive/YYYY-MM-DD-<id>/
    ref.archived                            # tells the caller which one was used
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from changeloop.errors import ConfigError, Location, Problem
from changeloop.workspace.changeref import ChangeRef

OPENSPEC_DIR = "openspec"
ARCHIVE_DIR = "archive"
# OpenSpec prefixes archived changes with the local date; an id that already
# starts with a date keeps it, so only the first prefix is stripped.
_ARCHIVED = re.compile(r"^(\d{4}-\d{2}-\d{2})-(.+)$")


def is_workspace(directory: Path) -> bool:
    """OpenSpec's marker: ``openspec/`` holding specs/, changes/ or a config file."""
    spec = directory / OPENSPEC_DIR
    return (
        (spec / "specs").is_dir()
        or (spec / "changes").is_dir()
        or (spec / "config.yaml").is_file()
        or (spec / "config.yml").is_file()
    )


def find_root(start: Path | None = None, override: Path | None = None) -> Path:
    """The workspace root: ``override`` if given, else the nearest marked ancestor."""
    if override is not None:
        root = override.expanduser().resolve()
        if not (root / OPENSPEC_DIR).is_dir():
            raise ConfigError(
                Problem(
                    code="not_a_workspace",
                    message=f"--root {override} has no {OPENSPEC_DIR}/ directory",
                    location=Location(str(override)),
                    fix="point --root at the directory that holds openspec/ "
                    "(or run `openspec init` there)",
                )
            )
        return root
    here = (start or Path.cwd()).expanduser().resolve()
    for candidate in (here, *here.parents):
        if is_workspace(candidate):
            return candidate
    raise ConfigError(
        Problem(
            code="no_workspace",
            message=(
                f"no OpenSpec workspace found from {here} upward "
                f"(looked for {OPENSPEC_DIR}/ holding specs/, changes/ or config.yaml)"
            ),
            fix="run inside an OpenSpec project, pass --root DIR, or run `openspec init`",
        )
    )


def _changes_dir(root: Path) -> Path:
    return root / OPENSPEC_DIR / "changes"


def _active(root: Path) -> dict[str, Path]:
    changes = _changes_dir(root)
    if not changes.is_dir():
        return {}
    return {
        entry.name: entry
        for entry in changes.iterdir()
        if entry.is_dir() and not entry.name.startswith(".") and entry.name != ARCHIVE_DIR
    }


def _archived(root: Path) -> dict[str, Path]:
    """id -> newest archived directory of that id (archive names sort by date)."""
    archive = _changes_dir(root) / ARCHIVE_DIR
    if not archive.is_dir():
        return {}
    found: dict[str, Path] = {}
    for entry in sorted(archive.iterdir(), key=lambda p: p.name):
        if not entry.is_dir() or entry.name.startswith("."):
            continue
        match = _ARCHIVED.match(entry.name)
        if match:
            found[match.group(2)] = entry
    return found


def list_changes(root: Path) -> list[ChangeRef]:
    """Every change, sorted by id; an archived id shadowed by an active one is left out."""
    active = _active(root)
    refs = [ChangeRef(id=name, path=path) for name, path in active.items()]
    refs += [
        ChangeRef(id=name, path=path, archived=True)
        for name, path in _archived(root).items()
        if name not in active
    ]
    return sorted(refs, key=lambda ref: (ref.id, ref.archived))


def _check_id(change_id: str) -> None:
    """OpenSpec looks existing ids up loosely; refuse only what could leave the tree."""
    bad = (
        not change_id
        or change_id in (".", "..", ARCHIVE_DIR)
        or change_id.startswith(".")
        or "/" in change_id
        or "\\" in change_id
        or "\x00" in change_id
    )
    if bad:
        raise ConfigError(
            Problem(
                code="invalid_change_id",
                message=f"{change_id!r} is not a change id (no '.', '..', 'archive', "
                "path separators, NUL or leading dot)",
                fix="pass the name of a directory under openspec/changes/",
            )
        )


def find_change(root: Path, change_id: str) -> ChangeRef:
    """Look a change up by id: active wins over archived; archived also by its dir name."""
    _check_id(change_id)
    active = _active(root)
    if change_id in active:
        return ChangeRef(id=change_id, path=active[change_id])
    archived = _archived(root)
    if change_id in archived:
        return ChangeRef(id=change_id, path=archived[change_id], archived=True)
    exact = _changes_dir(root) / ARCHIVE_DIR / change_id
    match = _ARCHIVED.match(change_id)
    if match and exact.is_dir():
        return ChangeRef(id=match.group(2), path=exact, archived=True)
    existing = list_changes(root)
    names = [ref.id + (" (archived)" if ref.archived else "") for ref in existing]
    listing = ", ".join(names) if names else "none — openspec/changes/ is empty"
    raise ConfigError(
        Problem(
            code="unknown_change",
            message=f"unknown change {change_id!r}; changes: {listing}",
            location=Location(f"{OPENSPEC_DIR}/changes"),
            fix="use one of the listed ids, or create openspec/changes/<id>/ "
            "(`openspec new change <id>`)",
        )
    )


def git_work_tree_refusal(path: Path) -> tuple[str, str | None] | None:
    """None when ``path`` is inside a git work tree; else (git's reason, git's fix).

    git may refuse a real repository — "detected dubious ownership" when it
    belongs to another user (``safe.directory``) — and that is not the same
    answer as "not a git work tree": the reason and the fix git prints are
    passed through so the user can act on them.
    """
    try:
        done = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return ("git rev-parse did not answer within 30 s", None)
    except OSError as exc:
        return (f"git could not be run: {exc.strerror or exc}", "install git and put it on PATH")
    if done.returncode == 0 and done.stdout.strip() == "true":
        return None
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    fatal = [line.removeprefix("fatal:").strip() for line in lines if line.startswith("fatal:")]
    reason = fatal[0] if fatal else (lines[0] if lines else "not a git work tree")
    fix = next((line for line in lines if line.startswith("git config")), None)
    if "dubious ownership" in reason and fix is None:
        fix = f"git config --global --add safe.directory {path}"
    if fix is not None and not fix.startswith("run"):
        fix = f"if you trust this repository, run `{fix}`"
    return (reason, fix)
