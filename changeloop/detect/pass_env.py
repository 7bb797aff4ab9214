"""The variables a runner is known to need beyond the fixed set: derived wiring passes them.

A provider gets only ``PATH``, ``HOME``, ``USER``, ``LANG``, ``LC_*``, ``TZ``,
``TMPDIR``, ``TERM``, ``CI`` and what its wiring names (``changeloop.passenv``).
Some runners find their own installation through a variable of their own: where
a user set it, running without it would look elsewhere (Playwright's browsers,
a rustup toolchain). Derived wiring (and so ``evidence init``) passes those::

    runner_pass_env(provider)   # ("PLAYWRIGHT_BROWSERS_PATH",) for a Playwright run
"""

from __future__ import annotations

from changeloop.model import Provider

__all__ = ["RUNNER_ENV", "runner_pass_env"]

# runner -> variables it reads to find what it runs with (each value counts in the
# fingerprint, so a different browser or toolchain location is a different run)
RUNNER_ENV: dict[str, tuple[str, ...]] = {
    "playwright": ("PLAYWRIGHT_BROWSERS_PATH",),
    "cargo": ("CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN"),
}


def runner_pass_env(provider: Provider) -> tuple[str, ...]:
    """The ``passEnv`` derived wiring gives ``provider``: what its runners need."""
    words = {w.rsplit("/", 1)[-1] for w in provider.command or ()}
    if provider.adapter == "playwright":
        words.add("playwright")
    found = [name for runner, names in RUNNER_ENV.items() if runner in words for name in names]
    return tuple(dict.fromkeys((*provider.pass_env, *found)))
