"""A hostile shared-cache directory: ``--cache-from`` and ``--publish`` hold.

Whoever can write into the shared directory (another user of a shared runner, a
cache restored from elsewhere) can plant anything there. Each test plants one thing
at the very name ``prove --cache-from`` reads — CI's entry for the provider's
fingerprint — and runs the real CLI in a child process, bounded (a time limit, an
address-space limit), so a hang or a runaway read is a failure, not a stuck suite:

- a FIFO: never waited on, and SIGTERM still ends ``prove`` promptly (exit 130);
- a symlink to ``/dev/zero``: refused, never followed;
- a 300 MB file: refused from its size, never read (peak memory stays small);
- ``--publish`` into a directory whose fingerprint folder is a planted symlink:
  refused, nothing written through it.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import make_change, make_repo, prove_json, provider_entry
from repo_helpers import git

from changeloop.signing.keys import generate_private_key, private_pem, public_pem

CHANGE = "c1"
ADDRESS_SPACE = 3 << 30  # a runaway read ends in MemoryError, not in the machine's OOM killer


def _execution(counter: Path, marker: Path, delay: Path, ci_pub: str) -> str:
    pem = ci_pub.strip().replace("\n", "\\n")
    count = (
        f"import pathlib; p = pathlib.Path(r'{counter}'); "
        "p.write_text((p.read_text() if p.exists() else '') + 'x')"
    )
    # `slow` announces itself, then sleeps as long as a file outside the repository says.
    slow = (
        f"import pathlib, time; pathlib.Path(r'{marker}').write_text('started'); "
        f"d = pathlib.Path(r'{delay}'); time.sleep(float(d.read_text()) if d.exists() else 0)"
    )
    py = json.dumps(sys.executable)
    return (
        "version: 1\nproviders:\n"
        f"  unit:\n    adapter: command\n    command: [{py}, -c, {json.dumps(count)}]\n"
        "    claims: [hello]\n"
        f"  slow:\n    adapter: command\n    command: [{py}, -c, {json.dumps(slow)}]\n"
        "  review:\n    adapter: external\n    capability: review\n    accepts: [unit]\n"
        f'    ci: {{issuer: github-actions, publicKey: "{pem}\\n"}}\n'
    )


@pytest.fixture
def ci(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Path]:
    """CI proved the change with its key and published to ``shared``; ``dev`` is a clone."""
    key = generate_private_key()
    key_path = tmp_path / "ci.pem"
    key_path.write_bytes(private_pem(key))
    key_path.chmod(0o600)
    paths = {
        "counter": tmp_path / "runs.txt",
        "marker": tmp_path / "slow-started",
        "delay": tmp_path / "slow-delay",
    }
    root = make_repo(tmp_path / "ci", {"src/app.py": "print('hi')\n"}, commit=False)
    make_change(
        root,
        CHANGE,
        "version: 3\nclaims:\n  hello: {statement: it greets, requires: [unit]}\n",
        _execution(
            paths["counter"], paths["marker"], paths["delay"], public_pem(key.public_key()).decode()
        ),
    )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    shared = tmp_path / "shared"
    argv = ["--sign-key", str(key_path), "--issuer", "github-actions", "--publish", str(shared)]
    code, doc = prove_json(root, CHANGE, *argv, capsys=capsys)
    assert code == 0, doc
    [entry] = shared.glob("*/unit.json")
    dev = tmp_path / "dev"
    git(tmp_path, "clone", "-q", str(root), str(dev))
    return {"root": root, "key": key_path, "shared": shared, "entry": entry, "dev": dev, **paths}


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _start(ci: dict[str, Path], *extra: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "changeloop", "prove", CHANGE, "--root", str(ci["dev"])]
    argv += ["--json", "--cache-from", str(ci["shared"]), *extra]
    out = (ci["dev"].parent / "prove.out").open("wb")
    err = (ci["dev"].parent / "prove.err").open("wb")
    with out, err:  # the child holds its own descriptors
        # A child with an address-space limit (before exec): pytest runs no threads here.
        return subprocess.Popen(argv, stdout=out, stderr=err, preexec_fn=_limits)  # noqa: PLW1509


def _finish(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int, dict[str, Any], str, int]:
    """(exit code, the JSON document, stderr, the child's peak memory in KiB).

    The child is reaped with ``wait4`` to read its own peak memory; a hang fails the test.
    """
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            proc.returncode = -9
            pytest.fail(f"prove did not finish within {timeout} s")
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    argv = [str(a) for a in proc.args]  # type: ignore[union-attr]
    base = Path(argv[argv.index("--root") + 1]).parent
    out = (base / "prove.out").read_bytes()
    err = (base / "prove.err").read_text(errors="replace")
    doc = json.loads(out) if out.strip() else {}
    return proc.returncode, doc, err, usage.ru_maxrss


def _unit_ran(doc: dict[str, Any]) -> bool:
    return bool(provider_entry(doc, "unit")["state"] == "ran")


def test_a_fifo_at_ci_entry_is_never_waited_on(ci: dict[str, Path]) -> None:
    entry = ci["entry"]
    entry.unlink()
    os.mkfifo(entry)
    os.mkfifo(entry.parent / "slow.json")  # beside it too
    code, doc, err, _ = _finish(_start(ci), timeout=60)
    assert code == 0 and _unit_ran(doc), (doc, err)
    assert "shared cache: ignored" in err and "FIFO" in err, err


def test_sigterm_ends_prove_promptly_with_a_fifo_in_the_cache(ci: dict[str, Path]) -> None:
    entry = ci["entry"]
    entry.unlink()
    os.mkfifo(entry)
    for published in ci["shared"].glob("*/slow.json"):
        published.unlink()  # slow runs in the clone (and sleeps there)
    ci["delay"].write_text("60")
    ci["marker"].unlink(missing_ok=True)
    proc = _start(ci)
    deadline = time.monotonic() + 30
    while not ci["marker"].exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    started = ci["marker"].exists()
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code, doc, err, _ = _finish(proc, timeout=15)
    assert started, err  # the run got past the FIFO to its providers
    assert code == 130 and doc.get("interrupted") is True, (code, doc, err)
    assert time.monotonic() - sent < 10


def test_a_symlink_to_dev_zero_is_refused_not_followed(ci: dict[str, Path]) -> None:
    entry = ci["entry"]
    entry.unlink()
    entry.symlink_to("/dev/zero")
    code, doc, err, _ = _finish(_start(ci), timeout=60)
    assert code == 0 and _unit_ran(doc), (doc, err)
    assert "shared cache: ignored" in err and "symlink" in err, err


def test_a_300_mb_entry_is_refused_without_reading_it(ci: dict[str, Path]) -> None:
    entry = ci["entry"]
    entry.unlink()
    with entry.open("wb") as f:
        f.truncate(300 * 1024 * 1024)  # sparse: no disk spent
    code, doc, err, peak_kib = _finish(_start(ci), timeout=60)
    assert code == 0 and _unit_ran(doc), (doc, err)
    assert "larger than 4 MiB" in err, err
    assert peak_kib < 200 * 1024, f"peak memory {peak_kib // 1024} MiB"


def test_publish_never_writes_through_a_planted_symlinked_fingerprint_folder(
    ci: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hexdigest = ci["entry"].parent.name
    target = tmp_path / "shared-2"
    target.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (target / hexdigest).symlink_to(elsewhere, target_is_directory=True)
    argv = ["--sign-key", str(ci["key"]), "--issuer", "github-actions", "--publish", str(target)]
    capsys.readouterr()
    from changeloop.cli.main import main

    code = main(["prove", CHANGE, "--root", str(ci["root"]), "--no-cache", "--json", *argv])
    out, err = capsys.readouterr()
    assert code == 0, (out, err)
    assert list(elsewhere.iterdir()) == []
    assert (target / hexdigest).is_symlink()
    assert "not published" in err and "symlink" in err, err
    # The other providers' entries are still published, in real directories.
    others = [p for p in target.iterdir() if p.name != hexdigest]
    assert others and all(p.is_dir() and not p.is_symlink() for p in others)
