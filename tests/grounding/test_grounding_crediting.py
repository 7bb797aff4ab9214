"""The crediting rule end to end: `prove` on a real package with declared entry points; a test
cannot write its own grounding; depths are checked."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from grounding_helpers import PACKAGE, write_tree
from prove_helpers import git, make_change, prove_json

EVIDENCE = """
version: 3
claims:
  c-grounded: {requires: [test]}
  c-ungrounded: {requires: [test]}
  c-inert: {requires: [test]}
  c-dispatched: {requires: [test]}
  c-structural: {requires: [test], archetype: structural}
  c-structural-ran-code: {requires: [test], archetype: structural}
  c-listed: {requires: [test]}
  c-listed-structural: {requires: [test], archetype: structural}
  c-lint: {requires: [lint]}
"""
ENTRY = """
repositories:
  self:
    entryPoints: ["pkg/api.py::create_*"]
"""
EXECUTION = """
version: 1
{entry}
providers:
  test:
    adapter: test-discovery
    command: [python3, -m, pytest, -q, -p, no:cacheprovider, --junitxml=.changeloop/r.xml]
    report: .changeloop/r.xml
    claims: [c-listed, c-listed-structural]
  lint:
    adapter: command
    command: [python3, -c, "pass"]
    claims: [c-lint]
"""


def _workspace(tmp_path: Path, entry_points: bool, extra: dict[str, str] | None = None) -> Path:
    files = dict(PACKAGE)
    files.update(extra or {})
    files["tests/test_values.py"] = files["tests/test_values.py"].replace(
        '@pytest.mark.claim("c-grounded", depth="unit", ref="JIRA-1")',
        '@pytest.mark.claim("c-grounded", depth="unit", ref="JIRA-1")\n'
        '        @pytest.mark.claim("c-structural-ran-code", depth="unit")',
    )
    files[".gitignore"] = ".changeloop/\n__pycache__/\n"
    root = write_tree(tmp_path / "ws", files)
    make_change(root, "ground", EVIDENCE, EXECUTION.format(entry=ENTRY if entry_points else ""))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init")
    return root


def _extension(root: Path, name: str) -> dict[str, Any]:
    envelope = json.loads((root / ".changeloop/receipts/ground" / name).read_text())
    out: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"][
        "changeloop"
    ]
    return out


def test_crediting_rule_with_entry_points(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path, entry_points=True)
    code, doc = prove_json(root, "ground", capsys=capsys)
    assert code == 1
    status = {cid: c["status"] for cid, c in doc["claims"].items()}
    assert status == {
        "c-grounded": "proven",
        "c-ungrounded": "inconclusive",
        "c-inert": "inconclusive",
        "c-dispatched": "inconclusive",
        "c-structural": "proven",
        "c-structural-ran-code": "inconclusive",
        "c-listed": "inconclusive",  # listing cannot bypass grounding
        "c-listed-structural": "proven",  # the listing rule is for behavioral claims
        "c-lint": "inconclusive",  # a command provider's listing neither
    }
    for cid, test in (("c-ungrounded", "test_ungrounded"), ("c-inert", "test_inert")):
        reasons = " ".join(doc["claims"][cid]["reasons"])
        assert "ungrounded" in reasons and test in reasons, reasons
    assert "listed in provider lint's claims" in " ".join(doc["claims"]["c-lint"]["reasons"])

    ext = _extension(root, "test.test.json")
    assert ext["status"] == "pass"
    assert ext["claims"]["c-grounded"] == "credited"
    assert ext["claims"]["c-ungrounded"] == "uncredited"
    ungrounded = [f["message"] for f in ext["findings"] if f["kind"] == "ungrounded"]
    assert any("test_ungrounded (ungrounded)" in m for m in ungrounded), ungrounded
    assert any("test_dispatched (dispatched)" in m for m in ungrounded), ungrounded
    assert any("test_inert (untouched)" in m for m in ungrounded), ungrounded
    assert any("c-listed is listed" in m for m in ungrounded), ungrounded
    assert ext["citations"]["c-grounded"] == [
        {
            "test": "tests.test_values::test_grounded",
            "depth": "unit",
            "ref": "JIRA-1",
            "result": "passed",
            "grounding": "grounded",
            "reached_outside_entry": False,
        }
    ]
    assert ext["citations"]["c-dispatched"][0]["grounding"] == "dispatched"
    assert "c-listed" not in ext["citations"]  # no citing test
    assert all(isinstance(v, str) for v in ext["claims"].values())  # claims stay strings


def test_without_entry_points_citations_are_not_checked_and_credit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path, entry_points=False)
    _, doc = prove_json(root, "ground", capsys=capsys)
    status = {cid: c["status"] for cid, c in doc["claims"].items()}
    assert status["c-inert"] == "proven"
    assert status["c-listed"] == "proven"
    assert status["c-lint"] == "proven"
    assert status["c-structural"] == "inconclusive"  # structural needs an observed inert
    ext = _extension(root, "test.test.json")
    assert {c["grounding"] for cites in ext["citations"].values() for c in cites} == {"not-checked"}
    # a repository that did not ask for grounding gets no warning about it
    assert not [f for f in ext["findings"] if f["kind"] == "grounding-not-checked"]


def test_entry_point_matching_nothing_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path, entry_points=True)
    execution = root / "openspec/changes/ground/execution.yaml"
    execution.write_text(
        execution.read_text().replace(
            '["pkg/api.py::create_*"]', '["pkg/api.py::create_*", "pkg/cli.py::main"]'
        )
    )
    code, doc = prove_json(root, "ground", capsys=capsys)
    assert code == 2
    messages = [e["message"] for e in doc["errors"]]
    assert any("'pkg/cli.py::main'" in m and "matches no function" in m for m in messages)
    assert not any("create_*" in m for m in messages)


def test_pytest_json_report_carries_grounding_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another report format must not bypass the rule (its citations read as not-checked)."""
    root = _workspace(tmp_path, entry_points=True)
    execution = root / "openspec/changes/ground/execution.yaml"
    execution.write_text(
        execution.read_text()
        .replace(
            "--junitxml=.changeloop/r.xml", "--json-report, --json-report-file=.changeloop/r.json"
        )
        .replace("report: .changeloop/r.xml", "report: .changeloop/r.json")
    )
    _, doc = prove_json(root, "ground", capsys=capsys)
    status = {cid: c["status"] for cid, c in doc["claims"].items()}
    assert status["c-grounded"] == "proven"
    assert status["c-inert"] == "inconclusive"
    assert status["c-structural"] == "proven"
    ext = _extension(root, "test.test.json")
    assert ext["citations"]["c-grounded"][0]["depth"] == "unit"
    assert ext["citations"]["c-inert"][0]["grounding"] == "untouched"


