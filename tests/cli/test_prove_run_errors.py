"""prove: errors at run time keep the --json shape and say why a provider has no receipt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prove_helpers import git, make_change, make_repo, prove_json

EVIDENCE = """\
    version: 3
    requires: [check]
    claims:
      x:
        statement: the check passes
        requires: [check]
"""

EXECUTION = """\
    version: 1
    providers:
      check:
        adapter: command
        command: [sh, -c, "echo ok"]
        claims: [x]
      after:
        adapter: command
        command: [sh, -c, "echo after"]
        dependsOn: [check]
"""


def _workspace(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    make_change(root, "c1", EVIDENCE, EXECUTION)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    return root


def test_unidentifiable_content_is_one_prove_shaped_error(tmp_path: Path, capsys: Any) -> None:
    root = _workspace(tmp_path)
    # An untracked nested repository without a commit: `git add -A` refuses it,
    # so the content identity cannot be computed.
    nested = root / "sub"
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "x").write_text("x\n")
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 2  # a git refusal at identity time refuses the run (docs/design.md)
    assert doc["errors"][0]["code"] == "git_failed"
    assert "sub" in doc["errors"][0]["message"]  # git's own words name the cause
    for key in ("version", "status", "claims", "providers"):
        assert key in doc, key
    assert doc["status"] == "not-proven"
    assert doc["root"] == str(root)
    assert doc["change"] == "c1"


def test_a_state_path_that_is_not_a_directory_is_refused_naming_it(
    tmp_path: Path, capsys: Any
) -> None:
    # Was a run-time "could not run" (exit 1); docs/processes.md "Faults" makes a
    # state path that is not a directory a refusal before anything runs (exit 2).
    root = _workspace(tmp_path)
    state = root / ".changeloop"
    state.mkdir()
    (state / "sandboxes").write_text("not a directory\n")  # the sandbox cannot be made
    code, doc = prove_json(root, "c1", "--sandbox", "copy", capsys=capsys)
    assert code == 2
    assert doc["errors"][0]["path"] == str(state / "sandboxes")
    assert "not a directory" in doc["errors"][0]["message"]
    assert not (state / "runs").exists()  # nothing ran
