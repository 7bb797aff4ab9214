"""One envelope's checks, in order: signature and shape, key scope, content, wiring.

Example::

    outcome = check(plan, envelope, data, keys, Trees(plan), scope=None)
    isinstance(outcome, Kept)      # else a SetAside saying which check refused it

A receipt counts only when every subject tree equals the current content
identity *in the receipt's own sandbox mode* (worktree ⇒ tracked files only,
else tracked + untracked) and its wiring digest equals the current wiring of
the provider that made it (docs/threat-model.md). A pass older than the ``maxAge`` of
the external provider that takes it counts as the fail ``prove`` would write
(:mod:`~changeloop.gate.freshness`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from changeloop.fingerprints.wiring import wiring_digest
from changeloop.gate.changed import changed_paths
from changeloop.gate.freshness import committed_expiry, workspace_expiry
from changeloop.gate.records import Kept, ReadEnvelope, SetAside
from changeloop.gate.rejudge import rejudged
from changeloop.gate.trust import SIGN_OFF_ADAPTERS, Scope
from changeloop.git.identity import content_identity
from changeloop.model import Plan, Provider
from changeloop.signing.dsse import VerificationError, loads_strict, parse_envelope
from changeloop.signing.verify import Expectation, Trusted, verify_envelope
from changeloop.verdict import ReceiptView, failures_of

MAX_ENVELOPE_BYTES = 4 * 1024 * 1024


class Trees:
    """Current content identities, computed once per repository and sandbox mode."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.by_mode: dict[bool, dict[str, str]] = {}
        self.diffs: dict[tuple[str, str, str], str | None] = {}
        self.links: dict[tuple[str, str], dict[str, str]] = {}

    def tree(self, repo: str, *, include_untracked: bool) -> str | None:
        per = self.by_mode.setdefault(include_untracked, {})
        if repo not in per:
            repository = self.plan.repositories.get(repo)
            if repository is None:
                return None
            ident = content_identity(repository.path, include_untracked=include_untracked)
            per[repo] = ident.tree
        return per[repo]

    def open_links(self, repo: str, *, include_untracked: bool) -> dict[str, str]:
        """Links of the repository's current content whose target is no content."""
        tree = self.tree(repo, include_untracked=include_untracked)
        repository = self.plan.repositories.get(repo)
        if tree is None or repository is None:
            return {}
        key = (repo, tree)
        if key not in self.links:
            from changeloop.fingerprints.fingerprint import InputsIndex, external_symlinks  # noqa: PLC0415 - only the open-links check needs the fingerprint model

            links = InputsIndex(repository.path, tree=tree).symlinks()
            self.links[key] = external_symlinks(repository.path, links) if links else {}
        return self.links[key]

    def changes(self, repo: str, made: str, now: str) -> str | None:
        """The paths that differ between two trees of ``repo`` (once per pair)."""
        key = (repo, made, now)
        if key not in self.diffs:
            repository = self.plan.repositories.get(repo)
            found = changed_paths(repository.path, made, now) if repository else None
            self.diffs[key] = found
        return self.diffs[key]


def current_wiring(plan: Plan, provider: Provider) -> str:
    """The wiring digest this checkout's plan gives ``provider`` (docs/threat-model.md)."""
    return wiring_digest(plan, provider)


def plan_provider(plan: Plan, name: str) -> Provider | None:
    """The planned provider that issues receipts under ``name`` (a discovery alias too)."""
    if name in plan.providers:
        return plan.providers[name]
    for provider in plan.providers.values():
        if provider.discovery_provider == name:
            return provider
    return None


def unauthenticated_hint(data: bytes) -> tuple[str | None, tuple[str, ...]]:
    """Capability and repositories an unverifiable envelope *claims*: used only to say
    which claims it would have spoken for, never to credit anything."""
    try:
        payload = loads_strict(parse_envelope(data).payload, "payload")
        ext = payload["predicate"]["changeloop"]
        capability = ext.get("capability")
        repos = tuple(str(r) for r in (ext.get("repositories") or {}))
        return (capability if isinstance(capability, str) else None), repos
    except (VerificationError, KeyError, TypeError, AttributeError, RecursionError):
        return None, ()