def test_tracer_failure_finishes_the_suite_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_grounding_tracer import BLOCKER

    root = _workspace(tmp_path, entry_points=True)
    (root / "tests" / "conftest.py").write_text(BLOCKER)
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "block")
    _, doc = prove_json(root, "ground", capsys=capsys)
    ext = _extension(root, "test.test.json")
    assert ext["status"] == "pass"
    assert ext["tests"]["passed"] == 6  # the whole suite ran
    groundings = {c["grounding"] for cites in ext["citations"].values() for c in cites}
    assert groundings == {"not-checked"}
    notes = [f["message"] for f in ext["findings"] if f["kind"] == "grounding-not-checked"]
    assert len(notes) == 1 and notes[0].startswith("the tracer failed: ")
    # under declared entry points a tracer that could not run never credits: not even the
    # test that did run the entry point
    unavailable = [f["message"] for f in ext["findings"] if f["kind"] == "grounding-unavailable"]
    assert any("claim c-grounded" in m and "the tracer failed" in m for m in unavailable)
    assert doc["claims"]["c-grounded"]["status"] == "inconclusive"
    assert doc["claims"]["c-inert"]["status"] == "inconclusive"
    assert doc["claims"]["c-structural"]["status"] == "inconclusive"


FORGER = """
import pytest


@pytest.fixture
def stamp(request):
    yield
    request.node.user_properties.append(("grounding", "grounded"))  # at teardown


@pytest.mark.claim("c-inert", depth="unit")
def test_writes_its_own_grounding(record_property):
    record_property("grounding", "grounded")
    assert True


@pytest.mark.claim("c-dispatched", depth="unit")
def test_a_fixture_writes_it(stamp):
    assert True


def test_cites_without_the_marker(record_property):
    record_property("claim", "c-listed-structural")
    record_property("claim", "c-ungrounded")
    record_property("grounding", "inert")
    assert True
"""


