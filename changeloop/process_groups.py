"""Ending a process group for good: TERM, a grace period, then KILL.

A group is gone only when none of its members is alive (zombies excepted):
``killpg(pgid, 0)`` alone also succeeds for zombies nobody reaped.
"""

from __future__ import annotations

import os
import signal
import time

import anyio


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a member changed uid; nothing we can do
        return True
    return True


def group_alive(pgid: int) -> bool:
    """True while a non-zombie process is in the group.

    ``killpg(pgid, 0)`` also succeeds for zombies nobody has reaped yet (a
    container's PID 1 may never reap), so on Linux we look in /proc.
    """
    if not signal_group(pgid, 0):
        return False
    try:
        entries = os.scandir("/proc")
    except OSError:  # pragma: no cover - not Linux
        return True
    with entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as fh:  # noqa: PTH123 - hot loop
                    data = fh.read()
            except OSError:
                continue
            fields = data[data.rfind(b")") + 2 :].split()
            if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                return True
    return False


async def end_group(pgid: int, grace_s: float) -> bool:
    """SIGTERM the group, wait up to ``grace_s`` for it to empty, then SIGKILL.

    Returns True when something was still there to signal. Polls with a short,
    growing interval so the common case (nothing left) costs one syscall.
    """
    if not signal_group(pgid, signal.SIGTERM):
        return False
    deadline = time.monotonic() + grace_s
    delay = 0.001
    killed_at: float | None = None
    while group_alive(pgid):
        now = time.monotonic()
        if now >= deadline:
            signal_group(pgid, signal.SIGKILL)  # again on each pass: members may fork
            killed_at = killed_at or now
            if now - killed_at > 10:  # pragma: no cover - uninterruptible sleep (D state)
                break
        await anyio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return True
