"""The workspace roots whose state was already checked in this CLI invocation.

Apart from :mod:`~changeloop.workspace.state` so that the CLI can open the scope before a
verb runs without importing what the checks need: ``prove`` starts its no-change check's
git work first (docs/nochange.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

# Roots already accepted in this CLI invocation (None outside one): a prove asked the same
# question four times (one `git ls-files` apiece) on its no-change path.
ACCEPTED: ContextVar[set[str] | None] = ContextVar("changeloop_state_accepted", default=None)


@contextlib.contextmanager
def one_check_per_invocation() -> Iterator[None]:
    """Within the block, :func:`~changeloop.workspace.state.check_state` checks each root once.

    The CLI wraps one verb in it: between its checks only changeloop itself writes
    ``.changeloop/`` (through ``fsio``, never following a link), so asking again adds
    nothing. Outside the block — library callers, tests — every call checks.
    """
    token = ACCEPTED.set(set())
    try:
        yield
    finally:
        ACCEPTED.reset(token)
