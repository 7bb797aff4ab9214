"""A directory changeloop cannot read must not break any verb.

A root-owned ``0700`` directory anywhere in the repository (a database
volume, ignored by git) used to make every verb exit 1 with ``Permission
denied`` and an empty ``--json`` stdout: the source scan's ``Path.exists()``
raised. The tests run as root, which reads everything, so changeloop runs here
as ``nobody`` (``setpriv``) on a workspace that user owns, with one
subdirectory it cannot open. pyenv's interpreter lives under ``/root`` (0700),
so the run uses the system ``python3.11`` with copies of changeloop's
dependencies in a directory ``nobody`` can read.
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

import pytest
from nobody_helpers import NOBODY, RUN_CLI, SYSTEM_PYTHON, needs_nobody, readable_site
from repo_paths import REPO_ROOT

ROOT = REPO_ROOT
CHANGE = "add-thing"
pytestmark = needs_nobody


@pytest.fixture(scope="module")
def nobody_site() -> Iterator[Path]:
    """changeloop's dependencies copied where ``nobody`` can read them."""
    site = readable_site(
        (
            "changeloop.cli.main",
            "changeloop.cli.evidence",
            "changeloop.cli.prove.command",
            "changeloop.run.engine",
            "changeloop.detect.doctor",
            "changeloop.detect.init_writer",
            "jsonschema",
            "rich",
        )
    )
    yield site
    shutil.rmtree(site, ignore_errors=True)


@pytest.fixture
def workspace() -> Iterator[Path]:
    """A git workspace owned by nobody with a root-owned 0700 ``data/db`` (ignored)."""
    base = Path(tempfile.mkdtemp(prefix="changeloop-unreadable-", dir="/tmp"))
    root = base / "ws"
    files = {
        ".gitignore": "data/\n.changeloop/\n",
        "pyproject.toml": "[project]\nname = 'demo'\nversion = '0'\n",
        "a_tests/test_demo.py": "import pytest\n\n\ndef test_one():\n    assert True\n",
        f"openspec/changes/{CHANGE}/evidence.yaml": "version: 3\nrequires: [test]\n",
        f"openspec/changes/{CHANGE}/execution.yaml": textwrap.dedent("""\
            version: 1
            providers:
              test:
                adapter: command
                command: [sh, -c, "exit 0"]
        """),
        "openspec/specs/.keep": "",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    # Untracked and not ignored too: a scan that walks the tree meets both.
    for locked in (root / "data" / "db", root / "src" / "volume"):
        locked.mkdir(parents=True)
        (locked / "secret.py").write_text("import pytest\n", encoding="utf-8")
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(base)], check=True)
    os.chmod(base, 0o755)
    env = {**os.environ, "HOME": str(base)}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "git", *args],
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
        )
    for locked in (root / "data" / "db", root / "src" / "volume"):
        subprocess.run(["chown", "-R", "0:0", str(locked)], check=True)
        os.chmod(locked, 0o700)
    yield root
    shutil.rmtree(base, ignore_errors=True)


def _as_nobody(site: Path, root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(root.parent),
        "PYTHONPATH": str(site),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t.invalid",
        "NO_COLOR": "1",
    }
    return subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            str(SYSTEM_PYTHON),
            "-c",
            RUN_CLI,
            *argv,
            "--root",
            str(root),
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_setup_really_cannot_read_the_directory(nobody_site: Path, workspace: Path) -> None:  # noqa: ARG001 (the fixture makes the directory)
    probe = subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            "ls",
            str(workspace / "data" / "db"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode != 0 and "Permission denied" in probe.stderr


def test_detect_skips_and_says_so(nobody_site: Path, workspace: Path) -> None:
    proc = _as_nobody(nobody_site, workspace, "evidence", "detect", CHANGE, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    skipped = doc["unreadable"]["self"]
    assert sorted(skipped) == ["data/db", "src/volume"], doc
    # The scan still found the framework the readable files import.
    assert [d["adapter"] for d in doc["repositories"]["self"]] == ["pytest"], doc
    human = _as_nobody(nobody_site, workspace, "evidence", "detect", CHANGE)
    assert human.returncode == 0, human.stderr
    assert "data/db" in human.stdout + human.stderr
    assert "Permission denied" not in human.stdout + human.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ("evidence", "doctor", CHANGE, "--json"),
        ("evidence", "init", CHANGE, "--json"),
        ("prove", CHANGE, "--dry-run", "--json"),
        ("prove", CHANGE, "--json"),
        ("prove", CHANGE, "--json", "--sandbox", "copy"),
    ],
)
def test_every_verb_answers(nobody_site: Path, workspace: Path, argv: tuple[str, ...]) -> None:
    proc = _as_nobody(nobody_site, workspace, *argv)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)  # one JSON document, never an empty stdout
    assert "Permission denied" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    if argv[0] == "prove" and "--dry-run" not in argv:
        assert proc.returncode == 0, doc
