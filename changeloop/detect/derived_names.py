"""What derived providers are called and where their reports go.

``test`` when the change has one repository, ``test-<repo>`` among several; a
second runner in the same repository adds its own suffix (``test-<repo>-jest``).
"""

from __future__ import annotations

REPORT_DIR = ".changeloop/reports"


def provider_name(base: str, repo: str, single: bool, extra: str | None = None) -> str:
    """``base``, or ``base-<repo>`` among several repositories, then ``-<extra>`` if given."""
    name = base if single else f"{base}-{repo}"
    return f"{name}-{extra}" if extra else name
