"""The receipt's observer names the runner and, where the run says it, its version."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest
from prove_helpers import make_change, make_repo, prove_json, receipts_of


def test_pytest_version_is_read_from_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"test_a.py": "def test_a():\n    assert True\n"})
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [test]\n",
        f"""
        version: 1
        providers:
          test:
            adapter: test-discovery
            command: ["{sys.executable}", -m, pytest, -p, no:cacheprovider, --junitxml=out/t.xml]
            report: out/t.xml
        """,
    )
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0, doc
    envelope = json.loads((root / receipts_of(doc, "test")["test"]["path"]).read_text())
    observer = json.loads(base64.b64decode(envelope["payload"]))["predicate"]["changeloop"][
        "observer"
    ]
    assert observer == {
        "adapter": "test-discovery",
        "tool": "pytest",
        "version": pytest.__version__,
    }