def check(
    plan: Plan,
    env: ReadEnvelope,
    data: bytes,
    keys: Sequence[Trusted],
    trees: Trees,
    *,
    scope: Scope | None = None,
    now: datetime | None = None,
    fingerprint: Callable[[Mapping[str, Any]], str | None] | None = None,
) -> Kept | SetAside:
    """Keep the envelope, or set it aside with the first check that refused it.

    ``now``: the time ``maxAge`` is measured against (default: the clock).
    ``fingerprint``: for a receipt this workspace made, its provider's fingerprint as a
    run would compute it now (``changeloop.run.current``); a different one is
    ``stale-environment``.
    """
    if len(data) > MAX_ENVELOPE_BYTES:
        return SetAside(env, "unverified", f"{env.uri} is larger than 4 MiB; refused", None)
    try:
        verified = verify_envelope(data, keys, Expectation(change=plan.change.id))
    except VerificationError as exc:
        capability, repos = unauthenticated_hint(data)
        message = f"{env.uri}: {exc.check} check failed: {exc.reason}"
        if exc.check == "signature" and "not a trusted key" in exc.reason:
            # Which key to pass, not "prove again": the receipt may be fine, signed elsewhere.
            message += (
                "; pass that key's public half with --public-key PEM (for receipts of "
                "`prove --sign-key KEY`, the .pub `changeloop keygen` wrote beside KEY)"
            )
        return SetAside(env, "unverified", message, capability, repos)
    except RecursionError:
        return SetAside(env, "unverified", f"{env.uri} nests too deeply; refused", None)
    ext = verified.extension
    capability = str(ext["capability"])
    repos = tuple(sorted(ext["repositories"]))
    what = f"{env.uri} ({ext['provider']}/{capability})"
    if scope is not None:
        refused = scope.refusal(verified, what)
        if refused is not None:  # verified, but addressed to no one here: ignored, not fatal
            return SetAside(env, "unverified", refused, capability, repos, fatal=False)
    stale = content_problem(ext, repos, trees, what)
    if stale is not None:
        return SetAside(env, "stale-content", stale, capability, repos)
    stale = open_problem(ext, repos, trees, what)
    if stale is not None:
        return SetAside(env, "stale-content", stale, capability, repos)
    # Wiring: how the receipt was made must still be how this checkout would make it.
    stale = wiring_problem(plan, ext, what)
    if stale is not None:
        return SetAside(env, "stale-wiring", stale, capability, repos)
    if fingerprint is not None:
        current = fingerprint(ext)
        if current is not None and current != ext.get("fingerprint"):
            return SetAside(env, "stale-environment", environment_message(what), capability, repos)
    citations = dict(ext.get("citations") or {})
    view = ReceiptView(
        provider=str(ext["provider"]),
        capability=capability,
        status=verified.status,  # type: ignore[arg-type]
        repositories=repos,
        reason=ext.get("reason"),
        # judged again by the claim policy of now (an archetype may have changed)
        claims=rejudged(plan, str(ext["provider"]), dict(ext.get("claims") or {}), citations),
        input_mode=ext.get("inputMode"),
        citations=citations,
        failures=_failures(verified.statement, ext),
    )
    # maxAge: an expired pass weighs as the fail prove's external provider would write now.
    now = now or datetime.now(UTC)
    if scope is not None:
        expired = committed_expiry(scope.admitting(verified), ext, env.uri, now)
    else:
        expired = workspace_expiry(plan, ext, now)
    if expired is not None:
        view = dataclasses.replace(view, status="fail", reason=expired, claims={})
    return Kept(env, verified, view)


def _failures(statement: Mapping[str, Any], ext: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The failed tests a verified receipt names, each with its one-line message."""
    named = statement.get("predicate", {}).get("failedTests")
    tests = [str(t) for t in named] if isinstance(named, list) else []
    findings = ext.get("findings")
    found = [f for f in findings if isinstance(f, dict)] if isinstance(findings, list) else []
    return failures_of(tests, found) if tests else ()


def environment_message(what: str) -> str:
    return (
        f"{what} was made in an environment that is not this one: its content and wiring "
        "hold, but a run now would compute another fingerprint (an executable, what is "
        "installed, a variable the provider gets, or an upstream provider changed) — prove "
        "again"
    )


def open_problem(
    ext: Mapping[str, Any], repos: Sequence[str], trees: Trees, what: str
) -> str | None:
    """A link of a subject repository whose target is no content (outside it, under
    ``openspec/``, ignored): gate cannot tell whether what it points at changed."""
    untracked = ext.get("sandbox") != "worktree"
    for repo in repos:
        found = trees.open_links(repo, include_untracked=untracked)
        if found:
            link, where = sorted(found.items())[0]
            return (
                f"{what} covers repository {repo!r}, whose {link} {where}: what it points at "
                "is not part of the content identity, so no receipt speaks for it later — "
                "prove again"
            )
    return None


def content_problem(
    ext: Mapping[str, Any], repos: Sequence[str], trees: Trees, what: str
) -> str | None:
    """Each subject against the current tree in the receipt's own sandbox mode."""
    untracked = ext.get("sandbox") != "worktree"
    mode = "tracked and untracked files" if untracked else "tracked files (worktree mode)"
    for repo in repos:
        made = ext["repositories"][repo].get("tree")
        now = trees.tree(repo, include_untracked=untracked)
        if now is None:
            return f"{what} covers repository {repo!r}, which this change no longer has"
        if made != now:
            changed = trees.changes(repo, str(made), now)
            since = f"; since then: {changed}" if changed else ""
            return (
                f"{what} was made for content {str(made)[:7]}… of {repo!r}; its current "
                f"content ({mode}) is {now[:7]}…{since} — prove again"
            )
    return None


def wiring_problem(plan: Plan, ext: Mapping[str, Any], what: str) -> str | None:
    """Why the receipt's recorded wiring is not this checkout's, or None."""
    if ext.get("adapter") in SIGN_OFF_ADAPTERS:
        # A sign-off counts only where an external provider of its capability exists.
        if any(
            p.adapter == "external" and p.capability == ext["capability"]
            for p in plan.providers.values()
        ):
            return None
        return (
            f"{what} is a sign-off for capability {ext['capability']!r}, but no external "
            "provider of that capability is wired to accept it"
        )
    provider = plan_provider(plan, str(ext["provider"]))
    if provider is None:
        return f"{what} was made by provider {ext['provider']!r}, which this change no longer wires"
    current = current_wiring(plan, provider)
    recorded = ext.get("wiring")
    if not isinstance(recorded, str):
        return f"{what} records no wiring digest (made before receipts carried one); prove again"
    if recorded != current:
        return (
            f"{what} was made with wiring {recorded[:19]}…, provider {provider.name!r} is now "
            f"wired as {current[:19]}… — prove again"
        )
    return None
