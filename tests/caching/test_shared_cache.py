"""The signed shared cache end to end: CI publishes, a second clone reuses (docs/scale-out.md).

Real git clones, real Ed25519 keys, the real CLI. A provider appends to a
counter file outside the repositories each time it really runs, so "nothing
ran" is observed, not inferred.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from prove_helpers import make_change, make_repo, prove_json, provider_entry

from changeloop.signing.keys import generate_private_key, private_pem, public_pem

PY = sys.executable
CHANGE = "c1"


def _execution(counter: Path, ci_pub: str, timeout_ms: int = 60000) -> str:
    pem = ci_pub.strip().replace("\n", "\\n")
    script = (
        f"import pathlib; p = pathlib.Path(r'{counter}'); "
        "p.write_text((p.read_text() if p.exists() else '') + 'x')"
    )
    return (
        "version: 1\nproviders:\n"
        f"  unit:\n    adapter: command\n    command: [{json.dumps(PY)}, -c, {json.dumps(script)}]\n"
        f"    claims: [hello]\n    timeoutMs: {timeout_ms}\n"
        f"  review:\n    adapter: external\n    capability: review\n    accepts: [unit]\n"
        f'    ci: {{issuer: github-actions, publicKey: "{pem}\\n"}}\n'
    )


@pytest.fixture
def ci(tmp_path: Path) -> dict[str, Path]:
    """A CI workspace that proved the change with the CI key and published to DIR."""
    key = generate_private_key()
    key_path = tmp_path / "ci.pem"
    key_path.write_bytes(private_pem(key))
    key_path.chmod(0o600)
    counter = tmp_path / "runs.txt"
    root = make_repo(tmp_path / "ci", {"src/app.py": "print('hi')\n"}, commit=False)
    make_change(
        root,
        CHANGE,
        "version: 3\nclaims:\n  hello: {statement: it greets, requires: [unit]}\n",
        _execution(counter, public_pem(key.public_key()).decode()),
    )
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=root, check=True)
    return {"root": root, "key": key_path, "counter": counter, "dir": tmp_path / "shared"}


def _publish(ci: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    code, doc = prove_json(
        ci["root"],
        CHANGE,
        "--sign-key",
        str(ci["key"]),
        "--issuer",
        "github-actions",
        "--publish",
        str(ci["dir"]),
        capsys=capsys,
    )
    assert code == 0, doc
    return doc


def _clone(ci: dict[str, Path], name: str) -> Path:
    dest = ci["root"].parent / name
    subprocess.run(["git", "clone", "-q", str(ci["root"]), str(dest)], check=True)
    return dest


def _runs(ci: dict[str, Path]) -> int:
    return len(ci["counter"].read_text()) if ci["counter"].exists() else 0


def test_publish_writes_one_file_per_envelope_under_its_fingerprint(
    ci: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _publish(ci, capsys)
    files = sorted(ci["dir"].glob("*/*.json"))
    assert [f.name for f in files] == ["unit.json"]
    envelope = json.loads(files[0].read_bytes())
    import base64

    ext = json.loads(base64.b64decode(envelope["payload"]))["predicate"]["changeloop"]
    assert ext["fingerprint"] == "sha256:" + files[0].parent.name
    assert ext["issuer"] == "github-actions" and ext["status"] == "pass"


def test_a_second_clone_reuses_ci_receipts_and_runs_nothing(
    ci: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _publish(ci, capsys)
    assert _runs(ci) == 1
    dev = _clone(ci, "dev")
    code, doc = prove_json(dev, CHANGE, "--cache-from", str(ci["dir"]), capsys=capsys)
    assert code == 0, doc
    unit = provider_entry(doc, "unit")
    assert unit["state"] == "cached" and unit["origin"] == "shared"
    assert doc["claims"]["hello"]["status"] == "proven"
    assert _runs(ci) == 1  # nothing ran
    run_json = json.loads((dev / ".changeloop" / "runs" / doc["runId"] / "run.json").read_text())
    assert run_json["providers"]["unit"]["origin"] == "shared"
    # the reused receipt is CI's, byte for byte
    [published] = ci["dir"].glob("*/unit.json")
    assert (dev / unit["receipts"][0]["path"]).read_bytes() == published.read_bytes()


def test_without_cache_from_the_clone_runs(
    ci: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _publish(ci, capsys)
    dev = _clone(ci, "dev")
    code, doc = prove_json(dev, CHANGE, capsys=capsys)
    assert code == 0 and provider_entry(doc, "unit")["state"] == "ran"
    assert _runs(ci) == 2


def test_one_byte_of_content_makes_it_run(
    ci: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _publish(ci, capsys)
    dev = _clone(ci, "dev")
    (dev / "src/app.py").write_text("print('hi!')\n")
    code, doc = prove_json(dev, CHANGE, "--cache-from", str(ci["dir"]), capsys=capsys)
    assert code == 0 and provider_entry(doc, "unit")["state"] == "ran"
    assert _runs(ci) == 2


def test_one_wiring_key_makes_it_run(
    ci: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _publish(ci, capsys)
    dev = _clone(ci, "dev")
    execution = dev / "openspec/changes" / CHANGE / "execution.yaml"
    execution.write_text(execution.read_text().replace("timeoutMs: 60000", "timeoutMs: 60001"))
    code, doc = prove_json(dev, CHANGE, "--cache-from", str(ci["dir"]), capsys=capsys)
    assert code == 0 and provider_entry(doc, "unit")["state"] == "ran"
    assert _runs(ci) == 2


def test_a_receipt_signed_by_an_untrusted_key_is_ignored_with_a_note(
    ci: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    other = generate_private_key()
    ci["key"].write_bytes(private_pem(other))  # CI signs with a key the change does not trust
    _publish(ci, capsys)
    dev = _clone(ci, "dev")
    capsys.readouterr()
    from changeloop.cli.main import main

    code = main(["prove", CHANGE, "--root", str(dev), "--json", "--cache-from", str(ci["dir"])])
    out, err = capsys.readouterr()
    assert code == 0 and provider_entry(json.loads(out), "unit")["state"] == "ran"
    assert _runs(ci) == 2
    assert "shared cache: ignored" in err and "unit.json" in err


def test_a_forged_file_in_the_store_is_never_trusted(
    ci: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Trust is the signature's: an edited payload under the right name runs the provider."""
    _publish(ci, capsys)
    [published] = ci["dir"].glob("*/unit.json")
    doc = json.loads(published.read_bytes())
    doc["payload"] = doc["payload"][:-8] + (
        "A" * 8 if not doc["payload"].endswith("A" * 8) else "B" * 8
    )
    published.write_text(json.dumps(doc))
    dev = _clone(ci, "dev")
    code, out = prove_json(dev, CHANGE, "--cache-from", str(ci["dir"]), capsys=capsys)
    assert code == 0 and provider_entry(out, "unit")["state"] == "ran"


