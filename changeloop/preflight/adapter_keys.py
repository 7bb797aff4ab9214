"""Which provider keys each adapter reads, and a warning for a key only another adapter reads.

Example: a ``command`` provider with ``minimum: 50`` (a test-discovery key) proves as
if the line were not there; the user meant something by it, so preflight says so::

    execution.yaml:7:5: provider 'test' (adapter command) has key 'minimum', which only
      test-discovery reads; command ignores it
      fix: remove it, or use the adapter that reads it; command uses: adapter, …, envelope

A warning, not a refusal: configurations that ran before keep running. One table,
read without importing an adapter (a re-prove of command providers imports none of
the others); tests/cli/test_misplaced_keys.py keeps it equal to the schema's keys.
"""

from __future__ import annotations

from collections.abc import Iterable

from changeloop.errors import Problem
from changeloop.model import Plan
from changeloop.preflight.locate import Locator

# Keys every adapter accepts (docs/execution-yaml.md), in the docs' order.
COMMON = (
    "adapter",
    "repository",
    "command",
    "timeoutMs",
    "env",
    "envFrom",
    "passEnv",
    "resources",
    "dependsOn",
    "services",
    "inputs",
    "artifacts",
    "claims",
    "capability",
)
COMMON_KEYS = frozenset(COMMON)

# The keys only that adapter reads (its module in changeloop/providers/ reads them).
ADAPTER_KEYS: dict[str, frozenset[str]] = {
    "command": frozenset({"envelope", "workdir"}),
    "test-discovery": frozenset({"report", "format", "minimum", "discoveryProvider", "workdir"}),
    "playwright": frozenset({"report", "project", "outputs", "inputMode", "allowFlaky", "workdir"}),
    "mutation": frozenset({"threshold", "maxMutants"}),
    "contract-digest": frozenset({"contract"}),
    "external": frozenset({"ci", "authority", "receipts", "maxAge", "accepts"}),
}

# Keys another check already refuses on the wrong adapter (one message is enough).
REFUSED_ELSEWHERE = frozenset({"accepts"})


def uses(adapter: str) -> list[str]:
    """Every key ``adapter`` reads, common ones first, in the order the docs list them."""
    own = ADAPTER_KEYS.get(adapter, frozenset())
    return [*COMMON, *sorted(own)]


def misplaced_keys(plan: Plan) -> Iterable[Problem]:
    """``key_not_read``: a key the user wrote that the provider's adapter ignores."""
    at = Locator(plan)
    for p in plan.providers.values():
        own = ADAPTER_KEYS.get(p.adapter)
        if own is None:
            continue  # an unknown adapter is preflight's refusal, not a warning
        for key in sorted(p.keys - COMMON_KEYS - own - REFUSED_ELSEWHERE):
            owners = sorted(a for a, keys in ADAPTER_KEYS.items() if key in keys)
            if not owners:
                continue  # not a provider key at all: the schema refuses it
            yield Problem(
                "key_not_read",
                f"provider {p.name!r} (adapter {p.adapter}) has key {key!r}, which only "
                f"{' and '.join(owners)} reads; {p.adapter} ignores it",
                at.provider(p, key, key=True),
                fix=f"remove {key!r}, or use the adapter that reads it; {p.adapter} uses: "
                + ", ".join(uses(p.adapter)),
                providers=(p.name,),
            )
