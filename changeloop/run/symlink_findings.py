"""Links whose target is not content (outside the repository, under ``openspec/``, ignored),
as warnings on every receipt of a provider there.

What such a link points at is not part of the content identity, so the result
is never reused from the cache (``Fingerprinter.identity_open``); the receipt
says so, naming each link, at most ``MAX_SYMLINK_FINDINGS`` of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from changeloop.masking import Masker
from changeloop.model import Plan
from changeloop.outcome import Finding, Outcome

__all__ = ["MAX_SYMLINK_FINDINGS", "with_symlink_findings"]

MAX_SYMLINK_FINDINGS = 20


def with_symlink_findings(
    outcome: Outcome,
    repos: Sequence[str],
    plan: Plan,
    external_symlinks: Callable[[str], Mapping[str, str]],
    masker: Masker,
) -> Outcome:
    """``outcome`` with one ``external-symlink`` finding per link leaving ``repos``."""
    found = [
        Finding(
            kind="external-symlink",
            message=masker.text(
                f"{repo}: {link} {where}; what it points at is not part of the content"
                " identity, so this result is never reused from the cache"
            ),
            severity="warning",
            file=link,
        )
        for repo in repos
        if repo in plan.repositories
        for link, where in sorted(external_symlinks(repo).items())
    ]
    if not found:
        return outcome
    if len(found) > MAX_SYMLINK_FINDINGS:
        more = len(found) - MAX_SYMLINK_FINDINGS
        found = [
            *found[:MAX_SYMLINK_FINDINGS],
            Finding(
                kind="external-symlink",
                message=f"… and {more} more link(s) whose target is not content",
                severity="warning",
            ),
        ]
    return replace(outcome, findings=(*outcome.findings, *found))
