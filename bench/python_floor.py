"""The least a Python program does per provider for `prove`'s files (bench/scheduler.py's floor).

    python bench/python_floor.py DIR N SLOTS

Runs ``true`` N times, SLOTS at a time, and for each one leaves what a run of
changeloop leaves on disk: a directory of its own, a log file and a stdout
file (``O_NOFOLLOW``), and an Ed25519-signed in-toto statement in a DSSE
envelope written atomically under the run and under ``latest/``, with one
``syncfs`` at the end instead of per-file fsyncs. It checks nothing else: no
configuration, fingerprints, secret masking, timeouts, process-group ending,
services, run record or progress. Written with no changeloop import, in one
flat loop (pidfds in a selector, no tasks), so the ratio it prints against make
is what any Python implementation of the same layout pays at least; the gap
from there to ``changeloop prove`` is the cost of its checks and its layers.
"""

from __future__ import annotations

import base64
import ctypes
import hashlib
import json
import os
import selectors
import shutil
import sys
import time
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

PAYLOAD_TYPE = "application/vnd.in-toto+json"
FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def write_new(path: str, data: bytes) -> None:
    fd = os.open(path, FLAGS, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def envelope(key: Ed25519PrivateKey, index: int, status: int, log_sha: str) -> bytes:
    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "workspace", "digest": {"sha256": log_sha}}],
        "predicateType": "https://changeloop.dev/evidence/v1",
        "predicate": {"provider": f"p{index}", "exitCode": status, "logSha256": log_sha},
    }
    payload = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
    kind = PAYLOAD_TYPE.encode()
    pae = b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)
    signature = base64.b64encode(key.sign(pae)).decode()
    doc = {
        "payload": base64.b64encode(payload).decode(),
        "payloadType": PAYLOAD_TYPE,
        "signatures": [{"keyid": "floor", "sig": signature}],
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def main(root: Path, count: int, slots: int) -> int:
    shutil.rmtree(root, ignore_errors=True)
    latest = root / "latest"
    latest.mkdir(parents=True)
    key = Ed25519PrivateKey.generate()
    program = shutil.which("true") or "/bin/true"
    env = dict(os.environ)
    selector = selectors.DefaultSelector()
    todo = list(range(count))
    running = failed = 0
    empty_sha = hashlib.sha256(b"").hexdigest()

    def start(index: int) -> None:
        folder = f"{root}/p{index}"
        os.mkdir(folder)
        log = os.open(f"{folder}/p{index}.log", FLAGS, 0o644)
        out = os.open(f"{folder}/p{index}.stdout", FLAGS, 0o644)
        actions = [(os.POSIX_SPAWN_DUP2, out, 1), (os.POSIX_SPAWN_DUP2, log, 2)]
        pid = os.posix_spawn(program, [program], env, file_actions=actions, setsid=True)
        os.close(log)
        os.close(out)
        selector.register(os.pidfd_open(pid), selectors.EVENT_READ, (index, pid, folder))

    def finish(index: int, pid: int, folder: str) -> int:
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        data = envelope(key, index, status, empty_sha)
        for target in (f"{folder}/p{index}.noop.json", f"{latest}/p{index}.noop.json"):
            write_new(target + ".tmp", data)
            os.rename(target + ".tmp", target)
        return status

    while todo or running:
        while running < slots and todo:
            start(todo.pop())
            running += 1
        for ready, _ in selector.select():
            selector.unregister(ready.fd)
            os.close(ready.fd)
            failed += finish(*ready.data) != 0
            running -= 1
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        libc.syncfs(fd)  # every file and name of the run durable at once
    finally:
        os.close(fd)
    return 1 if failed else 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
    print(f"{time.perf_counter() - started:.3f}")
    sys.exit(code)
