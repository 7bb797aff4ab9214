"""A free loopback port for a test's server (one helper; eight tests had their own copy)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on right now (the kernel picks it; a race is possible but rare)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
