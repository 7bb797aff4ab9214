"""The mutation adapter's own copy sandbox: mutants are written there, never in the user's tree.

Example::

    copy = make_copy(workdir, run_dir / "sandbox")   # tracked + untracked-not-ignored files
    with mutated(copy / "pkg/api.py", mutant_source):
        ...                                          # the original bytes are back afterwards
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

_SKIP = frozenset({".git", ".changeloop", "__pycache__", ".venv", "node_modules"})


def _listed(workdir: Path) -> list[str] | None:
    """Files git would call content (tracked + untracked-not-ignored), or None without git."""
    try:
        proc = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=workdir,
            capture_output=True,
            check=False,
            timeout=120,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return [p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


def make_copy(workdir: Path, target: Path) -> Path:
    """A private copy of ``workdir``'s content under ``target`` (replaced if present)."""
    if target.exists():
        shutil.rmtree(target)
    files = _listed(workdir)
    if files is None:
        shutil.copytree(workdir, target, symlinks=True, ignore=shutil.ignore_patterns(*_SKIP))
        return target
    target.mkdir(parents=True)
    for rel in files:
        if set(Path(rel).parts) & {".changeloop", "__pycache__"}:
            continue
        source = workdir / rel
        dest = target / rel
        if not (source.is_file() or source.is_symlink()):
            continue  # deleted in the working tree, or a submodule
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest, follow_symlinks=False)
    return target


@contextlib.contextmanager
def mutated(path: Path, source: str) -> Iterator[None]:
    """Write ``source`` to ``path`` for the duration, then restore the original bytes."""
    original = path.read_bytes()
    try:
        path.write_text(source, encoding="utf-8")
        yield
    finally:
        path.write_bytes(original)
