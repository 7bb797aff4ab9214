"""One claim rule for every adapter (docs/ARCHITECTURE.md): a failed provider fails the claims it lists.

Before the rule lived in one place, a failed ``playwright`` run left its listed
claims ``uncredited`` (so the claim was merely inconclusive) while a failed
``test-discovery`` run marked them ``failed``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import make_change, make_repo, prove_json

EVIDENCE = """\
version: 3
claims:
  greeting: {requires: [{capability}]}
"""

EXECUTION = {
    "playwright": """\
version: 1
providers:
  e2e:
    adapter: playwright
    capability: browser
    command: [sh, -c, "exit 1"]
    claims: [greeting]
""",
    "test-discovery": """\
version: 1
providers:
  test:
    adapter: test-discovery
    command: [sh, -c, "exit 1"]
    claims: [greeting]
""",
    "command": """\
version: 1
providers:
  lint:
    adapter: command
    capability: lint
    command: [sh, -c, "exit 1"]
    claims: [greeting]
""",
}
CAPABILITY = {"playwright": "browser", "test-discovery": "test", "command": "lint"}


def _claim_marks(root: Path, doc: dict[str, Any]) -> list[str]:
    marks = []
    for entry in doc["providers"]:
        for receipt in entry["receipts"]:
            envelope = json.loads((root / receipt["path"]).read_text())
            statement = json.loads(base64.b64decode(envelope["payload"]))
            claims = statement["predicate"]["changeloop"].get("claims") or {}
            if "greeting" in claims:
                marks.append(claims["greeting"])
    return marks


@pytest.mark.parametrize("adapter", sorted(EXECUTION))
def test_a_failed_provider_fails_the_claims_it_lists(
    adapter: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"README": "x\n"})
    evidence = EVIDENCE.replace("{capability}", CAPABILITY[adapter])
    make_change(root, "c", evidence, EXECUTION[adapter])
    code, doc = prove_json(root, "c", capsys=capsys)
    assert code == 1
    marks = _claim_marks(root, doc)
    assert marks and set(marks) == {"failed"}, marks
    assert doc["claims"]["greeting"]["status"] == "failed", doc["claims"]
