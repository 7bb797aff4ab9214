"""The content identity a run's receipts name: computed once per run, after ``.changeloop/``
is out of git's view; a checkout git cannot identify is the run's refusal."""

from __future__ import annotations

import base64
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git, make_change, make_repo, prove_json

from changeloop.git.identity import content_identity

EXECUTION = 'version: 1\nproviders:\n  a:\n    command: ["true"]\n    capability: ok\n'


def _workspace(
    tmp_path: Path, evidence: str = "version: 3\nrequires: [ok]\n", *, ignored: bool = True
) -> Path:
    files = {"a.txt": "a\n", **({".gitignore": ".changeloop/\n"} if ignored else {})}
    root = make_repo(tmp_path / "ws", files)
    make_change(root, "c", evidence, EXECUTION)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    return root


def _subject_tree(root: Path, doc: dict[str, Any]) -> str:
    [entry] = [r for p in doc["providers"] for r in p["receipts"]]
    envelope = json.loads((root / entry["path"]).read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    tree: str = statement["predicate"]["changeloop"]["repositories"]["self"]["tree"]
    assert [s["digest"]["gitTree"] for s in statement["subject"]] == [tree]
    return tree


def test_state_written_while_the_plan_loads_is_never_part_of_the_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # No .gitignore: .changeloop/ (the validation memo is written while the plan loads)
    # must be out of git's view before git is asked for the identity, not just by chance.
    root = _workspace(tmp_path, ignored=False)
    ignored_when_asked: list[bool] = []

    def watched(path: Path, **kwargs: Any) -> Any:
        ignored_when_asked.append((root / ".changeloop" / ".gitignore").is_file())
        return content_identity(path, **kwargs)

    monkeypatch.setattr("changeloop.run.sandboxes.content_identity", watched)
    for _ in range(2):
        code, doc = prove_json(root, "c", "--no-cache", capsys=capsys)
        assert code == 0
        assert _subject_tree(root, doc) == content_identity(root, include_untracked=True).tree
    assert ignored_when_asked == [True, True]


def test_a_checkout_git_cannot_identify_is_the_run_s_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "ws"  # not a git repository
    make_change(root, "c", "version: 3\nrequires: [ok]\n", EXECUTION)
    code, doc = prove_json(root, "c", capsys=capsys)
    assert code == 2
    assert [e["code"] for e in doc["errors"]] == ["not_a_git_worktree"]


def _logged_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``git`` first on PATH that appends its arguments to a log, then runs the real one."""
    real = shutil.which("git")
    assert real is not None
    bin_dir, log = tmp_path / "bin", tmp_path / "git.log"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return log


@pytest.mark.parametrize("named", [False, True], ids=["default-repository", "named"])
def test_in_place_the_checkout_is_identified_once_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], named: bool
) -> None:
    """``--sandbox none`` runs in the checkout the run has identified already: making that
    sandbox must not ask git for the same identity again (counted as real ``write-tree``
    runs, whichever module asks), and the receipt names that identity."""
    evidence = "version: 3\nrequires: [ok]\n"
    if named:  # the workspace named as a repository of the change
        evidence = "version: 3\nrepositories: {self: .}\nrequires: [ok]\n"
    root = _workspace(tmp_path, evidence)
    log = _logged_git(tmp_path, monkeypatch)
    code, doc = prove_json(root, "c", "--no-cache", "--sandbox", "none", capsys=capsys)
    assert code == 0
    runs = log.read_text().splitlines()
    assert len([r for r in runs if r.split()[:1] == ["write-tree"]]) == 1, runs
    assert _subject_tree(root, doc) == content_identity(root, include_untracked=True).tree


def test_a_copy_sandbox_is_still_identified_as_its_own_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the in-place sandbox is the checkout: a copy is identified as what was copied."""
    root = _workspace(tmp_path)
    (root / "untracked.txt").write_text("seen by copy\n")
    log = _logged_git(tmp_path, monkeypatch)
    code, doc = prove_json(root, "c", "--no-cache", "--sandbox", "copy", capsys=capsys)
    assert code == 0
    runs = log.read_text().splitlines()
    assert len([r for r in runs if r.split()[:1] == ["write-tree"]]) >= 2, runs
    assert _subject_tree(root, doc) == content_identity(root, include_untracked=True).tree
