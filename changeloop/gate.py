"""Re-verify a change's latest receipts without running anything (DESIGN.md §12, §13).

``gate`` is what an OpenSpec archive hook or a merge check calls: it reads the
receipts that already exist — the workspace's latest ones
(``.changeloop/receipts/<change>/``, verified with the workspace key) and the
committed or imported ones (``openspec/changes/<id>/receipts/`` and any
``external`` provider's ``receipts:``, verified with the keys the change's
``external`` providers name) — plus ``--public-key`` for either — and keeps a
receipt only when

- its signature and shape verify (else ``unverified``),
- every subject tree equals the current content identity *in the receipt's own
  sandbox mode* (worktree ⇒ tracked files only, else tracked + untracked;
  else ``stale-content``),
- its wiring digest equals the current wiring of the provider that made it
  (else ``stale-wiring``; a ``prove`` receipt without one is stale too).

What survives goes through the one verdict (:func:`changeloop.verdict.decide`):
no second set of rules lives here. Per claim, the reasons say why it is not
proven, with a code a script can branch on.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from changeloop.dsse import VerificationError, loads_strict, parse_envelope, read_envelope
from changeloop.identity import content_identity
from changeloop.keys import load_private_key, load_public_key
from changeloop.model import Plan, Provider
from changeloop.verdict import ReceiptView, Verdict, decide
from changeloop.verify import Expectation, Trusted, Verified, parse_time, verify_envelope

ReasonCode = Literal[
    "no-receipt", "stale-content", "stale-wiring", "failed", "inconclusive", "unverified"
]
Source = Literal["local", "committed"]
MAX_ENVELOPE_BYTES = 4 * 1024 * 1024
# Sign-offs (`receipt sign`) carry no wiring: they bind content, capability and claims.
SIGN_OFF_ADAPTERS = frozenset({"signed", "receipt-sign"})


@dataclass(frozen=True)
class Reason:
    code: ReasonCode
    message: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class ReadEnvelope:
    """One envelope file gate read, whatever became of it (a VSA input attestation)."""

    path: Path
    uri: str  # relative to the workspace root
    sha256: str  # of the file's bytes
    source: Source


@dataclass(frozen=True)
class SetAside:
    """A receipt that does not count, and why."""

    envelope: ReadEnvelope
    code: ReasonCode
    message: str
    capability: str | None  # None when nothing trustworthy says which
    repositories: tuple[str, ...] = ()
    fatal: bool = True  # an envelope that does not verify fails the gate closed


@dataclass(frozen=True)
class Kept:
    envelope: ReadEnvelope
    verified: Verified
    view: ReceiptView


@dataclass(frozen=True)
class ClaimGate:
    status: str
    reasons: tuple[Reason, ...]


@dataclass(frozen=True)
class GateResult:
    plan: Plan
    verdict: Verdict
    claims: Mapping[str, ClaimGate]
    requires: Mapping[str, Mapping[str, str]]
    reasons: tuple[Reason, ...]  # change-level (requires, unverified envelopes)
    read: tuple[ReadEnvelope, ...]
    kept: tuple[Kept, ...]
    set_aside: tuple[SetAside, ...]
    trees: Mapping[bool, Mapping[str, str]] = field(default_factory=dict)

    @property
    def proven(self) -> bool:
        return self.verdict.proven and not any(
            s.code == "unverified" and s.fatal for s in self.set_aside
        )

    @property
    def status(self) -> str:
        return "proven" if self.proven else "not-proven"

    def to_json(self) -> dict[str, Any]:
        return {
            "version": "1",
            "change": self.plan.change.id,
            "status": self.status,
            "claims": {
                cid: {"status": c.status, "reasons": [r.to_json() for r in c.reasons]}
                for cid, c in self.claims.items()
            },
            "requires": {cap: dict(per) for cap, per in self.requires.items()},
            "reasons": [r.to_json() for r in self.reasons],
            "receipts": [
                {
                    "path": k.envelope.uri,
                    "id": k.verified.id,
                    "provider": k.view.provider,
                    "capability": k.view.capability,
                    "status": k.view.status,
                }
                for k in self.kept
            ],
            "setAside": [
                {"path": s.envelope.uri, "code": s.code, "message": s.message}
                for s in self.set_aside
            ],
        }


# -- wiring -----------------------------------------------------------------
def current_wiring(plan: Plan, provider: Provider) -> str:
    """The wiring digest this checkout's plan gives ``provider`` (DESIGN.md §2.6)."""
    from changeloop.wiring import wiring_digest

    return wiring_digest(plan, provider)


