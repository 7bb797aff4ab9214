"""The one helper that makes a git repository for a test (the other helpers wrap it)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

# A fixed identity and no system config: the same commits on every machine. Git's
# redirection variables (a hook's GIT_DIR) are never inherited.
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_IDENTITY)
    out = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, check=True, text=True
    )
    return out.stdout.strip()


def write_files(base: Path, files: Mapping[str, str | bytes]) -> None:
    for rel, body in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body, encoding="utf-8")


def make_repo(
    path: Path,
    files: Mapping[str, str | bytes] | None = None,
    *,
    commit: bool = True,
    message: str = "init",
) -> Path:
    """A git repository (branch ``main``) holding ``files``, committed unless ``commit`` is False."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    write_files(path, files or {})
    if commit:
        git(path, "add", "-A")
        git(path, "commit", "-q", "--allow-empty", "-m", message)
    return path


def commit_all(path: Path, message: str = "more") -> str:
    git(path, "add", "-A")
    git(path, "commit", "-q", "--allow-empty", "-m", message)
    return git(path, "rev-parse", "HEAD")


def basic_example(
    root: Path, files: Mapping[str, str] | None = None, *, remove: tuple[str, ...] = ()
) -> Path:
    """examples/basic as a committed git work tree at ``root`` (without any ``.changeloop/``
    a run there left), ``files`` written over it and ``remove`` deleted first."""
    import shutil

    from repo_paths import EXAMPLES

    shutil.copytree(EXAMPLES / "basic", root, ignore=shutil.ignore_patterns(".changeloop"))
    for rel in remove:
        (root / rel).unlink()
    return make_repo(root, files or {}, commit=True)


def keygen_key(directory: Path) -> Path:
    """A fresh Ed25519 private key written by ``changeloop keygen`` into ``directory``."""
    import contextlib
    import io

    from changeloop.cli.main import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["keygen", "--out", str(directory)]) == 0
    return directory / "changeloop.key"
