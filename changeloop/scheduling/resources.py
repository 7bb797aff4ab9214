"""Resource bookkeeping for the scheduler: RW locks per repository, mutexes otherwise.

docs/scheduling.md: ``workspace-read:<repo>`` is shared, ``workspace-write:<repo>`` is
exclusive against every reader and writer of that repository, and any other
name is a mutex; ``service-port:<n>`` (the users of a service) is a shared
claim on the lock ``port:<n>`` names. A claim's ``mode`` alone says whether it
is shared (``read``) or exclusive (``write``, ``mutex``), whatever its key. A
job takes all its resources at once or none (no hold-and-wait, so no
deadlock), and once an exclusive claim has been refused, new readers of that
lock are refused too, so a stream of readers cannot starve it.

The table is synchronous on purpose: the scheduler decides what to start in
one step, without awaiting, so "check then take" is atomic.

    table = ResourceTable()
    claims = parse_resources(["workspace-read:api", "port:3000"])
    if table.blocker(claims) is None:
        table.acquire(claims)
        ...
        table.release(claims)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Mode = Literal["read", "write", "mutex"]
READ_PREFIX = "workspace-read:"
WRITE_PREFIX = "workspace-write:"
# The users of a service share its port; anything naming ``port:<n>`` itself excludes them all.
SERVICE_PORT_PREFIX = "service-port:"


@dataclass(frozen=True)
class Claim:
    """One lock a job needs: ``key`` names the lock, ``name`` is what the user wrote."""

    key: str
    mode: Mode
    name: str


def parse_resources(resources: Iterable[str]) -> tuple[Claim, ...]:
    """Normalise a job's resources: one claim per lock, exclusive dominating shared."""
    claims: dict[str, Claim] = {}
    for name in resources:
        if name.startswith(READ_PREFIX):
            claim = Claim("workspace:" + name[len(READ_PREFIX) :], "read", name)
        elif name.startswith(WRITE_PREFIX):
            claim = Claim("workspace:" + name[len(WRITE_PREFIX) :], "write", name)
        elif name.startswith(SERVICE_PORT_PREFIX):
            claim = Claim("mutex:port:" + name[len(SERVICE_PORT_PREFIX) :], "read", name)
        else:
            claim = Claim("mutex:" + name, "mutex", name)
        held = claims.get(claim.key)
        if held is None or (held.mode == "read" and claim.mode != "read"):
            claims[claim.key] = claim
    return tuple(sorted(claims.values(), key=lambda c: c.key))


def host_wide_names(claims: Iterable[Claim], resources: Iterable[str] = ()) -> tuple[str, ...]:
    """The names held across processes on the host: every claim but the workspace ones.

    A service's users (``service-port:<n>``) hold none themselves: the service
    holds ``port:<n>`` host-wide for its life (``changeloop.services``), so a
    job that uses the service and names ``port:<n>`` too leaves that one to it.
    """
    served = {
        "port:" + r[len(SERVICE_PORT_PREFIX) :]
        for r in resources
        if r.startswith(SERVICE_PORT_PREFIX)
    }
    names = (c.key[len("mutex:") :] for c in claims if c.mode == "mutex")
    return tuple(n for n in names if n not in served)


class ResourceTable:
    """Who holds what, and which repositories have a writer waiting."""

    def __init__(self) -> None:
        self._readers: dict[str, int] = {}
        self._exclusive: set[str] = set()  # keys held by a writer or a mutex holder
        self._writers_waiting: dict[str, int] = {}

    def blocker(self, claims: Iterable[Claim]) -> Claim | None:
        """The first claim that cannot be granted now, or None when all can."""
        for claim in claims:
            if claim.key in self._exclusive:
                return claim
            if claim.mode == "read":
                if self._writers_waiting.get(claim.key, 0):
                    return claim
            elif self._readers.get(claim.key, 0):
                return claim
        return None

    def acquire(self, claims: Iterable[Claim]) -> None:
        """Take every claim; the caller has checked :meth:`blocker` in the same step."""
        for claim in claims:
            if claim.mode == "read":
                self._readers[claim.key] = self._readers.get(claim.key, 0) + 1
            else:
                self._exclusive.add(claim.key)

    def release(self, claims: Iterable[Claim]) -> None:
        for claim in claims:
            if claim.mode == "read":
                left = self._readers[claim.key] - 1
                if left:
                    self._readers[claim.key] = left
                else:
                    del self._readers[claim.key]
            else:
                self._exclusive.discard(claim.key)

    def writer_waits(self, key: str) -> None:
        """An exclusive claim (write or mutex) was refused ``key``: new readers of it wait."""
        self._writers_waiting[key] = self._writers_waiting.get(key, 0) + 1

    def writer_done_waiting(self, key: str) -> None:
        left = self._writers_waiting.get(key, 0) - 1
        if left > 0:
            self._writers_waiting[key] = left
        else:
            self._writers_waiting.pop(key, None)

    def writers_waiting(self, key: str) -> int:
        return self._writers_waiting.get(key, 0)

    def readers(self, key: str) -> int:
        return self._readers.get(key, 0)

    def held_exclusively(self, key: str) -> bool:
        return key in self._exclusive