def plan_provider(plan: Plan, name: str) -> Provider | None:
    """The planned provider that issues receipts under ``name`` (a discovery alias too)."""
    if name in plan.providers:
        return plan.providers[name]
    for provider in plan.providers.values():
        if provider.discovery_provider == name:
            return provider
    return None


# -- keys -------------------------------------------------------------------
def workspace_public_key(root: Path) -> Ed25519PublicKey | None:
    """The workspace key's public half; gate never makes a key (it runs nothing)."""
    key_path = root / ".changeloop" / "keys" / "local.key"
    if not key_path.is_file():
        return None
    return load_private_key(key_path).public_key()


def external_keys(plan: Plan) -> list[Trusted]:
    return [
        Trusted(load_public_key(k.public_key_pem, k.source), issuer=k.name)
        for p in plan.providers.values()
        if p.adapter == "external"
        for k in p.trusted_keys
    ]


@dataclass(frozen=True)
class _Scope:
    """What a committed receipt's signing key may speak for (DESIGN.md §2.6, §13).

    A key named by an ``external`` provider vouches for sign-offs of that
    provider's capability and for ``prove`` receipts of the providers it
    ``accepts``; a ``--public-key`` given on the command line vouches for all.
    """

    by_key: Mapping[str, tuple[Provider, ...]]
    unrestricted: frozenset[str]

    def refusal(self, verified: Verified, what: str) -> str | None:
        if verified.keyid in self.unrestricted:
            return None
        ext = verified.extension
        providers = self.by_key.get(verified.keyid, ())
        if ext.get("adapter") in SIGN_OFF_ADAPTERS:
            if any(p.capability == ext["capability"] for p in providers):
                return None
            return (
                f"{what} is a sign-off for capability {ext['capability']!r}; the key that "
                "signed it is trusted by no external provider of that capability"
            )
        if any(ext["provider"] in p.accepts for p in providers):
            return None
        names = ", ".join(sorted(p.name for p in providers)) or "none"
        return (
            f"{what} was made by prove for provider {ext['provider']!r}, but no external "
            f"provider trusting its key (trusted by: {names}) lists it in `accepts`"
        )


def _committed_scope(plan: Plan, extra: Sequence[Ed25519PublicKey]) -> _Scope:
    from changeloop.keys import keyid

    by_key: dict[str, list[Provider]] = {}
    for p in plan.providers.values():
        if p.adapter != "external":
            continue
        for k in p.trusted_keys:
            kid = keyid(load_public_key(k.public_key_pem, k.source))
            by_key.setdefault(kid, []).append(p)
    return _Scope(
        by_key={k: tuple(v) for k, v in by_key.items()},
        unrestricted=frozenset(keyid(k) for k in extra),
    )


