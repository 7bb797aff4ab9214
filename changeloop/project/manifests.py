"""Read repository manifests as data: TOML, JSON, INI, requirements files.

Nothing here executes or imports project code: ``tomllib``, ``json`` and
``configparser`` only parse. A manifest that does not parse is treated as
absent (detection reports what it can read; the project's own tools will
complain about a broken manifest far better than we could).
"""

from __future__ import annotations

import configparser
import json
import os
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MAX_BYTES = 2_000_000  # manifests are small; refuse to slurp a stray huge file
SKIP_DIRS = frozenset(
    {
        ".git",
        "node_modules",
        "target",
        ".venv",
        "venv",
        "env",
        "__pycache__",
        "dist",
        "build",
        ".changeloop",
        "openspec",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
    }
)


def _text(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def read_toml(path: Path) -> dict[str, Any] | None:
    text = _text(path)
    if text is None:
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def read_json(path: Path) -> dict[str, Any] | None:
    text = _text(path)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def read_ini(path: Path) -> configparser.ConfigParser | None:
    text = _text(path)
    if text is None:
        return None
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error:
        return None
    return parser


def dig(data: Any, *keys: str) -> Any:
    """``data[k1][k2]...`` or None when any level is missing or not a table."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*)$")
_PIN = re.compile(r"==\s*([0-9][^\s,;]*)")


def normalize(name: str) -> str:
    """PEP 503 name normalisation."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement(spec: str) -> tuple[str, str | None] | None:
    """``"pytest==8.3.2 ; python_version>'3'"`` → ``("pytest", "8.3.2")``; None if unreadable."""
    spec = spec.split("#", 1)[0].strip()
    if not spec or spec.startswith("-"):
        return None
    match = _REQ_NAME.match(spec)
    if match is None:
        return None
    pin = _PIN.search(match.group(2).split(";", 1)[0])
    return normalize(match.group(1)), (pin.group(1) if pin else None)


def requirement_lines(path: Path) -> list[str]:
    text = _text(path)
    return [] if text is None else text.splitlines()


class Unreadable:
    """Directories a scan could not open, relative to the scanned root.

    A root-owned ``0700`` directory (a database volume) is skipped, never fatal:
    detection reports what it could read and says what it could not.
    """

    def __init__(self) -> None:
        self.paths: set[str] = set()

    def add(self, root: Path, path: str) -> None:
        try:
            self.paths.add(Path(path).relative_to(root).as_posix())
        except ValueError:
            self.paths.add(path)

    def sorted(self) -> tuple[str, ...]:
        return tuple(sorted(self.paths))


def _openable(path: str) -> bool:
    return os.access(path, os.R_OK | os.X_OK)


def walk_files(
    root: Path, suffixes: tuple[str, ...], limit: int = 5000, unreadable: Unreadable | None = None
) -> Iterator[Path]:
    """Files under ``root`` with one of ``suffixes``, skipping vendored and build output.

    ``os.scandir`` keeps the file type from the directory listing, so a
    20,000-file tree costs one listing per directory, not a stat per file.
    A directory that cannot be listed is skipped and noted in ``unreadable``.
    """
    seen = 0
    stack = [str(root)]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            if unreadable is not None:
                unreadable.add(root, current)
            continue
        for entry in entries:
            try:
                if entry.is_symlink():
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if entry.name in SKIP_DIRS or entry.name.startswith("."):
                    continue
                if not _openable(entry.path):
                    if unreadable is not None:
                        unreadable.add(root, entry.path)
                    continue
                if not is_nested_project(Path(entry.path)):
                    stack.append(entry.path)
            elif entry.name.endswith(suffixes):
                seen += 1
                if seen > limit:
                    return
                yield Path(entry.path)


PROJECT_MARKERS = (".git", "package.json", "pyproject.toml", "Cargo.toml", "setup.py")


def exists(path: Path) -> bool:
    """``Path.exists()`` that answers False where a permission error would raise."""
    try:
        return path.exists()
    except OSError:
        return False


def is_nested_project(directory: Path) -> bool:
    """A subdirectory that is its own project (own manifest or checkout) is not ours to scan."""
    return any(exists(directory / marker) for marker in PROJECT_MARKERS)


def head(path: Path, limit: int = 65536) -> str:
    """The start of a source file, enough to see its imports."""
    try:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            return fh.read(limit)
    except OSError:
        return ""
