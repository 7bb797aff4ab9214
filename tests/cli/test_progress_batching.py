"""``board.Progress`` writes its lines in batches, yet never holds one back for long.

A run of many short providers wrote two lines per provider, each flushed on its
own; the lines are now written at most every ``FLUSH_S``. Checked on a real
event loop with a stream that records each write: fewer writes than lines, a
line written by the timer even when nothing else happens, every line once and in
order, and the rest written by ``flush()``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import anyio
from stream_helpers import RecordingStream

from changeloop.cli.board import FLUSH_S, Progress
from changeloop.model import Plan
from changeloop.records import RunEvent


class _Plan:
    """What Progress reads of a plan: its providers."""

    def __init__(self, count: int) -> None:
        self.providers = {f"p{i}": None for i in range(count)}


def _progress(count: int, out: RecordingStream) -> Progress:
    plan: Plan = _Plan(count)  # type: ignore[assignment]
    return Progress(plan, out)


def test_many_events_are_few_writes_and_every_line_in_order() -> None:
    out = RecordingStream()
    progress = _progress(500, out)

    async def main() -> None:
        for i in range(499):
            progress.event(RunEvent(f"p{i}", "started"))
            progress.event(RunEvent(f"p{i}", "finished", "ok"))
        await anyio.sleep(FLUSH_S * 3)

    anyio.run(main)
    lines = out.getvalue().splitlines()
    assert len(lines) == 998
    assert [line.split("]", 1)[1].split()[1] for line in lines[:4]] == ["p0", "p0", "p1", "p1"]
    assert "(499/500)" in lines[-1]
    assert len(out.writes) < 50, len(out.writes)  # batched, not 998 writes


def test_a_lone_line_is_written_by_the_timer_without_further_events() -> None:
    out = RecordingStream()
    progress = _progress(3, out)
    seen: list[str] = []

    async def main() -> None:
        progress.event(RunEvent("p0", "started"))  # the first line goes at once
        progress.event(RunEvent("p1", "started"))  # within FLUSH_S: held for the timer
        start = time.monotonic()
        while "p1" not in out.getvalue() and time.monotonic() - start < 5:
            await anyio.sleep(0.005)
        seen.append(out.getvalue())

    anyio.run(main)
    assert "p0 running" in seen[0] and "p1 running" in seen[0]


def test_the_last_provider_and_flush_write_what_is_left() -> None:
    out = RecordingStream()
    progress = _progress(2, out)

    async def main() -> None:
        progress.event(RunEvent("p0", "finished", "ok"))
        progress.event(RunEvent("p1", "started"))
        assert "p1" not in out.getvalue()  # held for a moment
        progress.event(RunEvent("p1", "finished", "ok"))  # the last one: written now
        assert "(2/2)" in out.getvalue()

    anyio.run(main)
    progress.event(RunEvent("p1", "waiting", "port:3000"))  # outside a loop: at once
    assert out.getvalue().endswith("waiting for port:3000\n")
    progress.flush()  # nothing left: no empty write
    assert out.writes[-1].endswith("port:3000\n")


def test_prove_shows_every_provider_once_in_its_progress(tmp_path: Path) -> None:
    """End to end: a real prove's progress on stderr has both lines of every provider."""
    from prove_helpers import make_change, make_repo

    root = make_repo(tmp_path / "ws", {"README.md": "x\n"})
    providers = "".join(
        f'  p{i}: {{adapter: command, capability: noop, command: ["true"]}}\n' for i in range(40)
    )
    make_change(root, "c", "version: 3\nrequires: [noop]\n", f"version: 1\nproviders:\n{providers}")
    done = _prove(root)
    assert done.returncode == 0, done.stderr
    for i in range(40):
        assert done.stderr.count(f"▶ p{i} running\n") == 1, done.stderr
        assert done.stderr.count(f"■ p{i} finished: pass (") == 1


def test_a_finished_line_says_what_the_receipts_say(tmp_path: Path) -> None:
    """Audit: an inconclusive provider printed "finished: failed", and an external provider
    that found no receipt "finished: ok"; each line now says what its receipts say, in the
    receipts' own words (pass, fail, inconclusive)."""
    from prove_helpers import make_change, make_repo

    pub = {"openspec/changes/c/ci.pub": _public_pem()}  # beside execution.yaml
    root = make_repo(tmp_path / "ws", {"README.md": "x\n", **pub})
    execution = (
        "version: 1\nproviders:\n"
        '  good: {adapter: command, capability: a, command: ["true"]}\n'
        '  bad: {adapter: command, capability: b, command: ["false"]}\n'
        # exits 0 with a stdout that is no runner envelope: inconclusive
        '  odd: {adapter: command, capability: c, command: ["echo", "hi"], envelope: true}\n'
        "  review: {adapter: external, capability: review,"
        " ci: {issuer: ci, publicKeyFile: ci.pub}}\n"
    )
    make_change(root, "c", "version: 3\nrequires: [a, b, c, review]\n", execution)
    done = _prove(root)
    assert done.returncode == 1, done.stderr
    for name, word in (("good", "pass"), ("bad", "fail"), ("odd", "inconclusive")):
        assert f"■ {name} finished: {word} (" in done.stderr, done.stderr
    assert "■ review finished: no receipt (" in done.stderr, done.stderr


def _public_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    public = Ed25519PrivateKey.generate().public_key()
    pem = public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return pem.decode()


def _prove(root: Path) -> subprocess.CompletedProcess[str]:
    """``prove c`` as a user runs it (a process of its own, stderr not a terminal)."""
    from repo_paths import REPO_ROOT

    return subprocess.run(
        [sys.executable, "-m", "changeloop", "prove", "c", "--root", str(root), "--no-cache"],
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