# -- reading ----------------------------------------------------------------
def _uri(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def local_files(plan: Plan) -> list[Path]:
    where = plan.root / ".changeloop" / "receipts" / plan.change.id
    return sorted(p for p in where.glob("*.json") if p.is_file()) if where.is_dir() else []


def committed_files(plan: Plan) -> list[Path]:
    """``openspec/changes/<id>/receipts/*.json`` and every external provider's ``receipts:``."""
    from changeloop.providers import external

    found: dict[Path, None] = {}
    default = plan.change.path / "receipts"
    if default.is_dir():
        for p in sorted(default.glob("*.json")):
            if p.is_file():
                found[p.resolve()] = None
    for provider in plan.providers.values():
        if provider.adapter == "external":
            for p in external.envelope_files(provider, plan):
                found[p.resolve()] = None
    return list(found)


def _unauthenticated_hint(data: bytes) -> tuple[str | None, tuple[str, ...]]:
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


class _Trees:
    """Current content identities, computed once per repository and sandbox mode."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.by_mode: dict[bool, dict[str, str]] = {}

    def tree(self, repo: str, *, include_untracked: bool) -> str | None:
        per = self.by_mode.setdefault(include_untracked, {})
        if repo not in per:
            repository = self.plan.repositories.get(repo)
            if repository is None:
                return None
            ident = content_identity(repository.path, include_untracked=include_untracked)
            per[repo] = ident.tree
        return per[repo]


def _check(
    plan: Plan,
    env: ReadEnvelope,
    data: bytes,
    keys: Sequence[Trusted],
    trees: _Trees,
    *,
    scope: _Scope | None = None,
) -> Kept | SetAside:
    if len(data) > MAX_ENVELOPE_BYTES:
        return SetAside(env, "unverified", f"{env.uri} is larger than 4 MiB; refused", None)
    try:
        verified = verify_envelope(data, keys, Expectation(change=plan.change.id))
    except VerificationError as exc:
        capability, repos = _unauthenticated_hint(data)
        message = f"{env.uri}: {exc.check} check failed: {exc.reason}"
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
    # Content: each subject against the current tree in the receipt's own sandbox mode.
    untracked = ext.get("sandbox") != "worktree"
    mode = "tracked and untracked files" if untracked else "tracked files (worktree mode)"
    for repo in repos:
        made = ext["repositories"][repo].get("tree")
        now = trees.tree(repo, include_untracked=untracked)
        if now is None:
            message = f"{what} covers repository {repo!r}, which this change no longer has"
            return SetAside(env, "stale-content", message, capability, repos)
        if made != now:
            message = (
                f"{what} was made for content {str(made)[:7]}… of {repo!r}; its current "
                f"content ({mode}) is {now[:7]}… — prove again"
            )
            return SetAside(env, "stale-content", message, capability, repos)
    # Wiring: how the receipt was made must still be how this checkout would make it.
    stale = _wiring_problem(plan, ext, what)
    if stale is not None:
        return SetAside(env, "stale-wiring", stale, capability, repos)
    view = ReceiptView(
        provider=str(ext["provider"]),
        capability=capability,
        status=verified.status,  # type: ignore[arg-type]
        repositories=repos,
        reason=ext.get("reason"),
        claims=dict(ext.get("claims") or {}),
        input_mode=ext.get("inputMode"),
        citations=dict(ext.get("citations") or {}),
    )
    return Kept(env, verified, view)


def _wiring_problem(plan: Plan, ext: Mapping[str, Any], what: str) -> str | None:
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


def _newest(kept: Sequence[Kept]) -> list[Kept]:
    """The newest receipt per (provider, capability): a newer FAILED beats an older PASSED."""
    best: dict[tuple[str, str], Kept] = {}
    for k in kept:
        key = (k.view.provider, k.view.capability)
        old = best.get(key)
        if old is None or parse_time(str(k.verified.extension["finishedOn"])) > parse_time(
            str(old.verified.extension["finishedOn"])
        ):
            best[key] = k
    return list(best.values())


def evaluate(
    plan: Plan,
    public_keys: Sequence[Ed25519PublicKey] = (),
    *,
    local: Sequence[Path] | None = None,
) -> GateResult:
    """Read, verify and judge every receipt of ``plan``'s change; runs nothing.

    ``local``: the workspace-signed envelopes to read instead of the latest ones
    (``report --run`` judges one run's receipts with these same checks).
    """
    extra = [Trusted(k) for k in public_keys]
    local_key = workspace_public_key(plan.root)
    local_keys = ([Trusted(local_key)] if local_key else []) + extra
    committed_keys = [*external_keys(plan), *extra]
    trees = _Trees(plan)
    read: list[ReadEnvelope] = []
    kept: list[Kept] = []
    aside: list[SetAside] = []
    batches: list[tuple[Source, list[Path], list[Trusted], _Scope | None]] = [
        ("local", list(local) if local is not None else local_files(plan), local_keys, None),
        ("committed", committed_files(plan), committed_keys, _committed_scope(plan, public_keys)),
    ]
    for source, files, keys, scope in batches:
        for path in files:
            try:
                # Bounded, and never blocks: a FIFO or a link to a device is refused.
                data = read_envelope(path)
            except OSError as exc:
                env = ReadEnvelope(path, _uri(path, plan.root), "", source)
                aside.append(
                    SetAside(env, "unverified", f"cannot read {env.uri}: {exc.strerror}", None)
                )
                continue
            except VerificationError as exc:
                env = ReadEnvelope(path, _uri(path, plan.root), "", source)
                aside.append(SetAside(env, "unverified", f"{env.uri} {exc.reason}", None))
                continue
            env = ReadEnvelope(
                path, _uri(path, plan.root), hashlib.sha256(data).hexdigest(), source
            )
            read.append(env)
            if not keys:
                who = (
                    "the workspace key (.changeloop/keys/local.key)"
                    if source == "local"
                    else ("an external provider's key")
                )
                aside.append(
                    SetAside(
                        env,
                        "unverified",
                        f"{env.uri}: no trusted key to verify it with (no {who}, no --public-key)",
                        *_unauthenticated_hint(data),
                    )
                )
                continue
            outcome = _check(plan, env, data, keys, trees, scope=scope)
            (kept if isinstance(outcome, Kept) else aside).append(outcome)  # type: ignore[arg-type]
    current = _newest(kept)
    verdict = decide(plan, [k.view for k in current])
    claims = {cid: _claim_gate(plan, cid, current, aside, verdict) for cid in verdict.claims}
    requires, reasons = _requires(plan, verdict, aside)
    return GateResult(
        plan=plan,
        verdict=verdict,
        claims=claims,
        requires=requires,
        reasons=tuple(reasons),
        read=tuple(read),
        kept=tuple(current),
        set_aside=tuple(aside),
        trees={mode: dict(per) for mode, per in trees.by_mode.items()},
    )


def speaks_for(s: SetAside, capability: str, repository: str | None) -> bool:
    """Whether a set-aside envelope may have spoken for ``capability`` (in ``repository``)."""
    return _speaks_for(s, capability, repository)


def _speaks_for(s: SetAside, capability: str, repository: str | None) -> bool:
    if s.capability is None:
        return True  # an unreadable envelope might have been about anything
    if s.capability != capability:
        return False
    return repository is None or not s.repositories or repository in s.repositories


def _claim_gate(
    plan: Plan, cid: str, kept: Sequence[Kept], aside: Sequence[SetAside], verdict: Verdict
) -> ClaimGate:
    """Per required capability, the one verdict over a single-capability copy of the claim."""
    claim = plan.evidence.claims[cid]
    whole = verdict.claims[cid]
    reasons: list[Reason] = []
    views = [k.view for k in kept]
    for capability in claim.requires:
        single = dataclasses.replace(claim, requires=(capability,))
        evidence = dataclasses.replace(plan.evidence, claims={cid: single}, requires={})
        part = decide(dataclasses.replace(plan, evidence=evidence), views).claims[cid]
        if part.status == "proven":
            continue
        if part.status in ("failed", "inconclusive"):
            code: ReasonCode = "failed" if part.status == "failed" else "inconclusive"
            reasons += [Reason(code, text) for text in part.reasons]
            continue
        why = [s for s in aside if _speaks_for(s, capability, claim.repository)]
        if why:
            reasons += [Reason(s.code, s.message) for s in why]
        else:
            reasons += [Reason("no-receipt", text) for text in part.reasons]
    if not claim.requires:
        reasons += [Reason("no-receipt", text) for text in whole.reasons]
    status = whole.status
    # An envelope that does not verify fails the gate closed; a claim it may have spoken
    # for is not called proven beside it.
    for s in aside:
        if not (s.fatal and s.code == "unverified"):
            continue
        reason = Reason(s.code, s.message)
        if reason not in reasons and any(
            _speaks_for(s, c, claim.repository) for c in claim.requires
        ):
            reasons.append(reason)
            if status == "proven":
                status = "inconclusive"
    return ClaimGate(status=status, reasons=tuple(reasons))


def _requires(
    plan: Plan, verdict: Verdict, aside: Sequence[SetAside]
) -> tuple[dict[str, dict[str, str]], list[Reason]]:
    reasons: list[Reason] = []
    for capability, per_repo in verdict.requires.items():
        for repo, status in per_repo.items():
            if status == "pass":
                continue
            if status == "missing":
                why = [s for s in aside if _speaks_for(s, capability, repo)]
                if why:
                    reasons += [Reason(s.code, s.message) for s in why]
                else:
                    reasons.append(
                        Reason("no-receipt", f"requires {capability} in {repo}: no receipt")
                    )
            else:
                code: ReasonCode = "failed" if status == "fail" else "inconclusive"
                reasons.append(Reason(code, f"requires {capability} in {repo}: {status}"))
    for s in aside:
        if s.code == "unverified" and s.fatal and Reason(s.code, s.message) not in reasons:
            reasons.append(Reason(s.code, s.message))
    if not plan.evidence.claims and not plan.evidence.requires:
        reasons.append(
            Reason("no-receipt", "the change declares no claims and no requires: nothing to prove")
        )
    requires: dict[str, dict[str, str]] = {
        cap: {repo: str(status) for repo, status in per.items()}
        for cap, per in verdict.requires.items()
    }
    return requires, reasons
