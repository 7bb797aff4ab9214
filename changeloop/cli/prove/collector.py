"""The cyclic garbage collector around a ``prove``: out of the way of start-up work.

Loading a 1000-provider plan allocates ~100,000 objects that all live until the
run ends; the collector ran ~120 times meanwhile (~18 ms of ~85), traversing
them and every imported module again, and found nothing to free. So:

- :func:`paused` holds it off while the plan loads (bounded work: a file of at most
  4 MiB, aliases capped), then freezes what was built (``gc.freeze``: the permanent
  generation, which no collection traverses; refcounting still frees it);
- :func:`before_run` freezes the rest of start-up and makes the run's young
  collections rarer, so they traverse only what the run allocates.

Both act only in a process of changeloop's own (``entry``). In-process callers
(tests, tools embedding ``main``) keep their collector as it was: freezing their
heap would hide their own garbage from it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["before_run", "own_process", "paused"]

# Allocations between two young collections during the run (CPython's default: 700).
RUN_THRESHOLD = 10_000
_OWN: list[bool] = []


def own_process() -> None:
    """Called by ``entry()``: this process is changeloop's alone."""
    _OWN.append(True)


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """In a process of our own, no cyclic collection within the block; what it built is
    then frozen (else the first collection after it would traverse all of it at once)."""
    if not _OWN or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def before_run() -> None:
    """Start-up's heap frozen and young collections made rarer, in a process of our own."""
    if not _OWN:
        return
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(RUN_THRESHOLD, young), middle, old)
