"""Filesystem errors as a user who cannot write are clean answers naming the path, never exit 3.

docs/processes.md "Faults": exit 2 before anything runs (the state
cannot be made), exit 1 at run time (a receipt cannot be written), the path
named either way. The suite runs as root, which writes everywhere, so
changeloop runs here as ``nobody`` (``setpriv``). pyenv's interpreter lives
under ``/root`` (0700), so the run uses the system ``python3.11`` with copies of
changeloop's dependencies in a directory ``nobody`` can read.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nobody_helpers import NOBODY, RUN_CLI, SYSTEM_PYTHON, needs_nobody, readable_site

ROOT = Path(__file__).resolve().parents[2]
pytestmark = needs_nobody


@pytest.fixture(scope="module")
def nobody_site() -> Iterator[Path]:
    """The third-party packages ``prove`` imports, copied where ``nobody`` can read them."""
    base = readable_site(
        (
            "changeloop.cli.main",
            "changeloop.cli.prove.command",
            "changeloop.run.engine",
            "changeloop.plan",
            "changeloop.config.schema",
            "jsonschema",
            "rich",
        )
    )
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def workspace() -> Iterator[Path]:
    """A committed git workspace owned by ``nobody`` (so git trusts it when nobody runs it)."""
    base = Path(tempfile.mkdtemp(prefix="changeloop-nobody-ws-", dir="/tmp"))
    os.chmod(base, 0o755)
    root = base / "ws"
    files = {
        "src/app.py": "print('hi')\n",
        "openspec/specs/.keep": "",
        "openspec/changes/c1/evidence.yaml": "version: 3\nrequires: [test]\n",
        "openspec/changes/c1/execution.yaml": textwrap.dedent("""\
            version: 1
            providers:
              test: {adapter: command, command: [sh, -c, "exit 0"]}
        """),
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(root)], check=True)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "init"]):
        _as_nobody_raw(["git", *args], root)
    yield root
    shutil.rmtree(base, ignore_errors=True)


def _env(root: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(root.parent),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        # A checkout whose root another user owns is "dubious" to git; trust it here so
        # the test reaches changeloop's own state handling.
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "safe.directory",
        "GIT_CONFIG_VALUE_0": "*",
    }


def _as_nobody_raw(argv: list[str], root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv],
        cwd=root,
        env={**_env(root), **env},
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )


def _prove(site: Path, root: Path) -> tuple[int, dict[str, Any], str]:
    done = subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            str(SYSTEM_PYTHON),
            "-c",
            RUN_CLI,
            "prove",
            "c1",
            "--root",
            str(root),
            "--json",
        ],
        cwd=root,
        env={**_env(root), "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode != 3, done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def _root_owned(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, 0, 0)
    os.chmod(path, 0o755)


def test_the_setup_proves_as_nobody(nobody_site: Path, workspace: Path) -> None:
    """The control: the same workspace, nothing made unwritable, proves."""
    code, doc, err = _prove(nobody_site, workspace)
    assert code == 0, (doc, err)


def test_a_workspace_nobody_can_write_is_refused_naming_the_state(
    nobody_site: Path, workspace: Path
) -> None:
    os.chown(workspace, 0, 0)  # the checkout's root: root-owned, 0755
    os.chmod(workspace, 0o755)
    code, doc, err = _prove(nobody_site, workspace)
    assert code == 2, (doc, err)
    (error,) = doc["errors"]
    assert error["path"] == str(workspace / ".changeloop")
    assert "Permission denied" in error["message"] and error["fix"]
    assert str(workspace / ".changeloop") in err


def test_an_unwritable_runs_directory_is_refused_before_anything_runs(
    nobody_site: Path, workspace: Path
) -> None:
    _prove(nobody_site, workspace)  # makes .changeloop/ as nobody
    runs = workspace / ".changeloop" / "runs"
    shutil.rmtree(runs)
    _root_owned(runs)
    code, doc, err = _prove(nobody_site, workspace)
    assert code == 2, (doc, err)
    assert str(runs) in doc["errors"][0]["message"]


def test_a_receipt_that_cannot_be_written_at_run_time_is_exit_1_naming_it(
    nobody_site: Path, workspace: Path
) -> None:
    latest = workspace / ".changeloop" / "receipts" / "c1"
    code, _doc, _err = _prove(nobody_site, workspace)
    assert code == 0
    shutil.rmtree(latest)
    _root_owned(latest)
    code, doc, err = _prove(nobody_site, workspace)
    assert code == 1, (doc, err)
    assert doc["status"] == "not-proven"
    text = json.dumps(doc)
    assert str(latest / "test.test.json") in text and "Permission denied" in text


@pytest.mark.parametrize("sub", ["sandboxes", "cache", "keys", "receipts"])
def test_a_state_directory_nobody_can_open_is_refused_naming_it(
    nobody_site: Path, workspace: Path, sub: str
) -> None:
    """A root-owned 0700 directory in the state (the sandbox sweep listed it and crashed)."""
    code, _doc, _err = _prove(nobody_site, workspace)
    assert code == 0
    locked = workspace / ".changeloop" / sub
    locked.mkdir(exist_ok=True)
    os.chown(locked, 0, 0)
    os.chmod(locked, 0o700)
    code, doc, err = _prove(nobody_site, workspace)
    assert code == 2, (doc, err)
    assert doc["errors"][0]["path"] == str(locked)
