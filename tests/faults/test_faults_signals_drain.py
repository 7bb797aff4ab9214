"""SIGINT and SIGTERM wait for the last group commit: what finished before them is on disk.

Receipts are written in rounds off the event loop (``run/commit.py``), so a
provider that finished a moment before the signal may still be queued. Forty
quick providers run first; a last one, which depends on all of them, signals
the run itself (SIGINT or SIGTERM to changeloop) the moment it starts, so its
signal lands while their receipts are at most one round old. The run exits 130,
and every quick provider's receipt is on disk, whole and verifying; the
interrupted one has none, and no temporary file is left.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from prove_helpers import make_change, make_repo
from repo_paths import REPO_ROOT
from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey

from changeloop.signing.keys import keyid, load_public_key_file

QUICK = 40


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_waits_for_the_receipts_of_finished_providers(
    tmp_path: Path, sig: signal.Signals
) -> None:
    root = make_repo(tmp_path / "ws", {"README.md": "x\n", ".gitignore": ".changeloop/\n"})
    quick = "".join(
        f'  q{i}: {{adapter: command, capability: quick, command: ["true"]}}\n'
        for i in range(QUICK)
    )
    # $CHANGELOOP_OWNER is "<pid>-<start>" of the changeloop process running it.
    last = (
        "  last:\n    adapter: command\n    capability: last\n"
        f"    dependsOn: [{', '.join(f'q{i}' for i in range(QUICK))}]\n"
        f'    command: [sh, -c, "kill -{sig.name[3:]} ${{CHANGELOOP_OWNER%-*}}; sleep 30"]\n'
    )
    make_change(
        root,
        "c",
        "version: 3\nrequires: [quick, last]\n",
        f"version: 1\nproviders:\n{quick}{last}",
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    argv = [sys.executable, "-m", "changeloop", "prove", "c", "--root", str(root)]
    done = subprocess.run(
        [*argv, "--json", "--no-cache", "--sandbox", "none"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 130, done.stderr
    assert json.loads(done.stdout)["interrupted"] is True

    state = root / ".changeloop"
    public = load_public_key_file(state / "keys" / "local.pub")
    key = SSlibKey.from_crypto(public, keyid=keyid(public))
    latest = state / "receipts" / "c"
    for i in range(QUICK):
        path = latest / f"q{i}.quick.json"
        assert path.is_file(), f"q{i} finished before the signal but its receipt is missing"
        envelope = json.loads(path.read_bytes())
        assert list(Envelope.from_dict(envelope).verify([key], 1)) == [key.keyid]
        statement = json.loads(base64.b64decode(envelope["payload"]))
        assert statement["predicate"]["changeloop"]["status"] == "pass"
    assert not (latest / "last.last.json").exists()  # interrupted: no receipt
    assert [p for p in state.rglob("*") if ".tmp" in p.name] == []
