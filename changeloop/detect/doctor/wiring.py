"""What a provider's own wiring lacks before anything could run (no command needed).

A ``contract-digest`` provider needs a contract path in two or more repositories;
an ``external`` provider needs a public key, or no receipt could ever be accepted.
"""

from __future__ import annotations

import shlex

from changeloop.detect.doctor.finding import DoctorFinding, FileEdit, change_file
from changeloop.model import Provider


def wiring_findings(provider: Provider, cdir: str) -> list[DoctorFinding]:
    """The wiring findings of one provider, from its configuration alone."""
    out: list[DoctorFinding] = []
    path = change_file(cdir, "execution.yaml")
    if provider.adapter == "contract-digest" and len(provider.contract) < 2:
        named = ", ".join(f"{r}: {p}" for r, p in provider.contract.items())
        out.append(
            DoctorFinding(
                "contract-paths-missing",
                f"provider {provider.name} (contract-digest) names {len(provider.contract)} "
                "contract path(s); it needs one in each of two or more repositories",
                f"give provider {provider.name} the contract file of each repository (the "
                "text below, with each repository's path)",
                None,
                edit=FileEdit(
                    path,
                    f"providers:\n  {provider.name}:\n    contract: "
                    f"{{{named + ', ' if named else ''}<repository>: <path>}}\n",
                ),
            )
        )
    if provider.adapter == "external" and not provider.trusted_keys:
        pub = change_file(cdir, "ci.pub")
        out.append(
            DoctorFinding(
                "external-key-missing",
                f"provider {provider.name} (external) names no public key, so no receipt "
                "could ever be accepted",
                "make the signer's key pair (keep its .key secret), copy its public key beside "
                f"execution.yaml, and name it in provider {provider.name} (the text below)",
                f"changeloop keygen --out ci-keys && cp ci-keys/changeloop.pub {shlex.quote(pub)}",
                edit=FileEdit(
                    path,
                    f"providers:\n  {provider.name}:\n    ci: {{issuer: "
                    f"{provider.issuer or 'ci'}, publicKeyFile: ci.pub}}\n",
                ),
            )
        )
    return out
