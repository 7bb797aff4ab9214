"""kill -9 during a large group commit never leaves a receipt that reads as a pass (docs/design.md).

The sink writes receipts in rounds off the event loop (``run/commit.py``: write
all, fsync all, rename all, fsync each directory once). A real ``prove`` of 160
no-op providers is killed with SIGKILL at moments spread over its run, while
rounds of receipts, ``latest/`` copies and cache entries are being written.
After each kill, every file under a final name (run directory, ``latest/``,
cache) is whole: it parses, and securesystemslib verifies its signature with
the workspace key. Temporary files may be left (they name the dead writer);
the next ``prove`` proves the change and sweeps them all.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prove_helpers import make_change, make_repo
from repo_paths import REPO_ROOT
from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey

from changeloop.signing.keys import keyid, load_public_key_file

PROVIDERS = 160
KILL_AFTER_FIRST_RECEIPT_S = (0.0, 0.05, 0.15, 0.4)


def _workspace(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "ws", {"README.md": "x\n", ".gitignore": ".changeloop/\n"})
    providers = "".join(
        f'  p{i}:\n    adapter: command\n    capability: noop\n    command: ["true"]\n'
        for i in range(PROVIDERS)
    )
    make_change(root, "c", "version: 3\nrequires: [noop]\n", f"version: 1\nproviders:\n{providers}")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "change"], cwd=root, check=True)
    return root


def _prove(root: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
    }
    argv = [sys.executable, "-m", "changeloop", "prove", "c", "--root", str(root)]
    argv += ["--json", "--no-cache", "--sandbox", "none", "--jobs", "2"]
    return subprocess.Popen(
        argv, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def _final_names(state: Path) -> list[Path]:
    """Every receipt or cache entry under its final name (temporaries start with a dot)."""
    found = [
        p
        for p in (state / "runs").glob("*/p*/*.json")
        if not p.name.startswith(".") and p.parent.name != "pgroups"
    ]
    found += [p for p in (state / "receipts" / "c").glob("*.json") if not p.name.startswith(".")]
    found += [p for p in (state / "cache").glob("*.json") if not p.name.startswith(".")]
    return found


def _envelopes(path: Path) -> list[dict[str, object]]:
    doc = json.loads(path.read_bytes())  # a torn file fails here
    if "envelopes" in doc:  # a cache entry
        return [json.loads(base64.b64decode(e, validate=True)) for e in doc["envelopes"]]
    return [doc]


def _check_whole(state: Path, key: SSlibKey) -> int:
    """Every file under a final name is whole and verifies; returns how many there are."""
    names = _final_names(state)
    for path in names:
        for envelope in _envelopes(path):
            verified = Envelope.from_dict(envelope).verify([key], 1)
            assert list(verified) == [key.keyid], path
            statement = json.loads(base64.b64decode(str(envelope["payload"])))
            assert statement["predicate"]["changeloop"]["change"] == "c", path
    return len(names)


def _wait_for_first_receipt(root: Path, proc: subprocess.Popen[bytes]) -> None:
    latest = root / ".changeloop" / "receipts" / "c"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if latest.is_dir() and any(not p.name.startswith(".") for p in latest.iterdir()):
            return
        time.sleep(0.005)


@pytest.mark.parametrize("after", KILL_AFTER_FIRST_RECEIPT_S)
def test_kill9_during_group_commits_leaves_only_whole_receipts(
    tmp_path: Path, after: float
) -> None:
    root = _workspace(tmp_path)
    state = root / ".changeloop"
    proc = _prove(root)
    _wait_for_first_receipt(root, proc)
    time.sleep(after)
    killed_mid_run = proc.poll() is None
    if killed_mid_run:  # a late moment may find the run already over (an idle machine)
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)

    public = load_public_key_file(state / "keys" / "local.pub")
    key = SSlibKey.from_crypto(public, keyid=keyid(public))
    written = _check_whole(state, key)
    if after == 0.0:  # killed as the first round landed: surely mid-run
        assert killed_mid_run and 0 < written < 2 * PROVIDERS, written

    again = _prove(root)
    assert again.wait(timeout=300) == 0  # the next prove proves the change
    assert _check_whole(state, key) >= 2 * PROVIDERS  # its run directory and latest/
    leftovers = [p for p in state.rglob("*") if ".tmp" in p.name]
    assert leftovers == [], leftovers[:5]  # the dead writer's temporaries were swept
