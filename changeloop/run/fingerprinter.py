"""``Fingerprinter``: what a provider's result depends on, as one digest (docs/design.md).

Pure given the repositories' content identities (passed in as a function), the
environment and the run's HMAC key; it only memoises what it computed itself
(one listing per repository, one wiring digest per provider).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from changeloop.fingerprints import environment
from changeloop.fingerprints import fingerprint as fingerprints
from changeloop.fingerprints.ignored import IgnoredPaths
from changeloop.fingerprints.wiring import wiring_digest
from changeloop.model import ContentIdentity, Plan, Provider
from changeloop.passenv import command_environ, passed_values
from changeloop.run.carried import Carried, KnownInputs, globs_key

SCHEMA_VERSION = fingerprints.SCHEMA_VERSION


class Fingerprinter:
    def __init__(
        self,
        plan: Plan,
        identity: Callable[[str], ContentIdentity],
        *,
        sandbox: str,
        issuer: str,
        hmac_key: bytes,
        state_path: Path,
        environ: Mapping[str, str] | None = None,
        known: Mapping[str, KnownInputs] | None = None,
    ) -> None:
        """``known``: checkout path -> what a verified no-change record says of its last
        tree (``run.carried``); digests it proves unchanged are not computed again."""
        self._plan = plan
        self._identity = identity
        self._sandbox = sandbox
        self._issuer = issuer
        self._hmac_key = hmac_key
        self.hmac = hmac_key  # the run's key for what it keeps beside the cache (artifacts)
        self._state_path = state_path  # .changeloop/: where environment probes are cached
        self._environ = os.environ if environ is None else environ
        self._indexes: dict[str, fingerprints.InputsIndex] = {}
        self._open_links: dict[str, dict[str, str]] = {}
        self._wirings: dict[str, str] = {}
        # What each provider's fingerprint read from outside the plan and the content,
        # kept for the no-change decision (changeloop.nochange), which checks it again.
        self.environments: dict[str, tuple[tuple[str, ...] | None, Path, dict[str, Any]]] = {}
        self._parts: dict[tuple[tuple[str, ...] | None, Path, Spec], dict[str, Any]] = {}
        self.specs: dict[str, Spec] = {}  # provider -> the environment its part was asked in
        self._ignored: dict[str, IgnoredPaths] = {}
        self._passed_values: dict[tuple[str, ...], dict[str, str]] = {}
        self._known = dict(known or {})
        self._claims = _claims_wiring(plan)  # the plan's claims: the same for every provider
        self._carried: dict[str, Carried | None] = {}
        # repository -> globs_key -> inputs digest, for the next no-change record
        self.inputs: dict[str, dict[str, str]] = {}
        # repository -> globs_key -> ignored path -> digest (the record checks them again)
        self.ignored: dict[str, dict[str, dict[str, str]]] = {}

    def fingerprint(self, provider: Provider, upstream: Mapping[str, str]) -> str:
        """``upstream``: the fingerprints of its dependencies (missing ones count as "")."""
        facts = provider.settled
        repos = facts.repositories
        inputs_digest = None
        ignored = None
        if provider.inputs and provider.repository:
            inputs_digest = self.inputs_digest(provider.repository, provider.inputs)
            ignored = self.ignored_inputs(provider.repository, provider.inputs)
        services = [self._plan.services[s] for s in provider.services if s in self._plan.services]
        secrets = {*provider.env_from, *(n for s in services for n in s.env_from)}
        return fingerprints.compute(
            provider=provider,
            adapter_inputs=self._adapter_inputs(provider, repos),
            effective_command=facts.command,
            trees={repo: self._identity(repo).tree for repo in repos},
            inputs_digest=inputs_digest,
            upstream={d: upstream.get(d, "") for d in provider.depends_on},
            env_from_values={n: self._environ.get(n, "") for n in sorted(secrets)},
            hmac_key=self._hmac_key,
            services=services,
            schema_version=SCHEMA_VERSION,
            wiring=self.wiring(provider),
            environ=self._passed(pass_env_of(self._plan, provider)),
            ignored_inputs=ignored,
        )

    def _passed(self, pass_env: tuple[str, ...]) -> dict[str, str]:
        """What the fingerprint holds of the variables a command with ``pass_env`` gets,
        once per distinct ``pass_env`` (1000 providers, one walk of the environment)."""
        if pass_env not in self._passed_values:
            self._passed_values[pass_env] = passed_values(self._environ, pass_env, self._hmac_key)
        return self._passed_values[pass_env]

    def _adapter_inputs(self, provider: Provider, repos: tuple[str, ...]) -> dict[str, Any]:
        facts = provider.settled
        setup = [list(cmd) for repo in repos for cmd in self._plan.repositories[repo].setup]
        return {
            **facts.inputs,
            "change": self._plan.change.id,
            "capabilities": list(facts.capabilities),
            "claims": self._claims,
            "providerClaims": sorted(provider.claims),
            "sandbox": self._sandbox,
            "setup": setup,
            "issuer": self._issuer,
            "environment": self._environment(provider),
        }

    def _environment(self, provider: Provider) -> dict[str, Any]:
        """The environment part of its command, worked out once per run for each distinct
        (command, checkout, environment it gets): 100 providers running ``python3`` ask
        about it once. It is worked out in the environment the command gets
        (``changeloop.passenv``, its literal ``env`` on top; secrets left out)."""
        checkout = environment.checkout_for(provider, self._plan)
        spec = command_environ_spec(provider)
        key = (provider.command, checkout, spec)
        if key not in self._parts:
            self._parts[key] = environment.part(
                provider.command, checkout, self._state_path, command_environ(self._environ, *spec)
            )
        part = self._parts[key]
        self.environments[provider.name] = (provider.command, checkout, part)
        self.specs[provider.name] = spec
        return part

    def inputs_digest(self, repo: str, globs: Sequence[str]) -> str:
        """The digest of what ``globs`` match in the repository's content tree: carried
        from the record when no changed path is matched, else computed from one listing."""
        carried = self._carry(repo)
        digest = carried.digest(globs) if carried is not None else None
        if digest is None:
            partial = carried.partial(globs) if carried and repo not in self._indexes else None
            digest = (partial or self._index(repo)).digest(globs)
        self.inputs.setdefault(repo, {})[globs_key(globs)] = digest
        return digest

    def inputs_unchanged(self, provider: Provider) -> bool:
        """True when the verified no-change record carries the provider's inputs digest: no
        changed path is matched by its globs. A scheduling hint (``run.order``), never a
        reason to reuse anything."""
        if not provider.inputs or not provider.repository:
            return False
        carried = self._carry(provider.repository)
        return carried is not None and carried.digest(provider.inputs) is not None

    def ignored_inputs(self, repo: str, globs: Sequence[str]) -> dict[str, str] | None:
        """Digests of the ignored paths ``globs`` name (``fingerprints.ignored``): one
        ``git check-ignore`` per repository for every provider's patterns, then a walk of
        what is named. None (the usual case): the patterns name no ignored path."""
        if repo not in self._ignored:
            patterns = [
                p.inputs for p in self._plan.providers.values() if p.inputs and p.repository == repo
            ]
            self._ignored[repo] = IgnoredPaths(self._plan.repositories[repo].path, patterns)
        found = self._ignored[repo].digest(globs)
        if found is not None:
            self.ignored.setdefault(repo, {})[globs_key(globs)] = found
        return found

    def gitlinks(self, repo: str) -> bool:
        """True when the repository's content holds a submodule (no digest is carried then)."""
        if repo not in self._indexes and self._carry(repo) is not None:
            return False  # carried: neither tree holds a gitlink (run.carried)
        return self._index(repo).has_gitlinks()

    def _carry(self, repo: str) -> Carried | None:
        if repo not in self._carried:
            path = self._plan.repositories[repo].path
            known = self._known.get(str(path))
            carried = None
            if known is not None:
                carried = Carried(path, known, self._identity(repo).tree)
            self._carried[repo] = carried if carried is not None and carried.usable else None
        return self._carried[repo]

    def wiring(self, provider: Provider) -> str:
        """The provider's wiring digest (changeloop.fingerprints.wiring), computed once per run."""
        if self._plan.providers.get(provider.name) is not provider:
            return wiring_digest(self._plan, provider)  # e.g. a repository's setup pseudo-provider
        if provider.name not in self._wirings:
            self._wirings[provider.name] = wiring_digest(self._plan, provider)
        return self._wirings[provider.name]

    def external_symlinks(self, repo: str) -> dict[str, str]:
        """Links of the repository's content that resolve outside it (its identity is open)."""
        if repo not in self._open_links:
            links = self.symlinks(repo)
            path = self._plan.repositories[repo].path
            self._open_links[repo] = fingerprints.external_symlinks(path, links) if links else {}
        return self._open_links[repo]

    def symlinks(self, repo: str) -> list[str]:
        """The links in the repository's content (their targets are checked on every run)."""
        carried = self._carry(repo) if repo not in self._indexes else None
        links = carried.symlinks() if carried is not None else None
        return links if links is not None else self._index(repo).symlinks()

    def identity_open(self, provider: Provider) -> bool:
        """True when some repository of the provider holds a link leaving it: never cached."""
        return any(self.external_symlinks(r) for r in provider.settled.repositories)

    def _index(self, repo: str) -> fingerprints.InputsIndex:
        """One listing of the repository per run, shared by every provider's ``inputs``."""
        if repo not in self._indexes:
            self._indexes[repo] = fingerprints.InputsIndex(
                self._plan.repositories[repo].path, tree=self._identity(repo).tree
            )
        return self._indexes[repo]


