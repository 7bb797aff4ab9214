"""Is a TCP port already taken, and by whom (the leftover-server trap, DESIGN.md §5).

Linux tells us through ``/proc/net/tcp{,6}`` (listening sockets and their
inodes) and ``/proc/<pid>/fd`` (which process holds that inode). Elsewhere, or
when /proc is unreadable, a loopback connect still says *that* the port is
taken, just not by whom.

    holder = port_holder(4173)
    if holder is not None:
        print(holder.describe())   # "port 4173 is in use by pid 812 (python3 -m http.server 4173)"
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

_LISTEN = "0A"
_PROC = Path("/proc")


@dataclass(frozen=True)
class PortHolder:
    """Something listening on ``port``; pid/cmdline when the OS tells."""

    port: int
    pid: int | None = None
    cmdline: str | None = None

    def describe(self) -> str:
        if self.pid is None:
            return f"port {self.port} is already in use (the process holding it is not visible)"
        what = f" ({self.cmdline})" if self.cmdline else ""
        return f"port {self.port} is already in use by pid {self.pid}{what}"


def port_holder(port: int, hosts: tuple[str, ...] = ("127.0.0.1", "::1")) -> PortHolder | None:
    """Who listens on ``port`` (any address), or None when it is free."""
    inodes = listening_inodes(port)
    if inodes:
        pid, cmd = _owner(inodes)
        return PortHolder(port, pid, cmd)
    if any(_accepts(host, port) for host in hosts):
        return PortHolder(port)
    return None


def listening_inodes(port: int) -> set[str]:
    """Socket inodes in LISTEN state on ``port`` according to /proc/net/tcp and tcp6."""
    found: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (_PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) < 10 or cols[3] != _LISTEN:
                continue
            local_port = int(cols[1].rsplit(":", 1)[1], 16)
            if local_port == port:
                found.add(cols[9])
    return found


def _owner(inodes: set[str]) -> tuple[int | None, str | None]:
    """The first process with an fd on one of ``inodes``, and its command line."""
    targets = {f"socket:[{inode}]" for inode in inodes}
    try:
        pids = [p.name for p in _PROC.iterdir() if p.name.isdigit()]
    except OSError:
        return None, None
    for pid in sorted(pids, key=int):
        try:
            fds = list((_PROC / pid / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                link = str(fd.readlink())
            except OSError:
                continue
            if link in targets:
                return int(pid), _cmdline(pid)
    return None, None


def _cmdline(pid: str) -> str | None:
    try:
        raw = (_PROC / pid / "cmdline").read_bytes()
    except OSError:
        return None
    parts = (p.decode("utf-8", "replace") for p in raw.split(b"\0") if p)
    text = " ".join(" ".join(part.split()) for part in parts)
    return text[:300] or None


def _accepts(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        try:
            sock.connect((host, port))
        except OSError:  # refused, unreachable, no IPv6: nobody answers there
            return False
        return True
