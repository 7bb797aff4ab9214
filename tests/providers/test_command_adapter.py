"""The command adapter through prove: plain commands and the runner envelope's five outcomes."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest
from prove_helpers import make_change, make_repo, prove_json, receipts_of

PY = sys.executable


def _prove_envelope(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    stdout: str,
    exit_code: int,
    envelope: bool = True,
) -> dict[str, object]:
    script = tmp_path / "runner.py"
    script.write_text(f"import sys\nsys.stdout.write({stdout!r})\nsys.exit({exit_code})\n")
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [lint]\n",
        f"""
        version: 1
        providers:
          lint:
            adapter: command
            envelope: {str(envelope).lower()}
            command: ["{PY}", "{script}"]
        """,
    )
    _, doc = prove_json(root, "c1", capsys=capsys)
    receipt = receipts_of(doc, "lint")["lint"]
    envelope_path = root / str(receipt["path"])
    payload = json.loads(envelope_path.read_text())
    statement = json.loads(base64.b64decode(payload["payload"]))
    receipt["extension"] = statement["predicate"]["changeloop"]
    return receipt


OK = json.dumps({"exit_code": 0, "passed": True, "findings": []})
FINDING = json.dumps(
    {
        "exit_code": 0,
        "passed": True,
        "findings": [
            {
                "kind": "broken-link",
                "message": "docs/a.md → missing.md",
                "file": "docs/a.md",
                "line": 3,
            }
        ],
    }
)
SAYS_FAILED = json.dumps({"exit_code": 1, "passed": False, "findings": []})


@pytest.mark.parametrize(
    ("stdout", "exit_code", "status", "reason_words"),
    [
        # 1. empty findings + exit 0 ⇒ pass
        (OK, 0, "pass", None),
        # 2. envelope failure (findings) overrides process success
        (FINDING, 0, "fail", "1 finding"),
        # 3. envelope failure (passed: false) overrides process success
        (SAYS_FAILED, 0, "fail", "passed: false"),
        # 4. process failure overrides envelope success
        (OK, 2, "fail", "exited 2"),
        # 5. non-zero exit without a valid envelope ⇒ fail with the raw tails
        ("Traceback: it broke\n", 1, "fail", "without a valid runner envelope"),
    ],
)
def test_envelope_outcomes(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    stdout: str,
    exit_code: int,
    status: str,
    reason_words: str | None,
) -> None:
    receipt = _prove_envelope(tmp_path, capsys, stdout, exit_code)
    assert receipt["status"] == status
    if reason_words is None:
        assert receipt["reason"] is None
    else:
        assert reason_words in str(receipt["reason"])
    extension = receipt["extension"]
    assert isinstance(extension, dict)
    assert extension["exitCode"] == exit_code


def test_envelope_findings_are_carried_into_the_receipt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    receipt = _prove_envelope(tmp_path, capsys, FINDING, 0)
    extension = receipt["extension"]
    assert isinstance(extension, dict)
    assert extension["findings"] == [
        {"kind": "broken-link", "message": "docs/a.md → missing.md", "file": "docs/a.md", "line": 3}
    ]


def test_exit_0_with_garbage_instead_of_an_envelope_is_inconclusive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    receipt = _prove_envelope(tmp_path, capsys, '{"passed": true}', 0)
    assert receipt["status"] == "inconclusive"
    assert "exit_code" in str(receipt["reason"])


def test_plain_command_tail_names_the_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    receipt = _prove_envelope(tmp_path, capsys, "lint: 3 problems\n", 1, envelope=False)
    assert receipt["status"] == "fail"
    assert "exited 1: lint: 3 problems" in str(receipt["reason"])
    extension = receipt["extension"]
    assert isinstance(extension, dict)
    assert "lint: 3 problems" in extension["log"]["tail"]


def test_timeout_is_a_fail_with_a_timeout_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [slow]\n",
        f"""
        version: 1
        providers:
          slow: {{adapter: command, timeoutMs: 300, command: ["{PY}", -c, "import time; time.sleep(30)"]}}
        """,
    )
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 1
    receipt = receipts_of(doc, "slow")["slow"]
    assert receipt["status"] == "fail"
    assert "timed out" in receipt["reason"]


def test_setup_failure_gets_its_own_receipt_and_blocks_the_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [test]\n",
        f"""
        version: 1
        repositories:
          self:
            setup: [["{PY}", -c, "raise SystemExit(7)"]]
        providers:
          test: {{adapter: command, command: ["{PY}", -c, "pass"]}}
        """,
    )
    code, doc = prove_json(root, "c1", "--sandbox", "copy", capsys=capsys)
    assert code == 1
    setup = receipts_of(doc, "setup-self")["setup"]
    assert setup["status"] == "fail" and "exited 7" in setup["reason"]
    test = receipts_of(doc, "test")["test"]
    assert test["status"] == "inconclusive" and "setup" in test["reason"]
