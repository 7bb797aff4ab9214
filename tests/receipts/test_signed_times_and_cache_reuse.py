"""Review findings on receipts: malformed signed times, external receipts and the cache."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from receipts_helpers import T0, make_workspace, pem_text, signed, statement

from changeloop.cli.main import main
from changeloop.model import ContentIdentity
from changeloop.signing.keys import generate_private_key, private_pem
from changeloop.signing.verify import Expectation, VerificationError, verify_envelope

KEY = generate_private_key()
WEB = ContentIdentity(tree="3f2a" + "0" * 36, head="71be" + "0" * 36, dirty=False)


def test_signed_time_that_fits_the_pattern_but_is_no_date_is_refused_not_a_crash() -> None:
    stmt = statement(subjects={"web": WEB})
    stmt["predicate"]["changeloop"]["finishedOn"] = "2026-13-45T99:99:99Z"
    with pytest.raises(VerificationError) as err:
        verify_envelope(
            signed(stmt, KEY), [KEY.public_key()], Expectation(now=T0 + timedelta(minutes=1))
        )
    assert err.value.check == "statement"
    assert "finishedOn" in err.value.reason


def test_receipt_verify_cli_exits_1_on_an_impossible_date(tmp_path: Path) -> None:
    stmt = statement(subjects={"web": WEB})
    stmt["predicate"]["changeloop"]["startedOn"] = "2026-02-30T10:00:00Z"
    (tmp_path / "r.json").write_bytes(signed(stmt, KEY))
    (tmp_path / "k.pub").write_text(pem_text(KEY))
    code = main(
        ["receipt", "verify", str(tmp_path / "r.json"), "--public-key", str(tmp_path / "k.pub")]
    )
    assert code == 1


def test_a_failed_external_receipt_imported_later_is_not_hidden_by_the_cache(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    make_workspace(root, pub_pem=pem_text(KEY))
    keyfile = tmp_path / "ci.key"
    keyfile.write_bytes(private_pem(KEY))
    keyfile.chmod(0o600)
    base = ["--root", str(root)]

    def sign(status: str, out: Path) -> None:
        extra = ["--reason", "reviewer withdrew"] if status == "fail" else []
        assert (
            main(
                [
                    "receipt",
                    "sign",
                    *base,
                    "--change",
                    "add-review",
                    "--claims",
                    "auth-boundary",
                    "--key",
                    str(keyfile),
                    "--issuer",
                    "github-actions",
                    "--status",
                    status,
                    "--out",
                    str(out),
                    *extra,
                ]
            )
            == 0
        )
        assert main(["receipt", "import", *base, str(out), "--change", "add-review"]) == 0

    sign("pass", tmp_path / "pass.json")
    assert main(["prove", *base, "add-review"]) == 0
    # The reviewer withdraws: a FAILED receipt for this very content now exists,
    # and it wins over the PASSED one (docs/adapters) — also on the next run.
    sign("fail", tmp_path / "fail.json")
    assert main(["prove", *base, "add-review"]) == 1


def test_a_non_ed25519_private_key_is_refused_with_private_key_advice(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric import ed448

    from changeloop.signing.keys import KeyRefused, load_private_key

    path = tmp_path / "ed448.key"
    path.write_bytes(
        ed448.Ed448PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    with pytest.raises(KeyRefused) as err:
        load_private_key(path)
    (problem,) = err.value.problems
    assert "Ed448" in problem.message
    assert problem.fix is not None and ".key file" in problem.fix and "public" not in problem.fix
