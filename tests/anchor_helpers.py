"""A base branch and a pull request against it, for the trust-anchor tests (tests/trust/).

``base_and_pull_request`` builds, with real git and the real CLI, the repository a merge
check sees: ``main`` holds a change whose ``external`` provider trusts CI's key
(``ci.pub``, made by ``changeloop keygen``); a branch ``pr`` breaks the code, swaps
``ci.pub`` for its author's key and commits a sign-off signed with that key, imported
with ``receipt import``. The merge check runs in a fresh clone of it.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from repo_helpers import git, make_repo

from changeloop.cli.main import main

CHANGE = "c1"
GOOD = "def add(a, b):\n    return a + b\n"
BROKEN = "def add(a, b):\n    return a - b\n"
EVIDENCE = """\
version: 3
claims:
  greeting: {statement: add adds, requires: [ci-test]}
"""


def execution(max_age: str | None = None) -> str:
    """The change's wiring: a local test, and CI's receipts trusted through ci.pub."""
    script = "import app; assert app.add(2, 2) == 4"
    age = f"    maxAge: {max_age}\n" if max_age else ""
    return (
        "version: 1\nproviders:\n"
        f"  test:\n    adapter: command\n    command: [{json.dumps(sys.executable)}, -c,"
        f" {json.dumps(script)}]\n    claims: [greeting]\n"
        "  ci-test:\n    adapter: external\n    capability: ci-test\n    claims: [greeting]\n"
        "    accepts: [test]\n    ci: {issuer: github-actions, publicKeyFile: ci.pub}\n" + age
    )


@dataclass(frozen=True)
class Keys:
    key: Path
    pub: Path


@dataclass(frozen=True)
class Scenario:
    origin: Path  # the repository with branches main and pr
    clone: Path  # a fresh clone, pr checked out: where the merge check runs
    ci: Keys
    author: Keys
    main_commit: str

    @property
    def change_dir(self) -> Path:
        return self.clone / "openspec" / "changes" / CHANGE


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    """One verb through ``main`` with ``--json``: (exit code, the document, stderr)."""
    capsys.readouterr()
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def keygen(where: Path, capsys: pytest.CaptureFixture[str]) -> Keys:
    code, doc, err = cli(capsys, "keygen", "--out", str(where))
    assert code == 0, (doc, err)
    return Keys(where / "changeloop.key", where / "changeloop.pub")


def sign_off(
    root: Path, key: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> Path:
    """CI's (or anyone's) sign-off for capability ci-test, crediting greeting."""
    argv = ["receipt", "sign", "--root", str(root), "--change", CHANGE, "--claims", "greeting"]
    argv += ["--capability", "ci-test", "--key", str(key), "--issuer", "github-actions"]
    code, doc, err = cli(capsys, *argv, "--out", str(out), *extra)
    assert code == 0, (doc, err)
    return out


def import_receipts(root: Path, capsys: pytest.CaptureFixture[str], *files: Path) -> None:
    argv = ["receipt", "import", *map(str, files), "--change", CHANGE, "--root", str(root)]
    code, doc, err = cli(capsys, *argv)
    assert code == 0, (doc, err)


def base_and_pull_request(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    hostile: bool = True,
    main_wiring: str | None = None,
    pr_wiring: str | None = None,
) -> Scenario:
    """``main`` trusting CI's key, and a pull request ``pr`` against it, cloned fresh.

    ``hostile``: the pull request breaks ``add``, replaces ``ci.pub`` with its author's
    public key and commits a sign-off signed with the author's key. Otherwise it is an
    honest one: a harmless edit, and a sign-off CI signed with its own key.
    ``main_wiring`` / ``pr_wiring``: the change's execution.yaml on each branch.
    """
    ci = keygen(tmp_path / "ci-keys", capsys)
    author = keygen(tmp_path / "author-keys", capsys)
    origin = make_repo(tmp_path / "origin", {"app.py": GOOD, ".gitignore": ".changeloop/\n"})
    change = origin / "openspec" / "changes" / CHANGE
    change.mkdir(parents=True)
    (origin / "openspec" / "specs").mkdir()
    (origin / "openspec" / "specs" / ".keep").write_text("")
    (change / "evidence.yaml").write_text(EVIDENCE)
    (change / "execution.yaml").write_text(main_wiring or execution())
    shutil.copy(ci.pub, change / "ci.pub")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "the change, trusting CI's key")
    main_commit = git(origin, "rev-parse", "HEAD")
    git(origin, "checkout", "-qb", "pr")
    if hostile:
        (origin / "app.py").write_text(BROKEN)
        shutil.copy(author.pub, change / "ci.pub")
        signer = author.key
    else:
        (origin / "app.py").write_text(GOOD + "\n# a comment\n")
        signer = ci.key
    if pr_wiring is not None:
        (change / "execution.yaml").write_text(pr_wiring)
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "the pull request's code")
    signed = sign_off(origin, signer, tmp_path / "sign-off.json", capsys)
    import_receipts(origin, capsys, signed)
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "the pull request's receipts")
    git(origin, "checkout", "-q", "main")
    shutil.rmtree(origin / ".changeloop", ignore_errors=True)  # nothing local travels
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "checkout", "-q", "pr")
    return Scenario(origin, clone, ci, author, main_commit)