def test_a_test_cannot_write_its_grounding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Where the plugin ran, grounding and claims come from its own record only."""
    extra = {"tests/test_values.py": FORGER}
    root = _workspace(tmp_path, entry_points=True, extra=extra)
    execution = root / "openspec/changes/ground/execution.yaml"
    execution.write_text(
        execution.read_text().replace("    claims: [c-listed, c-listed-structural]\n", "")
    )
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "forge")
    _, doc = prove_json(root, "ground", capsys=capsys)
    status = {cid: c["status"] for cid, c in doc["claims"].items()}
    assert status["c-inert"] == "inconclusive"
    assert status["c-dispatched"] == "inconclusive"
    assert status["c-ungrounded"] == "inconclusive"  # cited by a property only
    assert status["c-listed-structural"] == "inconclusive"
    ext = _extension(root, "test.test.json")
    assert ext["citations"]["c-inert"][0]["grounding"] == "untouched"
    assert ext["citations"]["c-dispatched"][0]["grounding"] == "untouched"
    assert "c-ungrounded" not in ext["citations"]
    assert "c-listed-structural" not in ext["citations"]
    # the report does carry the forged properties: they were read and ignored
    report = (root / ".changeloop/r.xml").read_text()
    assert report.count('name="grounding" value="grounded"') >= 2


DEPTHLESS = PACKAGE["tests/test_values.py"].replace(
    '@pytest.mark.claim("c-inert", depth="unit")', '@pytest.mark.claim("c-inert")'
)


def test_a_citation_without_depth_is_a_hard_error_under_entry_points(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path, entry_points=True, extra={"tests/test_values.py": DEPTHLESS})
    code, doc = prove_json(root, "ground", capsys=capsys)
    assert code == 1
    ext = _extension(root, "test.test.json")
    assert ext["status"] == "fail"
    missing = [f for f in ext["findings"] if f["kind"] == "citation-depth-missing"]
    assert len(missing) == 1 and "tests.test_values::test_inert (c-inert)" in missing[0]["message"]
    assert missing[0]["severity"] == "error"
    assert "test_grounded" not in missing[0]["message"]
    # its own test passed; the receipt failed for another test's citation: blocked, not failed
    assert doc["claims"]["c-grounded"]["status"] == "blocked"
    # without entry points the same suite passes: depth is only missing (doctor says so)
    plain = _workspace(
        tmp_path / "plain", entry_points=False, extra={"tests/test_values.py": DEPTHLESS}
    )
    _, doc = prove_json(plain, "ground", capsys=capsys)
    ext = _extension(plain, "test.test.json")
    assert ext["status"] == "pass"
    assert not [f for f in ext["findings"] if f["kind"].startswith("citation-depth")]
    assert ext["citations"]["c-inert"][0]["depth"] is None


JUNIT_WRITER = """
import pathlib, sys
pathlib.Path(".changeloop").mkdir(exist_ok=True)
pathlib.Path(".changeloop/other.xml").write_text(
    '<testsuites name="other"><testsuite name="s">'
    '<testcase classname="suite" name="checks totals"><properties>'
    '<property name="claim" value="c-grounded"/><property name="claim-depth" value="bogus"/>'
    '</properties></testcase>'
    '<testcase classname="suite" name="checks more"><properties>'
    '<property name="claim" value="c-inert"/><property name="claim-depth" value="e2e"/>'
    '</properties></testcase></testsuite></testsuites>'
)
"""


def test_a_malformed_depth_from_any_runner_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path, entry_points=False, extra={"write_junit.py": JUNIT_WRITER})
    execution = root / "openspec/changes/ground/execution.yaml"
    execution.write_text(
        execution.read_text()
        .replace(
            "[python3, -m, pytest, -q, -p, no:cacheprovider, --junitxml=.changeloop/r.xml]",
            "[python3, write_junit.py]",
        )
        .replace("report: .changeloop/r.xml", "report: .changeloop/other.xml")
    )
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "junit")
    code, _ = prove_json(root, "ground", capsys=capsys)
    assert code == 1
    ext = _extension(root, "test.test.json")
    assert ext["status"] == "fail"
    invalid = [f["message"] for f in ext["findings"] if f["kind"] == "citation-depth-invalid"]
    assert invalid and "suite::checks totals cites c-grounded with depth 'bogus'" in invalid[0]
    assert "checks more" not in invalid[0]  # e2e is smoke's alias
    assert ext["citations"]["c-inert"][0]["depth"] == "smoke"
    assert ext["citations"]["c-grounded"][0]["depth"] is None
