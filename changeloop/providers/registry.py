"""The one place adapter names map to modules (a literal table, no discovery).

The same keys feed the execution.yaml schema's ``adapter`` enum check and the
CLI's choices. A module is imported when its adapter is first asked for: a plan
of ``command`` providers never imports the browser, mutation or report readers
(a cost at every re-prove's start; bench/README.md). mypy still checks every module against
the ``Adapter`` protocol (the table under ``TYPE_CHECKING``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, cast

from changeloop.providers.base import Adapter

if TYPE_CHECKING:
    from changeloop.providers import (
        command,
        contract_digest,
        external,
        mutation,
        playwright,
        test_discovery,
    )

    _CHECKED: dict[str, Adapter] = {
        "command": command,
        "test-discovery": test_discovery,
        "playwright": playwright,
        "contract-digest": contract_digest,
        "external": external,
        "mutation": mutation,
    }

_MODULES = {
    "command": "changeloop.providers.command",
    "test-discovery": "changeloop.providers.test_discovery",
    "playwright": "changeloop.providers.playwright",
    "contract-digest": "changeloop.providers.contract_digest",
    "external": "changeloop.providers.external",
    "mutation": "changeloop.providers.mutation",
}


class _Adapters(Mapping[str, Adapter]):
    """Adapter name -> module, imported on first use (a KeyError for an unknown name)."""

    def __init__(self, modules: Mapping[str, str]) -> None:
        self._modules = dict(modules)
        self._loaded: dict[str, Adapter] = {}

    def __getitem__(self, name: str) -> Adapter:
        if name not in self._loaded:
            module = importlib.import_module(self._modules[name])
            self._loaded[name] = cast(Adapter, module)
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __contains__(self, name: object) -> bool:
        return name in self._modules


ADAPTERS: Mapping[str, Adapter] = _Adapters(_MODULES)


def get(name: str) -> Adapter | None:
    return ADAPTERS.get(name)
