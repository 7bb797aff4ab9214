"""`receipt verify` says "invalid" the same way for a receipt and for a summary (VSA).

Both are envelopes signed by a key the verifier does not trust here; the
answer must be one shape: the failed check, its reason, the Problem in
``errors``, and one line with control characters escaped (docs/verbs/gate.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gate_helpers import run, workspace

ESC = "\x1b"


def _keys(name: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    assert run(["keygen", "--out", str(name)], capsys)[0] == 0
    return name / "changeloop.key", name / "changeloop.pub"


def _signed_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Path]:
    """A receipt and a VSA of change c1, both signed with a key no verifier below trusts."""
    root = workspace(tmp_path)
    key, _pub = _keys(tmp_path / "signer", capsys)
    receipt = tmp_path / f"receipt-{ESC}[31m.json"
    sign = ["receipt", "sign", "--root", str(root), "--change", "c1", "--claims", "greeting"]
    code, _doc, err = run(
        [*sign, "--key", str(key), "--issuer", "me", "--out", str(receipt)], capsys
    )
    assert code == 0, err
    vsa = tmp_path / f"vsa-{ESC}[31m.json"
    summary = ["summary", "c1", "--root", str(root), "--sign-key", str(key), "--out", str(vsa)]
    assert run(summary, capsys)[0] in (0, 1)  # FAILED (nothing proven) is written too
    return {"receipt": receipt, "vsa": vsa}


def test_invalid_receipt_and_invalid_summary_are_reported_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = _signed_files(tmp_path, capsys)
    _other_key, other_pub = _keys(tmp_path / "other", capsys)
    shown: dict[str, tuple[dict[str, object], str]] = {}
    for kind, path in files.items():
        verify = ["receipt", "verify", str(path), "--public-key", str(other_pub)]
        code, doc, _err = run([*verify, "--json"], capsys)
        assert code == 1 and doc is not None, kind
        code, _none, err = run(verify, capsys)
        assert code == 1, kind
        shown[kind] = (doc, err)
    escaped = {kind: str(path).replace(ESC, "\\x1b") for kind, path in files.items()}
    for kind, (doc, err) in shown.items():
        assert doc["valid"] is False and doc["check"] == "signature", (kind, doc)
        assert doc["errors"] == [
            {
                "code": "receipt_signature",
                "message": f"signature check failed: {doc['reason']}",
                "path": str(files[kind]),
            }
        ], (kind, doc)
        assert ESC not in err, f"{kind}: a control character reached the terminal: {err!r}"
        assert err == f"invalid: {escaped[kind]}: signature check failed: {doc['reason']}\n", kind
