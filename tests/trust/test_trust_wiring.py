"""Receipts are bound to the wiring that made them (docs/threat-model.md).

The signing-oracle attack, end to end with real git, real pytest and the real
CLI: a pull request that only rewires ``test`` as ``command: [true]`` keeps the
content tree (``openspec/`` is outside it); CI proves it with its key; the
receipt imported on ``main`` must not make ``main`` (whose code is broken)
proven.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from changeloop.cli.main import main
from changeloop.signing.jcs import canonicalize
from changeloop.signing.keys import load_private_key
from changeloop.signing.statement import seal

CHANGE = "add-greeting"
GOOD = 'def greet() -> str:\n    return "hello"\n'
BROKEN = 'def greet() -> str:\n    return "goodbye"\n'
TEST = "from greet import greet\n\n\ndef test_greet() -> None:\n    assert greet() == 'hello'\n"
EVIDENCE = """\
version: 3
claims:
  greeting:
    statement: The app greets.
    requires: [ci]
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def execution(pub_pem: str, test_command: str, accepts: str = "[test]") -> str:
    pem = pub_pem.strip().replace("\n", "\\n")
    return textwrap.dedent(f"""\
        version: 1
        providers:
          test:
            adapter: command
            command: {test_command}
            claims: [greeting]
          ci:
            adapter: external
            capability: ci
            claims: [greeting]
            accepts: {accepts}
            ci: {{issuer: github-actions, publicKey: "{pem}\\n"}}
        """)


PYTEST = "[python3, -m, pytest, -q, -p, no:cacheprovider]"


@pytest.fixture
def ci_key(tmp_path: Path) -> tuple[Path, str]:
    out = tmp_path / "ci-keys"
    assert main(["keygen", "--out", str(out)]) == 0
    return out / "changeloop.key", (out / "changeloop.pub").read_text()


