"""docs/receipts.md's "Verifying without changeloop" examples run exactly as written.

The code blocks marked ``<!-- tested: NAME -->`` are extracted from the doc and
run as scripts against a receipt a real ``prove`` made (and one ``receipt
sign`` made), with the workspace's public key; a tampered copy must make them
exit non-zero, so the examples verify rather than merely parse.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from prove_helpers import make_change, make_repo
from repo_paths import REPO_ROOT
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError as SslVerificationError
from securesystemslib.signer import SSlibKey

from changeloop.cli.main import main

DOC = REPO_ROOT / "docs" / "receipts.md"
BLOCK = re.compile(r"<!-- tested: (\S+) -->\n```python\n(.*?)```", re.DOTALL)


def examples() -> dict[str, str]:
    found = dict(BLOCK.findall(DOC.read_text(encoding="utf-8")))
    assert set(found) == {"securesystemslib", "cryptography"}, sorted(found)
    return found


@pytest.fixture(scope="module")
def receipt(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A receipt from a real prove run, and the workspace public key that signed it."""
    root = make_repo(tmp_path_factory.mktemp("docs") / "ws", {"README.md": "hello\n"})
    make_change(
        root,
        "add-greeting",
        "version: 3\nrequires: [check]\n",
        "version: 1\nproviders:\n  check: {adapter: command, command: [git, status]}\n",
    )
    assert main(["prove", "add-greeting", "--root", str(root)]) == 0
    (path,) = (root / ".changeloop" / "receipts" / "add-greeting").glob("*.json")
    return path, root / ".changeloop" / "keys" / "local.pub"


def run_example(code: str, envelope: Path, public_key: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, str(envelope), str(public_key)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize("name", ["securesystemslib", "cryptography"])
def test_the_doc_example_verifies_a_real_receipt(
    name: str, receipt: tuple[Path, Path], tmp_path: Path
) -> None:
    envelope, public_key = receipt
    result = run_example(examples()[name], envelope, public_key)
    assert result.returncode == 0, result.stderr
    statement = json.loads(base64.b64decode(json.loads(envelope.read_bytes())["payload"]))
    tree = statement["subject"][0]["digest"]["gitTree"]
    assert result.stdout.startswith("PASSED ") and tree in result.stdout

    tampered = tmp_path / "tampered.json"
    doc = json.loads(envelope.read_bytes())
    doc["payload"] = base64.b64encode(
        base64.b64decode(doc["payload"]).replace(b'"PASSED"', b'"FAILED"')
    ).decode()
    tampered.write_text(json.dumps(doc))
    refused = run_example(examples()[name], tampered, public_key)
    assert refused.returncode != 0 and "PASSED" not in refused.stdout

    assert main(["keygen", "--out", str(tmp_path / "k")]) == 0
    other = tmp_path / "k" / "changeloop.pub"
    assert run_example(examples()[name], envelope, other).returncode != 0


def test_securesystemslib_needs_the_keyid_given_explicitly(receipt: tuple[Path, Path]) -> None:
    """Why the doc passes ``keyid=``: with securesystemslib's own keyid nothing verifies."""
    envelope_path, public_key_path = receipt
    public_key = serialization.load_pem_public_key(public_key_path.read_bytes())
    envelope = Envelope.from_dict(json.loads(envelope_path.read_bytes()))
    with pytest.raises(SslVerificationError):
        envelope.verify([SSlibKey.from_crypto(public_key)], threshold=1)
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    key = SSlibKey.from_crypto(public_key, keyid=hashlib.sha256(raw).hexdigest())
    assert len(envelope.verify([key], threshold=1)) == 1
