"""A claim whose own tests passed in a run that failed elsewhere is blocked, not failed.

One real pytest run: ``test_fee_minimum`` (citing ``fees``) fails, the four tests
citing ``transfer`` pass. ``fees`` is failed and names its test with the
one-line assertion; ``transfer`` is blocked and says its tests passed and which
test (of which claim) failed the run — in the board, ``prove --json``, ``gate
--json`` and the report. The change is as not-proven as before (a blocked claim
is not proven), and exits 1. When the failing test is fixed, both are proven.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from prove_helpers import git, make_change, make_repo

from changeloop.cli.main import main

CHANGE = "add-payments"
TESTS = """\
import pytest


@pytest.mark.claim("fees")
def test_fee_minimum():
    fee = 0
    assert fee >= 1, "a fee is at least 1"


@pytest.mark.claim("transfer")
def test_transfer_moves_money():
    assert 2 + 2 == 4


@pytest.mark.claim("transfer")
def test_transfer_keeps_the_total():
    assert 5 - 2 == 3


@pytest.mark.claim("transfer")
def test_transfer_refuses_negative():
    assert -1 < 0


@pytest.mark.claim("transfer")
def test_transfer_records_history():
    assert [1] == [1]
"""
EVIDENCE = """\
version: 3
claims:
  fees:
    statement: A fee is never below the minimum.
    requires: [test]
  transfer:
    statement: A transfer moves money between accounts.
    requires: [test]
"""
EXECUTION = f"""\
version: 1
providers:
  test:
    adapter: test-discovery
    command: ["{sys.executable}", -m, pytest, -q, -p, no:cacheprovider, --junitxml=.changeloop/reports/test.xml]
    report: .changeloop/reports/test.xml
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = make_repo(
        tmp_path / "ws", {"tests/test_payments.py": TESTS, ".gitignore": "__pycache__/\n"}
    )
    make_change(root, CHANGE, EVIDENCE, EXECUTION)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "payments")
    return root


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_blocked_and_failed_are_told_apart_everywhere(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    at = ["--root", str(workspace)]
    code, _, board = _run(capsys, "prove", CHANGE, *at)
    assert code == 1
    assert "change add-payments: NOT PROVEN" in board
    fees = re.search(r"^  fees ✗ failed: (.*)$", board, re.M)
    transfer = re.search(r"^  transfer ⊘ blocked: (.*)$", board, re.M)
    assert fees and transfer, board
    assert fees.group(1).startswith("test_fee_minimum — AssertionError: a fee is at least 1")
    assert transfer.group(1).startswith(
        "its 4 tests passed; the run failed on test_fee_minimum (claim fees)"
    )
    # the failing test, named as pytest's short summary does, under its provider
    assert re.search(
        r"^        FAILED tests\.test_payments::test_fee_minimum - AssertionError: a fee is at "
        r"least 1$",
        board,
        re.M,
    ), board
    assert "null" not in board and "None" not in board

    code, out, _ = _run(capsys, "prove", CHANGE, *at, "--json")
    doc = json.loads(out)
    assert code == 1 and doc["status"] == "not-proven"
    assert doc["claims"]["fees"]["status"] == "failed"
    assert doc["claims"]["transfer"]["status"] == "blocked"
    assert "its 4 tests passed" in doc["claims"]["transfer"]["reasons"][0]

    code, out, _ = _run(capsys, "gate", CHANGE, *at, "--json")
    gate = json.loads(out)
    assert code == 1 and gate["status"] == "not-proven"
    assert gate["claims"]["fees"]["status"] == "failed"
    assert gate["claims"]["transfer"]["status"] == "blocked"
    (reason,) = gate["claims"]["transfer"]["reasons"]
    assert reason["code"] == "failed"  # the receipt that weighs is a failed one
    assert "the run failed on test_fee_minimum (claim fees)" in reason["message"]

    code, out, _ = _run(capsys, "report", CHANGE, *at, "--json")
    page = (workspace / json.loads(out)["path"]).read_text()
    cells = dict(re.findall(r'<tr data-claim="([^"]+)">.*?data-status="([^"]+)"', page, re.S))
    assert cells == {"fees": "failed", "transfer": "blocked"}
    assert "⊘</span> blocked" in page and "its 4 tests passed" in page


def test_fixing_the_failing_test_proves_both(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    at = ["--root", str(workspace)]
    assert main(["prove", CHANGE, *at]) == 1
    tests = workspace / "tests" / "test_payments.py"
    tests.write_text(tests.read_text().replace("fee = 0", "fee = 1"))
    code, out, _ = _run(capsys, "prove", CHANGE, *at, "--json")
    doc = json.loads(out)
    assert code == 0
    assert {c["status"] for c in doc["claims"].values()} == {"proven"}


def test_a_claim_whose_own_test_failed_is_failed_not_blocked(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rule is about the claim's own tests: one of them failing makes it failed."""
    tests = workspace / "tests" / "test_payments.py"
    tests.write_text(tests.read_text().replace("assert [1] == [1]", "assert [1] == [2]"))
    code, out, _ = _run(capsys, "prove", CHANGE, "--root", str(workspace), "--json")
    doc = json.loads(out)
    assert code == 1
    assert doc["claims"]["transfer"]["status"] == "failed"
    assert "test_transfer_records_history" in doc["claims"]["transfer"]["reasons"][0]