def test_publish_without_sign_key_is_refused(
    ci: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = prove_json(ci["root"], CHANGE, "--publish", str(ci["dir"]), capsys=capsys)
    assert code == 2 and doc["errors"][0]["code"] == "publish_needs_sign_key"
    assert _runs(ci) == 0


def test_one_tool_version_makes_it_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same tool path with other bytes (an upgrade) is another environment: it runs."""
    key = generate_private_key()
    key_path = tmp_path / "ci.pem"
    key_path.write_bytes(private_pem(key))
    key_path.chmod(0o600)
    counter = tmp_path / "runs.txt"
    tool = tmp_path / "bin" / "h13tool"
    tool.parent.mkdir()
    tool.write_text(f"#!/bin/sh\n# version 1\nprintf x >> '{counter}'\n")
    tool.chmod(0o755)
    pem = public_pem(key.public_key()).decode().strip().replace("\n", "\\n")
    root = make_repo(tmp_path / "ci", {"src/app.py": "print('hi')\n"}, commit=False)
    make_change(
        root,
        CHANGE,
        "version: 3\nclaims:\n  hello: {statement: it greets, requires: [unit]}\n",
        "version: 1\nproviders:\n"
        f"  unit: {{adapter: command, command: [{json.dumps(str(tool))}], claims: [hello]}}\n"
        "  review:\n    adapter: external\n    capability: review\n    accepts: [unit]\n"
        f'    ci: {{issuer: github-actions, publicKey: "{pem}\\n"}}\n',
    )
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=root, check=True)
    shared = tmp_path / "shared"
    code, doc = prove_json(
        root,
        CHANGE,
        "--sign-key",
        str(key_path),
        "--issuer",
        "github-actions",
        "--publish",
        str(shared),
        capsys=capsys,
    )
    assert code == 0, doc
    dev = tmp_path / "dev"
    subprocess.run(["git", "clone", "-q", str(root), str(dev)], check=True)
    code, doc = prove_json(dev, CHANGE, "--cache-from", str(shared), capsys=capsys)
    assert code == 0 and provider_entry(doc, "unit")["state"] == "cached"  # same tool: reused
    assert counter.read_text() == "x"
    tool.write_text(tool.read_text().replace("version 1", "version 2"))
    code, doc = prove_json(dev, CHANGE, "--cache-from", str(shared), capsys=capsys)
    assert code == 0 and provider_entry(doc, "unit")["state"] == "ran"
    assert counter.read_text() == "xx"
