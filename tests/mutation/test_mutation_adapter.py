"""The mutation adapter end to end: known mutant counts, scores, threshold (advisory unless
required), total 0, skipped mutants, survivors a reader can act on, mutants run only against
the tests that reach them (in one pytest that forks per mutant, the slow way where a function
cannot be swapped), the user's tree untouched, and `prove --dry-run` counting from the last
traced run."""

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
        from pathlib import Path

        import pytest

        from pkg.api import create_label


        @pytest.mark.claim("label", depth="unit")
        def test_positive():
            assert create_label(5) == "positive"


        @pytest.mark.claim("label", depth="unit")
        def test_other():
            assert create_label(-1) == "other"


        @pytest.mark.claim("inert-only", depth="unit")
        def test_inert():  # reads the module's source, runs none of it
            assert "def create_label" in (Path(__file__).parent.parent / "pkg/api.py").read_text()
        """,
    "tests/test_fragile.py": """
        import pytest

        from pkg.fragile import create_total  # a mutant that breaks this import: not scored


        @pytest.mark.claim("fragile", depth="unit")
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
    # every mutant ran in the one forked pytest, none the slow way
    run_dir = root / doc["providers"][1]["receipts"][0]["path"].rsplit("/", 2)[0]
    assert len(list((run_dir / "mutation/mutants/results").glob("*.json"))) == 6
    assert not list((run_dir / "mutation").glob("mutation-mutant-*.log"))
    assert (root / "pkg/api.py").read_bytes() == before
    assert git(root, "status", "--porcelain") == ""
    assert doc["claims"]["label"]["status"] == "proven"

    assert main(["prove", "mut", "--root", str(root), "--dry-run", "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    mutation = next(p for p in planned["providers"] if p["name"] == "mutation")
    assert mutation["mutants"] == {"label": 6}


def test_threshold_fails_below_where_required(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
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


def test_a_threshold_is_advisory_where_nothing_requires_mutation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The score fails its receipt; a claim that requires only `test` stays proven."""
    root = _workspace(tmp_path, extra="    threshold: 0.9")
    evidence = root / "openspec/changes/mut/evidence.yaml"
    evidence.write_text(evidence.read_text().replace("[test, mutation]", "[test]"))
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "advisory")
    capsys.readouterr()
    code = main(["prove", "mut", "--root", str(root), "--json"])
    shown = capsys.readouterr()
    doc = json.loads(shown.out)
    assert code == 0, doc["claims"]
    assert doc["claims"]["label"]["status"] == "proven"
    assert "mutation fail (advisory: nothing requires mutation)" in shown.err
    ext = _mutation(root)
    assert (ext["status"], ext["claims"]) == ("fail", {"label": "failed"})
    [receipt] = next(p for p in doc["providers"] if p["name"] == "mutation")["receipts"]
    assert (receipt["status"], receipt["advisory"]) == ("fail", True)
    # a change that requires mutation makes the same score decide
    evidence.write_text(evidence.read_text() + "requires: [mutation]\n")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "required")
    code, doc = prove_json(root, "mut", capsys=capsys)
    assert code == 1
    assert doc["requires"] == {"mutation": {"self": "fail"}}


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


BADGES = """
class Badges:
    def create(self, n):
        if n > 100:
            return "gold"
        return "plain"


def create_suffix(n):
    return "st" if n == 1 else "th"


def create_outer(n):
    def inner(m):
        return m * 3

    return inner(n)
"""
BADGE_TESTS = """
import pytest

from pkg.badges import Badges, create_outer, create_suffix


@pytest.mark.claim("badge", depth="unit")
def test_plain():
    assert Badges().create(5) == "plain"


@pytest.mark.claim("badge", depth="unit")
def test_suffix():
    assert create_suffix(1) == "st"
    assert create_suffix(2) == "th"


@pytest.mark.claim("badge", depth="unit")
def test_nested():
    assert create_outer(2) == 6
"""


def test_survivors_name_where_and_whether_reached_and_only_reaching_tests_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {**FILES, "pkg/badges.py": BADGES, "tests/test_badges.py": BADGE_TESTS}
    root = write_tree(tmp_path / "ws", files)
    execution = EXECUTION.format(claims="[badge]", extra="").replace(
        '["pkg/*.py::create_*"]', '["pkg/*.py::create_*", "pkg/badges.py::Badges.create"]'
    )
    evidence = EVIDENCE.replace("[test, mutation]", "[test]") + "  badge: {requires: [test]}\n"
    make_change(root, "mut", evidence, execution)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init")
    code, doc = prove_json(root, "mut", capsys=capsys)
    assert code == 0, doc["claims"]
    ext = _mutation(root)
    survivors = ext["details"]["survivors"]["badge"]
    gold = [s for s in survivors if s["line"] == 4]
    assert gold and all(s["reached"] is False for s in gold), survivors
    assert {s["where"] for s in gold} == {"pkg.badges:Badges#create"}
    assert {s["operator"] for s in gold} == {"constant", "return-value"}
    compare = next(s for s in survivors if s["operator"] == "comparison")
    assert compare == {
        "operator": "comparison",
        "mutation": "`>` → `>=`",
        "where": "pkg.badges:Badges#create",
        "file": "pkg/badges.py",
        "line": 3,
        "reached": True,
    }
    assert all(
        set(s) <= {"operator", "mutation", "where", "file", "line", "reached"} for s in survivors
    )
    score = ext["mutation"]["badge"]
    assert len(survivors) <= score["total"] - score["killed"]
    # each mutant ran only the citing tests whose traces reached its function
    run_dir = root / doc["providers"][1]["receipts"][0]["path"].rsplit("/", 2)[0] / "mutation"
    planned = json.loads((run_dir / "mutants/mutants.json").read_text())["mutants"]
    reaching = {
        "Badges.create": ["tests/test_badges.py::test_plain"],
        "create_suffix": ["tests/test_badges.py::test_suffix"],
        "create_outer": ["tests/test_badges.py::test_nested"],
        "create_outer.<locals>.inner": ["tests/test_badges.py::test_nested"],
    }
    assert planned and all(m["tests"] == reaching[m["qualname"]] for m in planned)
    # a nested function has no live function object to swap: it ran the slow way, and scored
    slow = list(run_dir.glob("mutation-mutant-*.log"))
    inner = [m for m in planned if m["qualname"] == "create_outer.<locals>.inner"]
    assert inner and len(slow) == len(inner)
    assert score["total"] == len(planned)  # nothing skipped: every mutant scored
