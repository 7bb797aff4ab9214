"""A custom runner cites claims through its envelope, end to end: examples/custom-runner,
and a runner that reports grounding with (and without) the observer that traced it; a
failing runner process carries a `test-failing` finding with its exit code."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git, make_change, prove_json
from repo_paths import EXAMPLES


def _receipt(root: Path, change: str, name: str) -> dict[str, Any]:
    envelope = json.loads((root / f".changeloop/receipts/{change}/{name}").read_text())
    out: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"][
        "changeloop"
    ]
    return out


def _commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", message)


def test_the_example_runner_cites_its_claim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "links"
    shutil.copytree(EXAMPLES / "custom-runner", root)
    (root / ".gitignore").write_text(".changeloop/\n")
    git(root, "init", "-q", "-b", "main")
    _commit(root, "init")
    code, doc = prove_json(root, "check-links", capsys=capsys)
    assert code == 0, doc["claims"]
    ext = _receipt(root, "check-links", "link-check.link-check.json")
    assert ext["claims"] == {"docs-links": "credited"}
    assert ext["citations"]["docs-links"] == [
        {
            "test": f"links of docs/{page}.md",
            "depth": "unit",
            "ref": "DOCS-1",
            "result": "passed",
            "grounding": "not-checked",
        }
        for page in ("guide", "index")
    ]
    # a broken link: the runner fails, its citation fails the claim, the exit code is named
    (root / "docs/guide.md").write_text("# Guide\n\nSee [nowhere](missing.md).\n")
    _commit(root, "break")
    code, doc = prove_json(root, "check-links", capsys=capsys)
    assert code == 1
    assert doc["claims"]["docs-links"]["status"] == "failed"
    ext = _receipt(root, "check-links", "link-check.link-check.json")
    kinds = [f["kind"] for f in ext["findings"]]
    assert "broken-link" in kinds
    [failing] = [f for f in ext["findings"] if f["kind"] == "test-failing"]
    assert "exit code 1" in failing["message"]
    assert ext["claims"] == {"docs-links": "failed"}


RUNNER = """
import json, os, sys

cite = {"test": "OrderSpec.totals", "claim": "order-total", "depth": os.environ["DEPTH"],
        "result": "passed", "grounding": "grounded"}
if os.environ.get("OBSERVER"):
    cite["observer"] = {"tool": "jacoco-agent", "version": "0.8.12"}
print(json.dumps({"exit_code": 0, "passed": True, "findings": [], "citations": [cite]}))
"""
EVIDENCE = "version: 3\nclaims:\n  order-total: {requires: [spec]}\n"
EXECUTION = """
version: 1
repositories:
  self:
    entryPoints: ["pkg/api.py::create_*"]
providers:
  spec:
    adapter: command
    command: [python3, runner.py]
    envelope: true
    env: {{DEPTH: "{depth}"{observer}}}
"""


def _runner_workspace(tmp_path: Path, depth: str, observer: bool) -> Path:
    root = tmp_path / f"ws-{depth}-{observer}"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/api.py").write_text("def create_order():\n    return 1\n")
    (root / "runner.py").write_text(RUNNER)
    (root / ".gitignore").write_text(".changeloop/\n")
    extra = ', OBSERVER: "1"' if observer else ""
    make_change(root, "c", EVIDENCE, EXECUTION.format(depth=depth, observer=extra))
    git(root, "init", "-q", "-b", "main")
    _commit(root, "init")
    return root


def test_an_envelope_grounding_counts_only_with_its_observer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under declared entry points a grounding no named tracer saw credits nothing."""
    root = _runner_workspace(tmp_path, "component", observer=True)
    code, doc = prove_json(root, "c", capsys=capsys)
    assert code == 0, doc["claims"]
    [cite] = _receipt(root, "c", "spec.spec.json")["citations"]["order-total"]
    assert cite["grounding"] == "grounded"
    assert cite["observer"] == {"tool": "jacoco-agent", "version": "0.8.12"}

    root = _runner_workspace(tmp_path, "component", observer=False)
    code, doc = prove_json(root, "c", capsys=capsys)
    assert code == 1
    assert doc["claims"]["order-total"]["status"] == "inconclusive"
    ext = _receipt(root, "c", "spec.spec.json")
    [cite] = ext["citations"]["order-total"]
    assert cite["grounding"] == "not-checked" and "observer" not in cite
    [finding] = [f for f in ext["findings"] if f["kind"] == "grounding-unavailable"]
    assert "the envelope names no observer" in finding["message"]


def test_an_envelope_depth_is_checked_like_any(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _runner_workspace(tmp_path, "integration", observer=True)
    code, _ = prove_json(root, "c", capsys=capsys)
    assert code == 1
    ext = _receipt(root, "c", "spec.spec.json")
    assert ext["status"] == "fail"
    [finding] = [f for f in ext["findings"] if f["kind"] == "citation-depth-invalid"]
    assert "OrderSpec.totals cites order-total with depth 'integration'" in finding["message"]