def make_main(path: Path, code: str, pub: str, accepts: str = "[test]") -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "greet.py").write_text(code)
    (path / "test_greet.py").write_text(TEST)
    (path / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    change = path / "openspec" / "changes" / CHANGE
    change.mkdir(parents=True)
    (path / "openspec" / "specs").mkdir()
    (path / "openspec" / "specs" / ".keep").write_text("")
    (change / "evidence.yaml").write_text(EVIDENCE)
    (change / "execution.yaml").write_text(execution(pub, PYTEST, accepts))
    git(path, "add", "-A")
    git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return path


def ci_proves(tmp_path: Path, main_ws: Path, key: Path, rewire: str | None) -> list[Path]:
    """CI: clone (another path, another machine), optionally rewire, prove with the CI key."""
    pr = tmp_path / "ci-checkout"
    git(tmp_path, "clone", "-q", str(main_ws), str(pr))
    if rewire is not None:
        exe = pr / "openspec" / "changes" / CHANGE / "execution.yaml"
        exe.write_text(exe.read_text().replace(PYTEST, rewire))
        git(pr, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "rewire test")
    main(
        [
            "prove",
            CHANGE,
            "--root",
            str(pr),
            "--sign-key",
            str(key),
            "--issuer",
            "github-actions",
            "--json",
        ]
    )
    made = sorted((pr / ".changeloop" / "receipts" / CHANGE).glob("*.json"))
    assert made, "CI made no receipts"
    return made


def prove(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["prove", CHANGE, "--root", str(root), "--json"])
    return code, json.loads(capsys.readouterr().out)


def external_receipt(doc: dict[str, Any]) -> dict[str, Any]:
    [entry] = [p for p in doc["providers"] if p["name"] == "ci"]
    [receipt] = entry["receipts"]
    return dict(receipt)


def import_into(main_ws: Path, files: list[Path]) -> None:
    assert (
        main(["receipt", "import", *map(str, files), "--change", CHANGE, "--root", str(main_ws)])
        == 0
    )


def test_a_pull_request_that_rewires_test_cannot_prove_broken_main(
    tmp_path: Path, ci_key: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    key, pub = ci_key
    main_ws = make_main(tmp_path / "main", BROKEN, pub)
    tree_before = git(main_ws, "rev-parse", "HEAD^{tree}")
    made = ci_proves(tmp_path, main_ws, key, rewire='["true"]')
    import_into(main_ws, made)
    code, doc = prove(main_ws, capsys)
    assert code == 1 and doc["status"] == "not-proven"
    receipt = external_receipt(doc)
    assert receipt["status"] == "fail"
    assert "wiring" in receipt["reason"] and "'test'" in receipt["reason"], receipt["reason"]
    assert doc["claims"]["greeting"]["status"] == "failed"
    assert git(main_ws, "rev-parse", "HEAD^{tree}") == tree_before


def test_the_same_wiring_on_another_machine_is_accepted(
    tmp_path: Path, ci_key: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    key, pub = ci_key
    main_ws = make_main(tmp_path / "main", GOOD, pub)
    made = ci_proves(tmp_path, main_ws, key, rewire=None)
    import_into(main_ws, made)
    code, doc = prove(main_ws, capsys)
    receipt = external_receipt(doc)
    assert receipt["status"] == "pass", receipt
    assert code == 0 and doc["claims"]["greeting"]["status"] == "proven"
    # The accepted receipt is the CI's test receipt (not its `discovery`-like siblings).
    ours = json.loads((main_ws / receipt["path"]).read_text())
    ext = json.loads(base64.b64decode(ours["payload"]))["predicate"]["changeloop"]
    assert ext["details"]["receipt"]["provider"] == "test"
    # `prove --dry-run --json` shows the digest a receipt must carry to be accepted here.
    capsys.readouterr()
    assert main(["prove", CHANGE, "--root", str(main_ws), "--dry-run", "--json"]) == 0
    planned = {p["name"]: p["wiring"] for p in json.loads(capsys.readouterr().out)["providers"]}
    assert ext["details"]["receipt"]["wiring"] == planned["test"]


def test_a_receipt_from_a_provider_not_in_accepts_is_refused_naming_wiring(
    tmp_path: Path, ci_key: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    key, pub = ci_key
    main_ws = make_main(tmp_path / "main", GOOD, pub, accepts="[]")
    import_into(main_ws, ci_proves(tmp_path, main_ws, key, rewire=None))
    code, doc = prove(main_ws, capsys)
    receipt = external_receipt(doc)
    assert code == 1 and receipt["status"] == "fail"
    assert "accepts" in receipt["reason"] and "wiring" in receipt["reason"]


def _sign(root: Path, key: Path, capability: str, out: Path) -> None:
    assert (
        main(
            [
                "receipt",
                "sign",
                "--root",
                str(root),
                "--change",
                CHANGE,
                "--claims",
                "greeting",
                "--key",
                str(key),
                "--issuer",
                "github-actions",
                "--capability",
                capability,
                "--out",
                str(out),
            ]
        )
        == 0
    )


def test_a_sign_off_counts_only_for_the_external_providers_own_capability(
    tmp_path: Path, ci_key: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    key, pub = ci_key
    main_ws = make_main(tmp_path / "main", BROKEN, pub)
    receipts = main_ws / "openspec" / "changes" / CHANGE / "receipts"
    capsys.readouterr()
    _sign(main_ws, key, "lint", receipts / "lint.json")
    assert "no external provider of change add-greeting has capability 'lint'" in (
        capsys.readouterr().err
    )
    code, doc = prove(main_ws, capsys)
    assert code == 1
    assert not next(p for p in doc["providers"] if p["name"] == "ci")["receipts"]
    assert doc["claims"]["greeting"]["status"] == "unproven"
    assert "addressed" in " ".join(doc["claims"]["greeting"]["reasons"])
    signed = json.loads(
        base64.b64decode(json.loads((receipts / "lint.json").read_text())["payload"])
    )["predicate"]["changeloop"]
    assert signed["adapter"] == "signed" and signed["wiring"] is None
    assert signed["schema"] == "changeloop/receipt@2"
    (receipts / "lint.json").unlink()
    _sign(main_ws, key, "ci", receipts / "ci.json")
    code, doc = prove(main_ws, capsys)
    assert external_receipt(doc)["status"] == "pass" and code == 0


def test_receipts_made_before_the_wiring_digest_are_refused_naming_it(
    tmp_path: Path, ci_key: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    key, pub = ci_key
    main_ws = make_main(tmp_path / "main", GOOD, pub)
    made = ci_proves(tmp_path, main_ws, key, rewire=None)
    private = load_private_key(key)
    legacy = []
    for path in made:  # the same receipts as changeloop/receipt@1 wrote them: no wiring
        statement = json.loads(base64.b64decode(json.loads(path.read_text())["payload"]))
        ext = statement["predicate"]["changeloop"]
        ext["schema"] = "changeloop/receipt@1"
        del ext["wiring"]
        out = tmp_path / "legacy" / path.name
        out.parent.mkdir(exist_ok=True)
        out.write_bytes(seal(statement, private).envelope)
        assert canonicalize(statement)  # still a valid statement
        legacy.append(out)
    import_into(main_ws, legacy)  # @1 receipts still verify
    code, doc = prove(main_ws, capsys)
    receipt = external_receipt(doc)
    assert code == 1 and receipt["status"] == "fail"
    assert "changeloop/receipt@1" in receipt["reason"]
    assert "wiring digest" in receipt["reason"], receipt["reason"]


def test_one_hostile_envelope_fails_closed_and_the_others_are_still_judged(
    tmp_path: Path, ci_key: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    key, pub = ci_key
    main_ws = make_main(tmp_path / "main", GOOD, pub)
    import_into(main_ws, ci_proves(tmp_path, main_ws, key, rewire=None))
    receipts = main_ws / "openspec" / "changes" / CHANGE / "receipts"
    (receipts / "zz-deep.json").write_text("[" * 100_000 + "]" * 100_000)
    code, doc = prove(main_ws, capsys)
    receipt = external_receipt(doc)
    assert code == 1 and receipt["status"] == "fail"
    assert "zz-deep.json" in receipt["reason"] and "crashed" not in receipt["reason"]
    (receipts / "zz-deep.json").unlink()
    code, doc = prove(main_ws, capsys)
    assert code == 0, doc


def test_wiring_digest_is_machine_independent_and_moves_with_the_wiring(
    tmp_path: Path, ci_key: tuple[Path, str]
) -> None:
    import dataclasses

    from changeloop.fingerprints.wiring import wiring_digest
    from changeloop.plan import build_plan, settle
    from changeloop.workspace import discovery as workspace

    _key, pub = ci_key
    a = make_main(tmp_path / "a", GOOD, pub)
    b = tmp_path / "elsewhere" / "b"
    b.parent.mkdir()
    shutil.copytree(a, b)

    def digest(root: Path, **change: Any) -> str:
        plan = build_plan(root, workspace.find_change(root, CHANGE))
        provider = dataclasses.replace(plan.providers["test"], **change)
        # a provider changed after the plan was built has its adapter facts settled again
        plan = settle(dataclasses.replace(plan, providers={**plan.providers, "test": provider}))
        return wiring_digest(plan, plan.providers["test"])

    assert digest(a) == digest(b)
    assert digest(a).startswith("sha256:") and len(digest(a)) == 71
    assert digest(a, command=("true",)) != digest(a)
    assert digest(a, timeout_ms=5) != digest(a)
    assert digest(a, env={"X": "1"}) != digest(a)
    assert digest(a, depends_on=("lint",)) != digest(a)
    # Derived wiring is machine-independent: whichever interpreter this machine resolves.
    venv = digest(a, origin="derived", command=(".venv/bin/python", "-m", "pytest"))
    bare = digest(b, origin="derived", command=("python3", "-m", "pytest"))
    assert venv == bare
    # Configured commands are kept exactly as written.
    assert digest(a, command=(".venv/bin/python", "-m", "pytest")) != digest(
        a, command=("python3", "-m", "pytest")
    )


def test_an_accepted_test_discovery_provider_counts_for_test_never_its_discovery(
    tmp_path: Path, ci_key: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    key, pub = ci_key
    main_ws = make_main(tmp_path / "main", GOOD, pub)
    exe = main_ws / "openspec" / "changes" / CHANGE / "execution.yaml"
    exe.write_text(
        exe.read_text().replace(
            f"adapter: command\n    command: {PYTEST}",
            "adapter: test-discovery\n"
            f"    command: {PYTEST[:-1]}, --junitxml=.changeloop/reports/t.xml]\n"
            "    report: .changeloop/reports/t.xml\n"
            "    minimum: 5",  # one test ran: the discovery receipt fails, the test one passes
        )
    )
    git(main_ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "td")
    made = ci_proves(tmp_path, main_ws, key, rewire=None)
    assert len(made) == 2  # test.test.json and test.discovery.json
    import_into(main_ws, made)
    code, doc = prove(main_ws, capsys)
    receipt = external_receipt(doc)
    assert receipt["status"] == "pass", receipt
    assert doc["claims"]["greeting"]["status"] == "proven"
    assert code == 0


def test_two_external_providers_with_their_own_keys_share_one_receipts_directory(
    tmp_path: Path, ci_key: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    key, pub = ci_key
    reviewer = tmp_path / "reviewer-keys"
    assert main(["keygen", "--out", str(reviewer)]) == 0
    main_ws = make_main(tmp_path / "main", GOOD, pub)
    change = main_ws / "openspec" / "changes" / CHANGE
    rpem = (reviewer / "changeloop.pub").read_text().strip().replace("\n", "\\n")
    (change / "execution.yaml").write_text(
        (change / "execution.yaml").read_text()
        + "  review:\n    adapter: external\n    claims: [greeting]\n"
        + f'    authority: {{name: alice, publicKey: "{rpem}\\n"}}\n'
    )
    (change / "evidence.yaml").write_text(EVIDENCE.replace("[ci]", "[ci, review]"))
    git(main_ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "review")
    import_into(main_ws, ci_proves(tmp_path, main_ws, key, rewire=None))
    assert (
        main(
            [
                "receipt",
                "sign",
                "--root",
                str(main_ws),
                "--change",
                CHANGE,
                "--claims",
                "greeting",
                "--key",
                str(reviewer / "changeloop.key"),
                "--issuer",
                "alice",
                "--out",
                str(change / "receipts" / "alice.json"),
            ]
        )
        == 0
    )
    code, doc = prove(main_ws, capsys)
    statuses = {p["name"]: [r["status"] for r in p["receipts"]] for p in doc["providers"]}
    assert statuses["ci"] == ["pass"] and statuses["review"] == ["pass"], doc
    assert code == 0
    # A file neither key verifies fails both providers (fail closed), naming it.
    stranger = tmp_path / "stranger"
    assert main(["keygen", "--out", str(stranger)]) == 0
    assert (
        main(
            [
                "receipt",
                "sign",
                "--root",
                str(main_ws),
                "--change",
                CHANGE,
                "--claims",
                "greeting",
                "--key",
                str(stranger / "changeloop.key"),
                "--issuer",
                "alice",
                "--status",
                "fail",
                "--out",
                str(change / "receipts" / "zz.json"),
            ]
        )
        == 0
    )
    code, doc = prove(main_ws, capsys)
    reasons = {
        p["name"]: p["receipts"][0]["reason"] or ""
        for p in doc["providers"]
        if p["name"] in ("ci", "review")
    }
    assert code == 1 and all("zz.json" in r for r in reasons.values()), reasons


def test_an_oversized_envelope_is_refused_unread_naming_the_file(
    tmp_path: Path, ci_key: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _key, pub = ci_key
    main_ws = make_main(tmp_path / "main", GOOD, pub)
    receipts = main_ws / "openspec" / "changes" / CHANGE / "receipts"
    receipts.mkdir()
    with (receipts / "huge.json").open("wb") as handle:
        handle.truncate(5 * 1024 * 1024)  # sparse: 5 MiB of zero bytes
    code, doc = prove(main_ws, capsys)
    receipt = external_receipt(doc)
    assert code == 1 and receipt["status"] == "fail"
    assert "huge.json" in receipt["reason"] and "too large" in receipt["reason"]
