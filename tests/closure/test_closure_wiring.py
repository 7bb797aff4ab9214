"""Upstream wiring and claim policy are part of a provider's wiring digest.

``dependsOn`` counts by what the dependency *is* (its wiring digest, transitively),
not by its name; a claim's ``archetype`` (with ``requires``, ``repository``,
``inputMode`` and the entry points) counts for every provider that can credit it;
and ``gate`` judges recorded citations by the claim policy of now.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from closure_helpers import answers, prove
from prove_helpers import make_change, make_repo
from repo_helpers import commit_all

from changeloop.cli.main import main

EVIDENCE = "version: 3\nclaims:\n  built:\n    requires: [test]\n"
GEN_OK = "mkdir -p out && echo 'exit 0' > out/gen.sh"
GEN_BROKEN = "mkdir -p out && echo 'exit 1' > out/gen.sh"


def _execution(gen: str, extra: str = "") -> str:
    return (
        textwrap.dedent(f"""\
        version: 1
        providers:
          build:
            adapter: command
            command: [sh, -c, "{gen}"]
          test:
            adapter: command
            command: [sh, out/gen.sh]
            dependsOn: [build]
            claims: [built]
        """)
        + extra
    )


def test_gate_sees_an_upstream_rewired(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "ws", {".gitignore": ".changeloop/\nout/\n", "a.txt": "a\n"})
    make_change(root, "c", EVIDENCE, _execution(GEN_OK))
    commit_all(root, "change")
    assert prove(root, "c")[0] == 0
    (root / "openspec/changes/c/execution.yaml").write_text(_execution(GEN_BROKEN))
    commit_all(root, "rewire build only")
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_a_dependency_of_a_dependency_counts(tmp_path: Path) -> None:
    from changeloop.fingerprints.wiring import wiring_digest
    from changeloop.plan import build_plan
    from changeloop.workspace.discovery import find_change

    root = make_repo(tmp_path / "ws", {".gitignore": ".changeloop/\n"})
    three = textwrap.dedent("""\
        version: 1
        providers:
          a: {command: [sh, -c, "echo {word}"]}
          b: {command: ["true"], dependsOn: [a]}
          c: {command: ["true"], dependsOn: [b]}
        """)
    make_change(root, "c", EVIDENCE, three.replace("{word}", "one"))
    before = build_plan(root, find_change(root, "c"))
    (root / "openspec/changes/c/execution.yaml").write_text(three.replace("{word}", "two"))
    after = build_plan(root, find_change(root, "c"))
    for name in ("a", "b", "c"):
        assert wiring_digest(before, before.providers[name]) != wiring_digest(
            after, after.providers[name]
        ), name


@pytest.fixture
def ci_key(tmp_path: Path) -> tuple[Path, str]:
    out = tmp_path / "ci-keys"
    assert main(["keygen", "--out", str(out)]) == 0
    return out / "changeloop.key", (out / "changeloop.pub").read_text()


def _ci_execution(pub: str, gen: str) -> str:
    pem = pub.strip().replace("\n", "\\n")
    return _execution(
        gen,
        textwrap.indent(
            textwrap.dedent(f"""\
                ci:
                  adapter: external
                  capability: ci
                  claims: [merged]
                  accepts: [test]
                  ci: {{issuer: github-actions, publicKey: "{pem}\\n"}}
                """),
            "  ",
        ),
    )


def _ci_receipts(tmp_path: Path, main_ws: Path, key: Path, edit: dict[str, str]) -> list[Path]:
    """CI proves a pull request (a clone with ``edit`` committed) with its own key."""
    pr = tmp_path / "pr"
    subprocess.run(["git", "clone", "-q", str(main_ws), str(pr)], check=True)
    for rel, text in edit.items():
        (pr / rel).write_text(text)
    commit_all(pr, "pull request")
    _code, _doc = prove(pr, "c", "--sign-key", str(key), "--issuer", "github-actions")
    made = sorted((pr / ".changeloop" / "receipts" / "c").glob("test.*.json"))
    assert made, "CI made no test receipt"
    return made


def _main_ws(tmp_path: Path, execution: str, files: dict[str, str] | None = None) -> Path:
    root = make_repo(
        tmp_path / "main", {".gitignore": ".changeloop/\nout/\n", "a.txt": "a\n", **(files or {})}
    )
    evidence = "version: 3\nclaims:\n  merged: {requires: [ci]}\n  built: {requires: [test]}\n"
    make_change(root, "c", evidence, execution)
    commit_all(root, "change")
    return root


def test_a_ci_receipt_made_with_a_rewired_upstream_is_refused(
    tmp_path: Path, ci_key: tuple[Path, str]
) -> None:
    key, pub = ci_key
    root = _main_ws(tmp_path, _ci_execution(pub, GEN_BROKEN))
    exe = "openspec/changes/c/execution.yaml"
    made = _ci_receipts(tmp_path, root, key, {exe: _ci_execution(pub, GEN_OK)})
    receipts = root / "openspec/changes/c/receipts"
    receipts.mkdir()
    for path in made:
        shutil.copy(path, receipts / path.name)
    commit_all(root, "import CI receipts")
    code, doc = prove(root, "c")
    assert code == 1 and doc["claims"]["merged"]["status"] != "proven", doc["claims"]
    assert "wiring" in " ".join(doc["claims"]["merged"]["reasons"])
    found = answers(root, "c")
    assert found.agree(), found.why()


def test_a_ci_receipt_made_with_other_openspec_inputs_is_refused(
    tmp_path: Path, ci_key: tuple[Path, str]
) -> None:
    key, pub = ci_key
    execution = _ci_execution(pub, GEN_OK).replace(
        "[sh, out/gen.sh]", "[sh, openspec/changes/c/t.sh]"
    )
    root = _main_ws(tmp_path, execution)
    (root / "openspec/changes/c/t.sh").write_text("exit 1\n")
    commit_all(root, "a failing check")
    made = _ci_receipts(tmp_path, root, key, {"openspec/changes/c/t.sh": "exit 0\n"})
    receipts = root / "openspec/changes/c/receipts"
    receipts.mkdir()
    for path in made:
        shutil.copy(path, receipts / path.name)
    commit_all(root, "import CI receipts")
    code, doc = prove(root, "c")
    assert code == 1 and doc["claims"]["merged"]["status"] != "proven", doc["claims"]
    assert "wiring" in " ".join(doc["claims"]["merged"]["reasons"])


GROUNDING = Path(__file__).resolve().parents[2] / "examples" / "python-grounding"


def test_a_claim_flipped_to_behavioral_is_not_proven_by_an_inert_citation(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    shutil.copytree(GROUNDING, root, ignore=shutil.ignore_patterns(".changeloop", "__pycache__"))
    change = root / "openspec/changes/add-orders"
    exe = (change / "execution.yaml").read_text()
    (change / "execution.yaml").write_text(exe[: exe.index("  mutation:")])
    (root / ".gitignore").write_text(".changeloop/\n__pycache__/\n.pytest_cache/\n")
    make_repo(root, {})
    commit_all(root, "shop")
    _code, doc = prove(root, "add-orders")
    assert doc["claims"]["schema-currency"]["status"] == "proven", doc["claims"]
    evidence = change / "evidence.yaml"
    evidence.write_text(evidence.read_text().replace("    archetype: structural\n", ""))
    commit_all(root, "the schema claim is behavioral now")
    found = answers(root, "add-orders")
    claims = {k: v["claims"]["schema-currency"]["status"] for k, v in found.docs.items()}
    assert claims["clean"] == "inconclusive"
    assert "proven" not in claims.values(), claims
    assert found.agree(), found.why()
