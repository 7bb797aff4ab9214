"""``reached_outside_entry`` end to end on examples/python-grounding: a citing test that also
runs production code no entry point reached is named on the board, in the receipt and on
the report page; a test that stays behind the entry points is not."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git

from changeloop.cli.main import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python-grounding"

EXECUTION = """\
version: 1
repositories:
  self:
    entryPoints: ["shop/api.py::create_*"]
providers:
  test:
    adapter: test-discovery
    command: [python3, -m, pytest, -q, --junitxml=.changeloop/reports/test.xml]
    report: .changeloop/reports/test.xml
    timeoutMs: 120000
"""

DIRECT = """\
import pytest
from shop import pricing
from shop.api import create_order


@pytest.mark.claim("order-total", depth="unit")
def test_total_also_called_directly():
    assert create_order([("fig", 1, 700)])["total"] == pricing.total([("fig", 1, 700)])
"""


def _citations(root: Path) -> dict[str, Any]:
    envelope = json.loads((root / ".changeloop/receipts/add-orders/test.test.json").read_text())
    predicate = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    citations: dict[str, Any] = predicate["changeloop"]["citations"]
    return citations


def test_board_receipt_and_report_name_a_test_that_reached_outside_entry_points(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "shop"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".changeloop", "__pycache__"))
    (root / "openspec/changes/add-orders/execution.yaml").write_text(EXECUTION)
    (root / "tests/test_direct.py").write_text(DIRECT)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init")
    capsys.readouterr()
    main(["prove", "add-orders", "--root", str(root)])
    board = capsys.readouterr().err
    outside = {
        c["test"].rsplit("::")[-1]: c.get("reached_outside_entry", "omitted")
        for c in _citations(root)["order-total"]
    }
    assert outside == {
        "test_total_with_discount": False,
        "test_total_without_discount": False,
        "test_empty_order_is_refused": False,
        "test_total_also_called_directly": True,
    }, outside
    assert "test_total_also_called_directly also ran production code no entry point reached" in (
        board
    ), board
    assert "test_total_with_discount also ran" not in board
    # the direct call does not make the claim less proven: it is said, not judged
    assert main(["report", "add-orders", "--root", str(root), "--out", str(tmp_path)]) == 0
    page = (tmp_path / "add-orders.html").read_text(encoding="utf-8")
    assert "1 reached outside entry points" in page
