"""What derived providers are called, where their reports go, and a derived test provider.

``test`` when the change has one repository, ``test-<repo>`` among several; a
second runner in the same repository adds its own suffix (``test-<repo>-jest``).
Only the first test provider of a lone repository gets its discovery receipt
implicitly; every other one names its ``discoveryProvider``.
"""

from __future__ import annotations

from collections.abc import Callable

from changeloop.model import Confidence, Provider

REPORT_DIR = ".changeloop/reports"


def provider_name(base: str, repo: str, single: bool, extra: str | None = None) -> str:
    """``base``, or ``base-<repo>`` among several repositories, then ``-<extra>`` if given."""
    name = base if single else f"{base}-{repo}"
    return f"{name}-{extra}" if extra else name


def test_provider(
    repo: str,
    single: bool,
    extra: str | None,
    command: Callable[[str], tuple[tuple[str, ...], str | None]],
    confidence: Confidence,
    *,
    format: str | None = None,
    depends_on: tuple[str, ...] = (),
    workdir: str | None = None,
    env: tuple[tuple[str, str], ...] = (),
) -> Provider:
    """A derived ``test-discovery`` provider; ``extra`` None marks the repository's first.

    ``command`` gives the runner's (argv, report path) for a report stem under
    :data:`REPORT_DIR` named after the provider.
    """
    name = provider_name("test", repo, single, extra)
    argv, report = command(f"{REPORT_DIR}/{name}")
    return Provider(
        name=name,
        adapter="test-discovery",
        capability="test",
        repository=repo,
        command=argv,
        report=report,
        format=format,
        discovery_provider=None
        if single and extra is None
        else provider_name("discovery", repo, single, extra),
        depends_on=depends_on,
        workdir=workdir,
        env=dict(env),
        origin="derived",
        confidence=confidence,
    )
