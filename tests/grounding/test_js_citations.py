"""JavaScript runners cite claims natively, with depth and ref, end to end: vitest 3 and 4
(`meta`, which their JSON reports carry), node --test (a `claim:` diagnostic), jest through
jest-junit's test-case properties; an unknown depth is refused by name."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git, make_change, prove_json
from tool_installs import node_install

pytestmark = pytest.mark.timeout(900)  # the first run installs the runners (npm)


def _install(name: str) -> Path:
    return node_install(name)


def _workspace(tmp_path: Path, install: Path, files: dict[str, str], execution: str) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "node_modules").symlink_to(install / "node_modules")
    (root / ".gitignore").write_text("node_modules\n.changeloop/\ntest-results/\n")
    evidence = "version: 3\nclaims:\n  slug: {requires: [test]}\n  title: {requires: [test]}\n"
    make_change(root, "js", evidence, execution)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init")
    return root


def _test_receipt(root: Path) -> dict[str, Any]:
    envelope = json.loads((root / ".changeloop/receipts/js/test.test.json").read_text())
    out: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"][
        "changeloop"
    ]
    return out


VITEST_TEST = """
import { describe, expect, test } from "vitest";

const slug = (t) => t.trim().toLowerCase().replace(/[^a-z0-9]+/g, "-");

test("lowercases", { meta: { claim: "slug", depth: "unit", ref: "WEB-7" } }, () => {
  expect(slug(" Hello World ")).toBe("hello-world");
});

describe("titles", { meta: { claim: ["title"], depth: "e2e" } }, () => {
  test("keeps digits", () => {
    expect(slug("Top 10")).toBe("top-10");
  });
});

test("cites nothing", () => {
  expect(1).toBe(1);
});
"""
VITEST_EXECUTION = """
version: 1
providers:
  test:
    adapter: test-discovery
    command: [npx, vitest, run, --reporter=json, --outputFile=test-results/unit.json]
    report: test-results/unit.json
    timeoutMs: 180000
"""


@pytest.mark.parametrize("vitest", ["vitest@3.2.7", "vitest@4.1.12"])
def test_vitest_meta_cites_with_depth_and_ref(
    vitest: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install = _install(vitest)
    files = {"package.json": '{"type": "module"}\n', "slug.test.js": VITEST_TEST}
    root = _workspace(tmp_path, install, files, VITEST_EXECUTION)
    code, doc = prove_json(root, "js", capsys=capsys)
    assert code == 0, doc["claims"]
    ext = _test_receipt(root)
    assert ext["observer"]["tool"] == "vitest"
    [slug] = ext["citations"]["slug"]
    assert (slug["depth"], slug["ref"], slug["result"]) == ("unit", "WEB-7", "passed")
    assert slug["grounding"] == "not-checked"  # no tracer in a JavaScript run
    [title] = ext["citations"]["title"]
    assert title["test"].endswith("titles keeps digits") and title["depth"] == "smoke"
    # a depth that is not one of the five is refused by name, whatever the runner
    bogus = VITEST_TEST.replace('depth: "unit"', 'depth: "deep"')
    (root / "slug.test.js").write_text(bogus)
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "bogus")
    code, doc = prove_json(root, "js", capsys=capsys)
    assert code == 1
    ext = _test_receipt(root)
    assert ext["status"] == "fail"
    [finding] = [f for f in ext["findings"] if f["kind"] == "citation-depth-invalid"]
    assert "lowercases cites slug with depth 'deep'" in finding["message"]


NODE_TEST = """
const { describe, it, test } = require("node:test");
const assert = require("node:assert");

const slug = (t) => t.trim().toLowerCase().replace(/[^a-z0-9]+/g, "-");

test("lowercases", (t) => {
  t.diagnostic("claim: slug depth=unit ref=WEB-7");
  assert.strictEqual(slug("A B"), "a-b");
});

describe("titles", () => {
  it("keeps digits", (t) => {
    t.diagnostic("claim: title depth=component");
    assert.strictEqual(slug("Top 10"), "top-10");
  });
});
"""
NODE_EXECUTION = """
version: 1
providers:
  test:
    adapter: test-discovery
    command: [node, --test, --test-reporter=junit, --test-reporter-destination=test-results/unit.xml, slug.test.js]
    report: test-results/unit.xml
"""


def test_node_test_cites_through_a_diagnostic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install = _install("vitest@3.2.7")  # only for the workspace's node_modules link
    root = _workspace(tmp_path, install, {"slug.test.js": NODE_TEST}, NODE_EXECUTION)
    code, doc = prove_json(root, "js", capsys=capsys)
    assert code == 0, doc["claims"]
    ext = _test_receipt(root)
    assert ext["citations"]["slug"][0]["test"] == "lowercases"
    assert (ext["citations"]["slug"][0]["depth"], ext["citations"]["slug"][0]["ref"]) == (
        "unit",
        "WEB-7",
    )
    assert ext["citations"]["title"][0]["test"] == "titles > keeps digits"
    assert ext["citations"]["title"][0]["depth"] == "component"


JEST_TEST = """
const slug = (t) => t.trim().toLowerCase().replace(/[^a-z0-9]+/g, "-");

test("lowercases", () => {
  expect(slug("A B")).toBe("a-b");
});

test("keeps digits", () => {
  expect(slug("Top 10")).toBe("top-10");
});
"""
# jest has no per-test metadata: the project's own jest-junit properties module says which
# test cites what (here a table by test name), and jest-junit writes it as properties.
JEST_PROPERTIES = """
const cites = {
  "lowercases": { claim: "slug", "claim-depth": "unit", "claim-ref": "WEB-7" },
  "keeps digits": { claim: "title", "claim-depth": "component" },
};
module.exports = (testResult) => cites[testResult.title] || {};
"""
JEST_EXECUTION = """
version: 1
providers:
  test:
    adapter: test-discovery
    command: [npx, jest, --ci, --reporters=default, --reporters=jest-junit]
    env:
      JEST_JUNIT_OUTPUT_FILE: test-results/unit.xml
      JEST_JUNIT_TEST_CASE_PROPERTIES_JSON_FILE: claims.js
    report: test-results/unit.xml
    timeoutMs: 180000
"""


def test_jest_cites_through_jest_junit_properties(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install = _install("jest-junit@16.0.0")
    files = {"slug.test.js": JEST_TEST, "claims.js": JEST_PROPERTIES, "package.json": "{}\n"}
    root = _workspace(tmp_path, install, files, JEST_EXECUTION)
    code, doc = prove_json(root, "js", capsys=capsys)
    assert code == 0, doc["claims"]
    ext = _test_receipt(root)
    [slug] = ext["citations"]["slug"]
    assert (slug["depth"], slug["ref"]) == ("unit", "WEB-7")
    assert ext["citations"]["title"][0]["depth"] == "component"
