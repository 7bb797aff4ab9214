"""Shared pieces of the engine tests: a process tree that tries hard to survive.

``write_tree(tmp)`` writes ``tree.py``: run as ``python tree.py READY MODE`` it
starts a grandchild that ignores SIGTERM, listens on 127.0.0.1 and keeps the
inherited stdout open, writes ``{"parent": pid, "grandchild": pid, "port": n}``
to READY, then either sleeps (MODE ``sleep``) or exits 1 (MODE ``fail``).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

TREE = r'''
import json, os, signal, socket, subprocess, sys, time
ready, mode = sys.argv[1], sys.argv[2]
grand = r"""
import signal, socket, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True)
while True:
    time.sleep(1)
"""
p = subprocess.Popen([sys.executable, "-c", grand], stdout=subprocess.PIPE)
port = int(p.stdout.readline())
# Hand our own stdout to nobody else: the grandchild keeps the pipe it inherited
# (stderr is shared with us, so it holds changeloop's pipe open too).
if mode != "fail":  # before READY: whoever reads it may send SIGTERM at once
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
tmp = ready + ".tmp"
with open(tmp, "w") as fh:
    json.dump({"parent": os.getpid(), "grandchild": p.pid, "port": port}, fh)
os.replace(tmp, ready)
print("tree ready", flush=True)
if mode == "fail":
    sys.exit(1)
while True:
    time.sleep(1)
'''


def write_tree(directory: Path) -> Path:
    path = directory / "tree.py"
    path.write_text(TREE)
    return path


def tree_argv(directory: Path, mode: str) -> tuple[list[str], Path]:
    ready = directory / "ready.json"
    return [sys.executable, str(write_tree(directory)), str(ready), mode], ready


def wait_ready(ready: Path, timeout: float = 20.0) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while not ready.exists():
        if time.monotonic() > deadline:
            raise AssertionError("process tree never became ready")
        time.sleep(0.02)
    data: dict[str, int] = json.loads(ready.read_text())
    return data


def pid_alive(pid: int) -> bool:
    """True for a live, non-zombie process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def port_listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def assert_tree_gone(info: dict[str, int]) -> None:
    """Nothing of the tree survives: no process, no listening port.

    Checked at once, without waiting: the caller has returned, so the group
    must already be gone.
    """
    survivors = {k: info[k] for k in ("parent", "grandchild") if pid_alive(info[k])}
    assert not survivors, f"processes survived: {survivors}"
    assert not port_listening(info["port"]), f"port {info['port']} still listening"


def env() -> dict[str, str]:
    return dict(os.environ)
