"""examples/two-repos, end to end with real processes: contract + external review."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from repo_paths import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "two-repos"
CHANGE = "share-profile-contract"


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).with_name("changeloop"))
    exe = exe if Path(exe).exists() else "changeloop"
    return subprocess.run([exe, *args], cwd=root, capture_output=True, text=True, check=False)


def test_two_repo_example_review_then_drift(tmp_path: Path) -> None:
    root = tmp_path / "two-repos"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".changeloop", "keys", ".git"))
    subprocess.run(["sh", str(root / "setup.sh"), str(root)], check=True, capture_output=True)
    first = cli(root, "prove", CHANGE, "--json")
    doc = json.loads(first.stdout)
    assert first.returncode == 1
    assert doc["claims"]["contract-agreed"]["status"] == "proven"
    assert doc["claims"]["auth-boundary"]["status"] == "unproven"

    review = tmp_path / "review.json"
    signed = cli(
        root,
        "receipt",
        "sign",
        "--change",
        CHANGE,
        "--claims",
        "auth-boundary",
        "--key",
        "keys/reviewer.key",
        "--issuer",
        "security-review",
        "--out",
        str(review),
    )
    assert signed.returncode == 0, signed.stderr
    assert cli(root, "receipt", "import", str(review), "--change", CHANGE).returncode == 0
    proven = cli(root, "prove", CHANGE, "--json")
    assert proven.returncode == 0, proven.stderr
    assert json.loads(proven.stdout)["status"] == "proven"

    with (root / "api/contracts/profile.v1.json").open("ab") as fh:
        fh.write(b" ")
    drift = cli(root, "prove", CHANGE, "--json")
    doc = json.loads(drift.stdout)
    assert drift.returncode == 1
    assert doc["claims"]["contract-agreed"]["status"] == "failed"
    reasons = " ".join(doc["claims"]["contract-agreed"]["reasons"])
    assert (
        "api:contracts/profile.v1.json sha256" in reasons
        and "web:src/contracts/profile.v1.json sha256" in reasons
    )
    # the review was for the old content: it no longer counts
    assert doc["claims"]["auth-boundary"]["status"] == "failed"
