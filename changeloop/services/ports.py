"""Is a TCP port already taken, by whom, and is its listener the service's own.

Linux tells us through ``/proc/net/tcp{,6}`` (listening sockets and their
inodes) and ``/proc/<pid>/fd`` (which process holds that inode). Elsewhere, or
when /proc is unreadable, a loopback connect still says *that* the port is
taken, just not by whom.

    holder = port_holder(4173)
    if holder is not None:
        print(holder.describe())   # "port 4173 is in use by pid 812 (python3 -m http.server 4173)"

Readiness counts only an answer from the service itself: :func:`ownership`
says whether every socket listening on the port is held by a process of the
service's process group (or one carrying the run's owner marker in its
environment, as a daemon the service started with ``setsid`` does), and names
the first holder that is not.

    seen = ownership(4173, group=service_pid, marker=b"CHANGELOOP_OWNER=812-4242")
    seen.listening, seen.ours, seen.foreign   # foreign: a PortHolder, or None
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
    return _listening(port) or set()


def _listening(port: int) -> set[str] | None:
    """:func:`listening_inodes`, or None when neither table could be read."""
    found: set[str] = set()
    read = False
    for table in ("tcp", "tcp6"):
        try:
            lines = (_PROC / "net" / table).read_text().splitlines()[1:]
            read = True
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) < 10 or cols[3] != _LISTEN:
                continue
            local_port = int(cols[1].rsplit(":", 1)[1], 16)
            if local_port == port:
                found.add(cols[9])
    return found if read else None


@dataclass(frozen=True)
class Ownership:
    """Who listens on a port, seen from one service.

    ``listening``: something listens there; ``ours``: every listening socket is
    held by the service (its group, or the run's marker); ``foreign``: the first
    holder that is not (pid None: a process changeloop cannot see); ``blind``:
    /proc/net cannot be read, so nothing can be told.
    """

    listening: bool
    ours: bool
    foreign: PortHolder | None = None
    blind: bool = False


def ownership(port: int, *, group: int, marker: bytes | None = None) -> Ownership:
    """Whether the sockets listening on ``port`` belong to process group ``group``."""
    inodes = _listening(port)
    if inodes is None:
        return Ownership(listening=False, ours=False, blind=True)
    if not inodes:
        return Ownership(listening=False, ours=False)
    targets = {f"socket:[{inode}]": inode for inode in inodes}
    left = set(inodes)
    # The service's own group first: the usual answer costs a look at a few processes.
    members, others = _split_by_group(group)
    for pid in members:
        left -= {targets[link] for link in _socket_links(pid) if link in targets}
        if not left:
            return Ownership(listening=True, ours=True)
    for pid in others:
        held = {targets[link] for link in _socket_links(pid) if link in targets}
        if not held & left:
            continue
        if marker is not None and _carries(pid, marker):
            left -= held
            if not left:
                return Ownership(listening=True, ours=True)
            continue
        return Ownership(
            listening=True, ours=False, foreign=PortHolder(port, int(pid), _cmdline(pid))
        )
    return Ownership(listening=True, ours=False, foreign=PortHolder(port))


def _split_by_group(group: int) -> tuple[list[str], list[str]]:
    """Pids (as /proc names) in process group ``group``, and every other pid."""
    members: list[str] = []
    others: list[str] = []
    try:
        names = [p.name for p in _PROC.iterdir() if p.name.isdigit()]
    except OSError:
        return members, others
    for name in sorted(names, key=int):
        try:
            with open(_PROC / name / "stat", "rb") as fh:  # noqa: PTH123 - a hot loop
                data = fh.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        in_group = len(fields) > 2 and fields[2] == str(group).encode()
        (members if in_group else others).append(name)
    return members, others


def _socket_links(pid: str) -> list[str]:
    try:
        fds = list((_PROC / pid / "fd").iterdir())
    except OSError:
        return []
    links = []
    for fd in fds:
        try:
            link = str(fd.readlink())
        except OSError:
            continue
        if link.startswith("socket:"):
            links.append(link)
    return links


def _carries(pid: str, marker: bytes) -> bool:
    try:
        with open(_PROC / pid / "environ", "rb") as fh:  # noqa: PTH123
            environ = fh.read()
    except OSError:
        return False
    return marker in environ.split(b"\0")


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
