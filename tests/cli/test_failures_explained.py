"""Failures explained where the user is: the board and its next steps, through the real CLI.

- a failing run names its failing tests (with the one-line assertion) and its next
  steps rerun just those — the printed command, run as printed, runs one test;
- a provider that died before reporting shows the last line that says why
  (``No module named …``), never ``null``;
- doctor is suggested only when it has something to say;
- ``--root`` is carried into every suggested command, paths are shown from the
  current directory;
- after ``prove --sign-key K`` the next steps name ``--public-key K.pub``, and a gate
  that cannot verify says which key to pass (not "prove again"), in plain words.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from prove_helpers import git, make_change, make_repo

from changeloop.cli.main import main

PY = sys.executable
TESTS = """\
import pytest


@pytest.mark.claim("fees")
def test_fee_minimum():
    assert 0 >= 1, "a fee is at least 1"


@pytest.mark.claim("fees")
def test_fee_rounds():
    assert round(2.4) == 3
"""
EVIDENCE = "version: 3\nclaims:\n  fees:\n    statement: fees\n    requires: [test]\n"


def _execution(python: str) -> str:
    return (
        "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n"
        f'    command: ["{python}", -m, pytest, -p, no:cacheprovider, '
        "--junitxml=.changeloop/reports/test.xml]\n"
        "    report: .changeloop/reports/test.xml\n"
    )


def _workspace(path: Path, python: str = PY) -> Path:
    root = make_repo(path, {"tests/test_fees.py": TESTS, ".gitignore": "__pycache__/\n"})
    make_change(root, "c", EVIDENCE, _execution(python))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "fees")
    return root


def _steps(err: str) -> list[str]:
    block = err.rsplit("Next steps:\n", 1)[1]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_failing_run_names_its_tests_and_reruns_just_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _workspace(tmp_path / "ws")
    monkeypatch.chdir(tmp_path)  # the user stands above the workspace
    code, _, err = _run(capsys, "prove", "c", "--root", "ws")
    assert code == 1
    assert "FAILED tests.test_fees::test_fee_minimum - AssertionError: a fee is at least 1" in err
    assert "FAILED tests.test_fees::test_fee_rounds" in err
    assert "fees ✗ failed: test_fee_minimum — AssertionError: a fee is at least 1" in err
    assert "null" not in err
    steps = _steps(err)
    rerun, log, prove = steps  # nothing for doctor to fix here: it is not named
    assert rerun == (
        f"cd ws && {PY} -m pytest tests/test_fees.py::test_fee_minimum "
        "tests/test_fees.py::test_fee_rounds"
    )
    assert re.fullmatch(r"less ws/\.changeloop/runs/[^/]+/test/test\.log", log), log
    assert (tmp_path / log.split()[1]).is_file()  # a path from here
    assert prove == "changeloop prove c --root ws"  # --root carried as typed
    assert re.search(r"^      log: ws/\.changeloop/runs/", err, re.M)
    assert re.search(r"^receipts: ws/\.changeloop/runs/", err, re.M)
    # The rerun, pasted as printed, runs exactly the failing tests.
    done = subprocess.run(
        ["bash", "-c", rerun], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1 and "2 failed" in done.stdout and "passed" not in done.stdout
    assert root.is_dir()


def test_a_provider_that_died_before_reporting_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An interpreter without pytest: the board shows its own last line, not `(tests: null)`."""
    bare = tmp_path / "bare"
    subprocess.run(
        [getattr(sys, "_base_executable", PY), "-m", "venv", "--without-pip", str(bare)], check=True
    )
    root = _workspace(tmp_path / "ws", python=str(bare / "bin" / "python"))
    code, _, err = _run(capsys, "prove", "c", "--root", str(root))
    assert code == 1
    line = next(ln for ln in err.splitlines() if "✗ test fail" in ln)
    assert "No module named pytest" in line, err
    assert "null" not in err and "None" not in err
    assert "less " in err  # its log, to read the rest


def test_doctor_is_named_only_when_it_has_something_to_say(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path / "ws")
    tests = root / "tests" / "test_fees.py"
    tests.write_text(tests.read_text().replace("0 >= 1", "1 >= 1").replace("== 3", "== 2"))
    evidence = root / "openspec" / "changes" / "c" / "evidence.yaml"
    evidence.write_text(EVIDENCE + "  refunds:\n    statement: refunds\n    requires: [test]\n")
    code, _, err = _run(capsys, "prove", "c", "--root", str(root))
    assert code == 1
    doctor = f"changeloop evidence doctor c --root {root}"
    assert doctor in _steps(err)  # no test cites refunds: doctor says so
    assert "refunds ? inconclusive" in err and '@pytest.mark.claim("refunds")' in err
    code, _, err = _run(capsys, "evidence", "doctor", "c", "--root", str(root))
    assert code == 1 and "[claim-not-cited] no test cites claim refunds" in err


def test_after_sign_key_the_next_steps_name_its_public_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path / "ws")
    tests = root / "tests" / "test_fees.py"
    tests.write_text(tests.read_text().replace("0 >= 1", "1 >= 1").replace("== 3", "== 2"))
    assert main(["keygen", "--out", str(tmp_path / "keys")]) == 0
    key, pub = tmp_path / "keys" / "changeloop.key", tmp_path / "keys" / "changeloop.pub"
    at = ["--root", str(root)]
    code, _, err = _run(capsys, "prove", "c", *at, "--sign-key", str(key))
    assert code == 0, err
    assert _steps(err) == [
        f"changeloop gate c --public-key {pub} --root {root}",
        f"changeloop report c --public-key {pub} --root {root}",
    ]
    # Without it, gate says which key to pass, in plain words, and suggests passing it.
    code, out, err = _run(capsys, "gate", "c", *at, "--json")
    assert code == 1
    reasons = [r for c in json.loads(out)["claims"].values() for r in c["reasons"]]
    assert reasons and all(r["code"] == "unverified" for r in reasons)
    assert all(
        "--public-key" in r["message"] and "prove again" not in r["message"] for r in reasons
    )
    assert _steps(err)[0] == f"changeloop gate c --public-key KEY.pub --root {root}"
    # This workspace never made its own key (prove signed with K): the wording says so.
    messages = [r["message"] for r in reasons]
    assert all("there is no workspace key" in m for m in messages), messages
    assert not any("no the " in m for m in messages)
    # With a workspace key beside them, the receipts still name the key to pass.
    assert main(["prove", "c", *at, "--no-cache"]) == 0  # makes the workspace key
    assert main(["prove", "c", *at, "--sign-key", str(key), "--no-cache"]) == 0
    code, out, _ = _run(capsys, "gate", "c", *at, "--json")
    messages = [r["message"] for c in json.loads(out)["claims"].values() for r in c["reasons"]]
    assert code == 1 and messages
    assert all("which is not a trusted key" in m and "--public-key" in m for m in messages)


def test_paths_are_absolute_when_the_workspace_is_not_below_here(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _workspace(tmp_path / "ws")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, _, err = _run(capsys, "prove", "c", "--root", str(root))
    assert code == 1
    assert re.search(rf"^receipts: {re.escape(str(root))}/\.changeloop/runs/", err, re.M), err
    assert os.path.isabs(_steps(err)[1].split()[1])  # the log, from anywhere
