"""A cargo workspace: every test binary runs, discovery counts them all, the failure is named.

Plain `cargo test --workspace` stops at the first failing test binary: one failing
test in crate `alpha` hid every test of crate `beta`, and discovery passed on the
part that ran. Derived wiring adds `--no-fail-fast`; a configured command without
it gets an inconclusive discovery that says why.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from prove_helpers import git, make_change, make_repo, prove_json, receipts_of

from changeloop.cli.main import main

pytestmark = pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo not on PATH")


def _workspace(root: Path) -> Path:
    crate = '[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n'
    return make_repo(
        root,
        {
            "Cargo.toml": '[workspace]\nmembers = ["alpha", "beta"]\nresolver = "2"\n',
            ".gitignore": "target\n",
            "alpha/Cargo.toml": crate.format(name="alpha"),
            "alpha/src/lib.rs": "pub fn one() -> u32 { 1 }\n"
            "#[cfg(test)]\nmod tests {\n"
            "    #[test]\n    fn holds() { assert_eq!(super::one(), 1); }\n"
            "    #[test]\n    fn breaks() { assert_eq!(super::one(), 2); }\n}\n",
            "beta/Cargo.toml": crate.format(name="beta"),
            "beta/src/lib.rs": "pub fn two() -> u32 { 2 }\n",
            "beta/tests/more.rs": "#[test]\nfn a() { assert_eq!(beta::two(), 2); }\n"
            "#[test]\nfn b() {}\n#[test]\nfn c() {}\n",
        },
    )


def test_every_binary_runs_and_the_failing_test_is_named(tmp_path: Path, capsys: Any) -> None:
    root = _workspace(tmp_path / "ws")
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "change")
    capsys.readouterr()
    assert main(["evidence", "init", "c1", "--write", "--root", str(root)]) == 0
    written = yaml.safe_load((root / "openspec/changes/c1/execution.yaml").read_text())
    assert written["providers"]["test"]["command"] == [
        "cargo",
        "test",
        "--workspace",
        "--no-fail-fast",
    ]
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 1
    receipts = receipts_of(doc, "test")
    # alpha's 2 and beta's 3: beta ran although alpha failed first
    assert receipts["test"]["tests"] == {"discovered": 5, "passed": 4, "failed": 1, "skipped": 0}
    assert "1 of 5 test(s) failed: tests::breaks" in receipts["test"]["reason"]
    assert receipts["discovery"]["status"] == "pass"
    capsys.readouterr()
    main(["prove", "c1", "--root", str(root)])
    board = capsys.readouterr().err
    assert "tests::breaks" in board  # the board names the failing test
    assert "discovery pass (5 tests found, minimum 1)" in board


def test_a_configured_cargo_that_stopped_early_cannot_pass_discovery(
    tmp_path: Path, capsys: Any
) -> None:
    root = _workspace(tmp_path / "ws")
    execution = (
        "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n"
        "    command: [cargo, test, --workspace]\n"
    )
    make_change(root, "c1", "version: 3\nrequires: [test, discovery]\n", execution)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "change")
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 1
    receipts = receipts_of(doc, "test")
    assert receipts["test"]["tests"]["discovered"] == 2  # beta never ran
    assert receipts["discovery"]["status"] == "inconclusive"
    assert "--no-fail-fast" in receipts["discovery"]["reason"]
