"""What a person needs to see after prove: counts, one-line reasons, log path.

Shape of uuid's `node --test` suite (no dependencies): counts must be in `prove --json`
(each receipt entry's `tests`, docs/verbs/prove.md) and on the board; a runner that prints cursor
codes (swup's vitest did) must not reach the terminal raw.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prove_helpers import git, make_change, make_repo, prove_json, receipts_of

from changeloop.cli.main import main

TESTS = """\
const test = require("node:test");
const assert = require("node:assert");
test("[claim:adds] adds", () => assert.strictEqual(1 + 1, 2));
test("skipped one", { skip: true }, () => {});
test("third", () => assert.ok(true));
"""
EVIDENCE = """\
    version: 3
    requires: [test]
    claims:
      adds:
        statement: adding works
        requires: [test]
"""


def _node_workspace(tmp_path: Path) -> Path:
    root = make_repo(
        tmp_path / "ws",
        {
            "package.json": json.dumps({"name": "u", "scripts": {"test": "node --test t/*.js"}}),
            "t/a.test.js": TESTS,
        },
    )
    make_change(root, "c1", EVIDENCE)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    return root


def test_counts_in_prove_json_and_on_the_board(tmp_path: Path, capsys: Any) -> None:
    root = _node_workspace(tmp_path)
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0, doc
    test = receipts_of(doc, "test")
    want = {"discovered": 3, "passed": 2, "failed": 0, "skipped": 1}
    assert test["test"]["tests"] == want
    assert test["discovery"]["tests"] == want
    capsys.readouterr()
    assert main(["prove", "c1", "--root", str(root)]) == 0  # cached: counts still shown
    err = capsys.readouterr().err
    assert "test pass (3 tests: 2 passed, 1 skipped)" in err
    _code, again = prove_json(root, "c1", capsys=capsys)
    assert receipts_of(again, "test")["test"]["tests"] == want


def test_failure_reason_is_one_escaped_line_and_the_log_is_named(
    tmp_path: Path, capsys: Any
) -> None:
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [check]\n",
        "version: 1\nproviders:\n  check:\n    adapter: command\n"
        "    command: [sh, -c, \"printf 'boom\\\\033[1A\\\\033[2K' >&2; exit 1\"]\n",
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    capsys.readouterr()
    assert main(["prove", "c1", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err
    [line] = [ln for ln in err.splitlines() if "check fail" in ln]
    assert "boom\\x1b[1A\\x1b[2K" in line
    [log] = [ln.strip() for ln in err.splitlines() if ln.strip().startswith("log: ")]
    path = root / log.removeprefix("log: ")
    assert path.is_file() and "boom" in path.read_text(errors="replace")
