"""Fingerprints: sha256 over everything a provider's result depends on.

Equal fingerprint ⇒ an earlier ``pass`` receipt still speaks for the provider
(DESIGN.md §1, §5). The fingerprint is the sha256 of the RFC 8785 form of the
provider's *effective wiring* — never the bytes of ``execution.yaml`` as a
whole, so editing one provider re-runs that provider alone — plus the content
it ran against and the fingerprints of the providers it depends on.

Usage::

    fp = compute(provider=p, adapter_inputs=adapter.fingerprint_inputs(p),
                 effective_command=adapter.effective_command(p),
                 trees={"web": ident.tree}, inputs_digest=None, upstream={},
                 env_from_values={"DATABASE_URL": os.environ["DATABASE_URL"]},
                 hmac_key=key, services=[], schema_version="changeloop/receipt@1")

``envFrom`` values never appear in clear: each is an HMAC-SHA256 keyed by
bytes the caller derives from the workspace key, so a fingerprint (which is
written into receipts) reveals nothing about a secret, yet changes with it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from changeloop.identity import git_env
from changeloop.jcs import canonicalize
from changeloop.model import Provider, Readiness, Service

__all__ = ["FORMAT", "compute", "document", "inputs_digest"]

# Bump when the meaning of the document below changes: every old entry misses.
FORMAT = 1


def _secret(hmac_key: bytes, name: str, value: str) -> str:
    message = canonicalize([name, value])
    return hmac.new(hmac_key, message, hashlib.sha256).hexdigest()


def _readiness(r: Readiness | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "url": r.url,
        "port": r.port,
        "body": r.body,
        "bodyRegex": r.body_regex,
        "header": list(r.header) if r.header else None,
        "timeoutMs": r.timeout_ms,
    }


def _service(s: Service) -> dict[str, Any]:
    # Values of a service's envFrom reach the provider only through the service's
    # behaviour; their names count, their values are the service's own business.
    return {
        "name": s.name,
        "repository": s.repository,
        "command": list(s.command),
        "readiness": _readiness(s.readiness),
        "env": dict(s.env),
        "envFrom": sorted(s.env_from),
    }


def document(
    *,
    provider: Provider,
    adapter_inputs: Mapping[str, Any],
    effective_command: Sequence[str] | None,
    trees: Mapping[str, str],
    inputs_digest: str | None,
    upstream: Mapping[str, str],
    env_from_values: Mapping[str, str],
    hmac_key: bytes,
    services: Sequence[Service],
    schema_version: str,
) -> dict[str, Any]:
    """The JSON document the fingerprint hashes (exposed for tests and ``--explain``).

    With ``inputs_digest`` the provider's own repository counts only through the
    files its ``inputs`` globs match; other repositories still count by tree.
    """
    if inputs_digest is not None:
        content: dict[str, Any] = {
            "inputs": {"globs": sorted(provider.inputs), "digest": inputs_digest},
            "trees": {r: t for r, t in trees.items() if r != provider.repository},
        }
    else:
        content = {"trees": dict(trees)}
    return {
        "format": FORMAT,
        "schema": schema_version,
        "adapter": provider.adapter,
        "capability": provider.capability,
        "repository": provider.repository,
        "command": list(effective_command) if effective_command is not None else None,
        "adapterInputs": dict(adapter_inputs),
        "report": provider.report,
        "minimum": provider.minimum,
        "outputs": list(provider.outputs),
        "claims": sorted(provider.claims),
        "env": dict(provider.env),
        "envFrom": {
            name: _secret(hmac_key, name, env_from_values.get(name, ""))
            for name in provider.env_from
        },
        "resources": sorted(provider.resources),
        "services": [_service(s) for s in sorted(services, key=lambda s: s.name)],
        "timeoutMs": provider.timeout_ms,
        "content": content,
        "upstream": dict(upstream),
    }


def compute(
    *,
    provider: Provider,
    adapter_inputs: Mapping[str, Any],
    effective_command: Sequence[str] | None,
    trees: Mapping[str, str],
    inputs_digest: str | None,
    upstream: Mapping[str, str],
    env_from_values: Mapping[str, str],
    hmac_key: bytes,
    services: Sequence[Service],
    schema_version: str,
) -> str:
    """``"sha256:<hex>"`` of the RFC 8785 form of :func:`document`."""
    doc = document(
        provider=provider,
        adapter_inputs=adapter_inputs,
        effective_command=effective_command,
        trees=trees,
        inputs_digest=inputs_digest,
        upstream=upstream,
        env_from_values=env_from_values,
        hmac_key=hmac_key,
        services=services,
        schema_version=schema_version,
    )
    return "sha256:" + hashlib.sha256(canonicalize(doc)).hexdigest()


# -- inputs globs ---------------------------------------------------------------


def _git_matches(workdir: Path, globs: Sequence[str]) -> list[str] | None:
    """Files git sees (tracked + untracked-not-ignored) matching ``globs``; None outside git."""
    specs = [f":(glob){g}" for g in globs]
    proc = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *specs],
        cwd=workdir,
        env=git_env(),
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        return None
    return sorted({os.fsdecode(p) for p in proc.stdout.split(b"\0") if p and not p.endswith(b"/")})


def _walk_matches(workdir: Path, globs: Sequence[str]) -> list[str]:
    """Outside a git work tree (a copy sandbox): plain globbing, ``.git`` skipped."""
    found: set[str] = set()
    for pattern in globs:
        for path in workdir.glob(pattern):
            rel = path.relative_to(workdir)
            if ".git" in rel.parts or (path.is_dir() and not path.is_symlink()):
                continue
            found.add(rel.as_posix())
    return sorted(found)


def _entries(workdir: Path, paths: Iterable[str]) -> list[list[str]]:
    out: list[list[str]] = []
    for rel in paths:
        full = workdir / rel
        try:
            st = full.lstat()
        except FileNotFoundError:
            continue  # tracked but deleted: absent content
        if stat.S_ISLNK(st.st_mode):
            mode, data = "120000", os.fsencode(full.readlink())
        elif stat.S_ISREG(st.st_mode):
            mode = "100755" if st.st_mode & 0o111 else "100644"
            data = full.read_bytes()
        else:
            continue
        out.append([rel, mode, hashlib.sha256(data).hexdigest()])
    return out


def inputs_digest(workdir: Path, globs: Sequence[str]) -> str:
    """``"sha256:<hex>"`` over path, mode and content sha256 of the files ``globs`` match.

    Globs are git ``:(glob)`` pathspecs relative to ``workdir`` (``src/**/*.py``);
    in a git work tree only files git would track count (ignored output never does),
    the same files the content identity covers.
    """
    matches = _git_matches(workdir, globs)
    if matches is None:
        matches = _walk_matches(workdir, globs)
    doc = {"globs": sorted(globs), "files": _entries(workdir, matches)}
    return "sha256:" + hashlib.sha256(canonicalize(doc)).hexdigest()
