"""The signed shared cache (docs/scale-out.md): publish CI's receipts, reuse them elsewhere.

``prove --publish DIR`` writes each receipt a run signed with ``--sign-key`` to
``DIR/<fingerprint hex>/<capability>.json``. ``prove --cache-from DIR`` reuses
them instead of running a provider only when every capability of the provider
has a receipt there whose fingerprint equals the one computed here and whose
signature verifies with a key the change trusts (an ``external`` provider's
``ci`` key, as :mod:`changeloop.trust` resolved it). Trust comes from the
signature, never from the directory: a file that does not parse, verify or
match is ignored with a note.

The directory is shared, so anyone who can write there can plant anything: an
entry is read like every other envelope (a regular file, no symlink followed,
opened without blocking so a FIFO never hangs the run, at most 4 MiB), and
``--publish`` writes through no symlink (:func:`changeloop.fsio.write_beneath`).

The fingerprint "computed here" is computed with the issuer the trusted key
names (the fingerprint includes the issuer, and a developer's run says
``local`` where CI says ``github-actions``); see
docs/decisions/070-the-shared-cache-is-trusted-by-signature.md.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from changeloop.errors import ChangeloopError, FileRefused
from changeloop.fsio import read_regular, write_beneath
from changeloop.model import Plan, Provider
from changeloop.records import ProviderReport
from changeloop.signing.dsse import MAX_ENVELOPE_BYTES, parse_envelope, verify_signatures
from changeloop.signing.keys import KeyRefused, load_public_key

_FINGERPRINT = re.compile(r"^sha256:([0-9a-f]{64})$")

Parsed = list[tuple[bytes, bytes, dict[str, Any]]]  # (envelope, payload, predicate.changeloop)


def entry_dir(directory: Path, fingerprint: str) -> Path:
    """``DIR/<hex>``: the fingerprint's hex digest, as the local cache names its entries."""
    match = _FINGERPRINT.match(fingerprint)
    if match is None:
        raise ValueError(f"not a sha256 fingerprint: {fingerprint!r}")
    return directory / match[1]


def publish(
    directory: Path,
    root: Path,
    plan: Plan,
    reports: Mapping[str, ProviderReport],
    fingerprints: Mapping[str, str],
) -> tuple[list[Path], list[str]]:
    """Copy every receipt the run sealed for a provider of the plan.

    Returns the files written and what was refused. Nothing is written through a
    symlink: a fingerprint folder someone planted as a link (to make our write land
    elsewhere) is refused, and the provider's receipts are not published.
    """
    written: list[Path] = []
    refused: list[str] = []
    for name, report in reports.items():
        fingerprint = fingerprints.get(name)
        if name not in plan.providers or report.state != "ran" or fingerprint is None:
            continue
        folder = entry_dir(directory, fingerprint)
        for entry in report.receipts:
            data = (root / entry.path).read_bytes()
            target = folder / f"{entry.capability}.json"
            try:
                write_beneath(directory, (folder.name, target.name), data)
            except OSError as exc:
                refused.append(f"not published: {target}: {exc.strerror or exc}")
                break
            written.append(target)
    return written, refused


@dataclass(frozen=True)
class TrustedCi:
    key: Any  # Ed25519PublicKey
    issuer: str


def trusted_ci_keys(plan: Plan) -> list[TrustedCi]:
    """The change's external providers' ``ci`` keys (authority keys sign reviews, not runs)."""
    out: list[TrustedCi] = []
    seen: set[str] = set()
    for provider in plan.providers.values():
        for trusted in provider.trusted_keys:
            if trusted.role != "ci" or trusted.public_key_pem in seen:
                continue
            seen.add(trusted.public_key_pem)
            try:
                out.append(
                    TrustedCi(load_public_key(trusted.public_key_pem, trusted.source), trusted.name)
                )
            except KeyRefused:
                continue  # preflight names a bad key; it trusts nothing here
    return out


@dataclass
class SharedCache:
    """Lookups in one ``--cache-from`` directory; ``notes`` say what was ignored and why."""

    directory: Path
    plan: Plan
    keys: list[TrustedCi]
    fingerprint_for: Callable[[Provider, str], str]  # (provider, issuer) -> fingerprint
    notes: list[str] = field(default_factory=list)

    def lookup(self, provider: Provider) -> Parsed | None:
        """Verified pass receipts for every capability of ``provider``, or None."""
        if provider.adapter == "external":
            return None  # re-judged on every run (as the local cache does)
        capabilities = provider.settled.capabilities
        for trusted in self.keys:
            fingerprint = self.fingerprint_for(provider, trusted.issuer)
            folder = entry_dir(self.directory, fingerprint)
            if not folder.is_dir():
                continue
            found = self._verified(folder, fingerprint, trusted, capabilities)
            if all(c in found for c in capabilities):
                return [found[c] for c in capabilities]
        return None

    def _verified(
        self, folder: Path, fingerprint: str, trusted: TrustedCi, capabilities: Sequence[str]
    ) -> dict[str, tuple[bytes, bytes, dict[str, Any]]]:
        found: dict[str, tuple[bytes, bytes, dict[str, Any]]] = {}
        if folder.is_symlink():  # planted: the store's own folders are real directories
            self.notes.append(f"shared cache: ignored {folder}: a symlink, not a directory")
            return found
        for capability in capabilities:
            path = folder / f"{capability}.json"
            if not os.path.lexists(path):
                continue
            try:
                # Like every other envelope: a regular file (no symlink followed, a FIFO
                # refused without waiting), at most 4 MiB.
                envelope = read_regular(
                    path, limit=MAX_ENVELOPE_BYTES, what="entry", follow_symlinks=False
                )
                payload, _ = verify_signatures(parse_envelope(envelope), [trusted.key])
                ext = json.loads(payload)["predicate"]["changeloop"]
                why = _mismatch(ext, fingerprint, path)
            except FileRefused as exc:
                why = exc.reason
            except (
                ChangeloopError,
                OSError,
                ValueError,
                KeyError,
                TypeError,
                RecursionError,
            ) as exc:
                why = f"does not verify with the {trusted.issuer} key ({exc})"
            if why is not None:
                self.notes.append(f"shared cache: ignored {path}: {why}")
                continue
            found[ext["capability"]] = (envelope, payload, ext)
        return found


def _mismatch(ext: Any, fingerprint: str, path: Path) -> str | None:
    if not isinstance(ext, dict):
        return "no predicate.changeloop"
    if ext.get("fingerprint") != fingerprint:
        return f"its fingerprint {ext.get('fingerprint')!r} is not the one computed here"
    if ext.get("status") != "pass":
        return f"its status is {ext.get('status')!r}; only a pass is reused"
    if f"{ext.get('capability')}.json" != path.name:
        return f"it is a {ext.get('capability')!r} receipt under another capability's name"
    return None
