"""The mutation adapter end to end: known mutant counts, scores, threshold, total 0, skipped
mutants, the user's tree untouched, and `prove --dry-run` counting from the last traced run."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from grounding_helpers import write_tree
from prove_helpers import git, make_change, prove_json

from changeloop.cli.main import main
from changeloop.mutation.mutants import mutants_of
from changeloop.mutation.select import claim_mutants

LABEL = '''
def create_label(n):
    """Six mutants: `>`, 0, "positive", return, "other", return."""
    if n > 0:
        return "positive"
    return "other"
'''
FRAGILE = """
def create_total(a, b):
    return a + b


# Both mutants of create_total break this module's import: they are skipped, not scored.
if create_total(1, 1) != 2:
    raise ImportError("create_total is broken")
"""
FILES = {
    "pkg/__init__.py": "",
    "pkg/api.py": LABEL,
    "pkg/fragile.py": FRAGILE,
    "pytest.ini": "[pytest]\ntestpaths = tests\npythonpath = .\n",
    ".gitignore": ".changeloop/\n__pycache__/\n",
    "tests/test_label.py": """
        import pytest

        from pkg.api import create_label


        @pytest.mark.claim("label", depth="unit")
        def test_positive():
            assert create_label(5) == "positive"


        @pytest.mark.claim("label")
        def test_other():
            assert create_label(-1) == "other"


        @pytest.mark.claim("inert-only")
        def test_inert():
            assert True
        """,
    "tests/test_fragile.py": """
        import pytest

        from pkg.fragile import create_total  # a mutant that breaks this import: not scored


        @pytest.mark.claim("fragile")
        def test_fragile():
            assert create_total(2, 2) == 4
        """,
}
EVIDENCE = """
version: 3
claims:
  label: {requires: [test, mutation]}
  inert-only: {requires: [test], archetype: structural}
  fragile: {requires: [test]}
"""
EXECUTION = """
version: 1
repositories:
  self:
    entryPoints: ["pkg/*.py::create_*"]
providers:
  test:
    adapter: test-discovery
    command: [python3, -m, pytest, -q, -p, no:cacheprovider, --junitxml=.changeloop/r.xml]
    report: .changeloop/r.xml
  mutation:
    adapter: mutation
    command: [python3, -m, pytest, -q]
    claims: {claims}
{extra}
"""


def _workspace(tmp_path: Path, claims: str = "[label]", extra: str = "") -> Path:
    root = write_tree(tmp_path / "ws", FILES)
    make_change(root, "mut", EVIDENCE, EXECUTION.format(claims=claims, extra=extra))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init")
    return root


def _mutation(root: Path) -> dict[str, Any]:
    envelope = json.loads((root / ".changeloop/receipts/mut/mutation.mutation.json").read_text())
    out: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"][
        "changeloop"
    ]
    return out


def test_known_mutants_per_kind() -> None:
    found = mutants_of(LABEL, "pkg/api.py", {"create_label"})
    kinds = [m.kind for m in found]
    assert kinds == ["comparison", "constant", "constant", "return-value", "constant",
                     "return-value"]  # fmt: skip
    assert len({m.source for m in found}) == 6  # each mutant is a different program
    both = "def f(a, b):\n    return not (a < b and a * 2)\n"
    assert sorted(m.kind for m in mutants_of(both, "m.py", {"f"})) == [
        "arithmetic", "boolean", "boolean", "comparison", "constant", "return-value",
    ]  # fmt: skip
    assert mutants_of(LABEL, "pkg/api.py", {"other"}) == []


def test_max_mutants_is_a_deterministic_sample(tmp_path: Path) -> None:
    write_tree(tmp_path, {"pkg/api.py": LABEL})
    functions = {"pkg/api.py": {"create_label"}}
    first = claim_mutants(tmp_path, functions, 3, "seed-a")
    assert len(first) == 3
    assert [m.key for m in first] == [
        m.key for m in claim_mutants(tmp_path, functions, 3, "seed-a")
    ]
    assert len(claim_mutants(tmp_path, functions, None, "seed-a")) == 6


def test_score_informs_without_threshold_and_leaves_the_tree_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    before = (root / "pkg/api.py").read_bytes()
    capsys.readouterr()
    assert main(["prove", "mut", "--root", str(root), "--dry-run", "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    mutation = next(p for p in planned["providers"] if p["name"] == "mutation")
    assert mutation["mutants"] == {"label": None}  # unknown until a traced run exists
    assert main(["prove", "mut", "--root", str(root), "--dry-run"]) == 0
    assert "mutants for label: unknown until a traced run exists" in capsys.readouterr().err

    code, doc = prove_json(root, "mut", capsys=capsys)
    assert code == 0, doc["claims"]
    ext = _mutation(root)
    assert ext["status"] == "pass", ext
    assert ext["mutation"] == {"label": {"total": 6, "killed": 4}}
    assert ext["claims"] == {"label": "credited"}
    assert [f["kind"] for f in ext["findings"]] == ["mutation-score"]
    assert "4 of 6" in ext["findings"][0]["message"]
    assert (root / "pkg/api.py").read_bytes() == before
    assert git(root, "status", "--porcelain") == ""
    assert doc["claims"]["label"]["status"] == "proven"

    assert main(["prove", "mut", "--root", str(root), "--dry-run", "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    mutation = next(p for p in planned["providers"] if p["name"] == "mutation")
    assert mutation["mutants"] == {"label": 6}


def test_threshold_fails_below(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _workspace(tmp_path, extra="    threshold: 0.9")
    before = (root / "pkg/api.py").read_bytes()
    # --sandbox none runs the tests in place; mutants still go only to the adapter's own copy
    code, _ = prove_json(root, "mut", "--sandbox", "none", capsys=capsys)
    assert (root / "pkg/api.py").read_bytes() == before
    assert git(root, "status", "--porcelain") == ""
    ext = _mutation(root)
    assert code == 1
    assert ext["status"] == "fail"
    assert ext["mutation"] == {"label": {"total": 6, "killed": 4}}
    assert "below threshold 0.9" in ext["reason"]
    assert ext["claims"] == {"label": "failed"}


def test_total_zero_is_inconclusive_and_unimportable_mutants_are_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path, claims="[inert-only, fragile]")
    prove_json(root, "mut", capsys=capsys)
    ext = _mutation(root)
    assert ext["status"] == "inconclusive"
    assert ext["mutation"] == {
        "inert-only": {"total": 0, "killed": 0},
        "fragile": {"total": 0, "killed": 0},
    }
    assert ext["details"]["skipped"] == {"inert-only": 0, "fragile": 2}
    assert "total: 0" in ext["reason"]
    assert set(ext["claims"].values()) == {"uncredited"}


def test_mutation_is_refused_without_entry_points_or_claims(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    execution = root / "openspec/changes/mut/execution.yaml"
    text = execution.read_text().replace('    entryPoints: ["pkg/*.py::create_*"]\n', "")
    execution.write_text(text.replace("repositories:\n  self:\n", ""))
    code, doc = prove_json(root, "mut", capsys=capsys)
    assert code == 2
    assert "mutation_without_entry_points" in {e["code"] for e in doc["errors"]}
