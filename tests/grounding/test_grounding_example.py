"""examples/python-grounding end to end: grounded, untouched (assert True), structural, a score."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git, prove_json

from changeloop.cli.main import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python-grounding"


def _ext(root: Path, name: str) -> dict[str, Any]:
    envelope = json.loads((root / ".changeloop/receipts/add-orders" / name).read_text())
    out: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"][
        "changeloop"
    ]
    return out


def test_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "shop"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".changeloop", "__pycache__"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init")
    code, doc = prove_json(root, "add-orders", capsys=capsys)
    assert code == 1
    assert {c: v["status"] for c, v in doc["claims"].items()} == {
        "order-total": "proven",
        "refunds": "inconclusive",
        "schema-currency": "proven",
    }
    test = _ext(root, "test.test.json")
    ungrounded = [f["message"] for f in test["findings"] if f["kind"] == "ungrounded"]
    assert len(ungrounded) == 1 and "test_refund (untouched)" in ungrounded[0]
    assert test["citations"]["schema-currency"][0]["grounding"] == "inert"  # read the schema
    assert test["citations"]["order-total"][0]["ref"] == "SHOP-1"
    assert {c["grounding"] for c in test["citations"]["order-total"]} == {"grounded"}
    mutation = _ext(root, "mutation.mutation.json")
    assert mutation["status"] == "pass"
    assert mutation["mutation"] == {"order-total": {"total": 13, "killed": 10}}
    survivors = mutation["details"]["survivors"]["order-total"]
    assert len(survivors) == 3
    assert {s["where"] for s in survivors} == {"shop.api:create_order", "shop.pricing:total"}
    # gate re-judges the same receipts (runs nothing) and agrees: listing the citations
    # in the receipt keeps the reason readable
    capsys.readouterr()
    assert main(["gate", "add-orders", "--root", str(root), "--json"]) == 1
    gate = json.loads(capsys.readouterr().out)
    assert gate["claims"]["refunds"]["status"] == "inconclusive"
    assert "ungrounded" in gate["claims"]["refunds"]["reasons"][0]["message"]
    assert gate["claims"]["order-total"]["status"] == "proven"
