"""Where a preflight problem points: the marks the plan carries from its YAML files.

The loader kept every key's line and column (``config/yamlio.py``); preflight
never re-reads a file, it asks the plan's marks.
"""

from __future__ import annotations

from changeloop.errors import Location
from changeloop.model import Plan, Provider, Service
from changeloop.plan import display_path


class Locator:
    """The marks the plan carries from its YAML files (never re-read), so checks point at lines."""

    def __init__(self, plan: Plan) -> None:
        self.evidence = plan.evidence.marks
        self.execution = plan.execution.marks if plan.execution else None
        self.evidence_shown = display_path(plan.root, plan.evidence.path)

    def provider(self, provider: Provider, *keys: str | int, key: bool = False) -> Location | None:
        if provider.origin == "configured" and self.execution is not None:
            return self.execution.location(("providers", provider.name, *keys), key=key or not keys)
        return provider.location

    def service(self, service: Service, *keys: str | int, key: bool = False) -> Location | None:
        if self.execution is not None:
            return self.execution.location(("services", service.name, *keys), key=key or not keys)
        return service.location

    def in_evidence(self, *keys: str | int, key: bool = False) -> Location:
        if self.evidence is None:
            return Location(self.evidence_shown)
        return self.evidence.location(keys, key=key)

    def in_execution(self, *keys: str | int, key: bool = False) -> Location | None:
        return self.execution.location(keys, key=key) if self.execution else None
