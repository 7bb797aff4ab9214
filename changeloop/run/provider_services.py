"""A provider's services as the run sees them: where they start, what they need ready.

The service manager (``changeloop.services``) starts, leases and stops them; the
run must still make their repositories' sandboxes first, and must not trust a
cached pass while a leftover server holds a service's port.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from changeloop.model import Plan, Provider
from changeloop.run.sandboxes import Sandboxes
from changeloop.services import ServiceManager
from changeloop.services.ports import port_holder

__all__ = ["ServiceWorkdirs", "ports_taken", "service_repositories"]


class ServiceWorkdirs(Mapping[str, Path]):
    """Services start in their repository's sandbox, which exists by then."""

    def __init__(self, plan: Plan, boxes: Sandboxes) -> None:
        self._plan = plan
        self._boxes = boxes

    def __getitem__(self, repo: str) -> Path:
        return self._boxes.made(repo) or self._plan.repositories[repo].path

    def __iter__(self) -> Iterator[str]:
        return iter(self._plan.repositories)

    def __len__(self) -> int:
        return len(self._plan.repositories)


def service_repositories(plan: Plan, provider: Provider) -> list[str]:
    """The repositories ``provider``'s services start in (their sandboxes must be ready)."""
    names = (plan.services[s].repository for s in provider.services if s in plan.services)
    return [repo for repo in names if repo is not None and repo in plan.repositories]


def ports_taken(plan: Plan, provider: Provider, services: ServiceManager) -> bool:
    """A leftover server on a service's port is reported even when a cached pass exists.

    A port held by a service this run started is ours, not a leftover.
    """
    for name in provider.services:
        if services.started(name):
            continue
        service = plan.services.get(name)
        port = service.readiness.port if service and service.readiness else None
        if port is not None and port_holder(port) is not None:
            return True
    return False
