"""A read-only file system and a full disk are named as such, with the path: real tmpfs mounts.

The workspace lives on a small tmpfs of its own. Remounted read-only, or
filled to the last byte, ``prove`` answers cleanly (no traceback, never exit 3)
naming the path and the real cause — never "permission denied" and a fix about
permissions, which is what it said before.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import make_change, make_repo
from repo_helpers import commit_all
from repo_paths import REPO_ROOT

EVIDENCE = """\
version: 3
claims:
  greeting:
    statement: says hello
    requires: [check]
"""
EXECUTION = """\
version: 1
providers:
  test:
    adapter: command
    capability: check
    claims: [greeting]
    command: [sh, -c, "exit 0"]
"""


def _mount(path: Path, *options: str) -> bool:
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", ",".join(("size=4m", *options)), "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs mounted for the test (skipped where mounting is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None or not _mount(mount):
        pytest.skip("a tmpfs cannot be mounted here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _remount(mount: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(mount)], check=True)


def _workspace(mount: Path) -> Path:
    root = make_repo(mount / "ws")
    make_change(root, "c1", EVIDENCE, EXECUTION)
    commit_all(root, "change")
    return root


def _prove(root: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "changeloop", "prove", "c1", "--root", str(root), "--json", *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode != 3 and "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def _no_permission_talk(doc: dict[str, Any], err: str) -> None:
    text = json.dumps(doc).lower() + err.lower()
    assert "permission" not in text, text


@pytest.mark.parametrize("state", ["made", "absent"])
def test_a_read_only_file_system_is_named_not_a_permission(disk: Path, state: str) -> None:
    root = _workspace(disk)
    if state == "made":
        code, _doc, err = _prove(root)
        assert code == 0, err
    _remount(disk, "ro")
    try:
        code, doc, err = _prove(root, "--no-cache")
    finally:
        _remount(disk, "rw")
    assert code == 2, (doc, err)
    (error,) = doc["errors"]
    assert error["path"] == str(root / ".changeloop")
    assert "read-only file system" in error["message"]
    assert "mounted read-only" in error["fix"]
    _no_permission_talk(doc, err)


def test_a_full_disk_is_named_not_a_permission(disk: Path) -> None:
    root = _workspace(disk)
    code, _doc, err = _prove(root)
    assert code == 0, err
    with (disk / "filler").open("wb") as fh:  # every byte the tmpfs has left
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    code, doc, err = _prove(root, "--no-cache")
    assert code == 1, (doc, err)
    assert doc["status"] == "not-proven"
    text = json.dumps(doc)
    assert "no space left on device" in text
    assert "free space on the file system" in text  # the fix for a full disk, not for access
    assert str(root / ".changeloop") in text  # the path it could not write
    _no_permission_talk(doc, err)
