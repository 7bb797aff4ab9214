"""The one place adapter names map to modules (a literal dict, no discovery).

The same keys feed the execution.yaml schema's ``adapter`` enum check and the
CLI's choices.
"""

from __future__ import annotations

from changeloop.providers import (
    command,
    contract_digest,
    external,
    mutation,
    playwright,
    test_discovery,
)
from changeloop.providers.base import Adapter

ADAPTERS: dict[str, Adapter] = {
    "command": command,
    "test-discovery": test_discovery,
    "playwright": playwright,
    "contract-digest": contract_digest,
    "external": external,
    "mutation": mutation,
}


def get(name: str) -> Adapter | None:
    return ADAPTERS.get(name)