Spec = tuple[tuple[str, ...], tuple[tuple[str, str], ...]]  # (passEnv, literal env)


def pass_env_of(plan: Plan, provider: Provider) -> tuple[str, ...]:
    """The ``passEnv`` patterns whose values reach the provider's run: its own and those of
    the services it uses."""
    found = list(provider.pass_env)
    for name in provider.services:
        service = plan.services.get(name)
        if service is not None:
            found.extend(service.pass_env)
    return tuple(sorted(set(found)))


def command_environ_spec(provider: Provider) -> Spec:
    return tuple(sorted(set(provider.pass_env))), tuple(sorted(provider.env.items()))


def hmac_key(key: Any) -> bytes:
    """The fingerprint HMAC key, derived from the signing key (never stored)."""
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415 - cryptography is heavy; only the HMAC key needs it

    raw = key.private_bytes(
        serialization.Encoding.Raw,
        serialization.PrivateFormat.Raw,
        serialization.NoEncryption(),
    )
    return hashlib.sha256(b"changeloop fingerprint hmac\0" + raw).digest()


def _claims_wiring(plan: Plan) -> dict[str, Any]:
    return {
        cid: {"requires": list(c.requires), "repository": c.repository, "inputMode": c.input_mode}
        for cid, c in sorted(plan.evidence.claims.items())
    }
