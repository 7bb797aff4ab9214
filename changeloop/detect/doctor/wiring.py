"""What a provider's own wiring lacks before anything could run (no command needed).

A ``contract-digest`` provider needs a contract path in two or more repositories;
an ``external`` provider needs a public key, or no receipt could ever be accepted.
"""

from __future__ import annotations

from changeloop.detect.doctor.finding import DoctorFinding, edit_command
from changeloop.model import Provider


def wiring_findings(provider: Provider, cdir: str) -> list[DoctorFinding]:
    """The wiring findings of one provider, from its configuration alone."""
    out: list[DoctorFinding] = []
    edit = edit_command(cdir, "execution.yaml")
    if provider.adapter == "contract-digest" and len(provider.contract) < 2:
        out.append(
            DoctorFinding(
                "contract-paths-missing",
                f"provider {provider.name} (contract-digest) names {len(provider.contract)} "
                "contract path(s); it needs one in each of two or more repositories",
                "add `contract: {<repo>: <path>, <other-repo>: <path>}` to the provider",
                edit,
            )
        )
    if provider.adapter == "external" and not provider.trusted_keys:
        out.append(
            DoctorFinding(
                "external-key-missing",
                f"provider {provider.name} (external) names no public key, so no receipt "
                "could ever be accepted",
                "add `ci: {issuer: <name>, publicKey: <PEM>}` with the signer's public key",
                f"changeloop keygen --out ci-keys && {edit}",
            )
        )
    return out
