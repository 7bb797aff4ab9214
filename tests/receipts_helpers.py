"""Shared builders for the receipts/keys/verify/external/contract tests: real keys, real git."""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import repo_helpers
from adapter_helpers import adapter_context
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from changeloop.git.identity import content_identity
from changeloop.model import ContentIdentity, Plan
from changeloop.outcome import Outcome
from changeloop.providers.base import RunContext
from changeloop.signing.keys import public_pem
from changeloop.signing.statement import ReceiptFacts, build_statement, seal

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
    "PATH": "/usr/bin:/bin:/usr/local/bin",
}


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), *args], env=GIT_ENV, check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


def init_repo(repo: Path, files: Mapping[str, str | bytes]) -> None:
    """A real git repository with ``files`` committed."""
    repo_helpers.make_repo(repo, files)


def commit_all(repo: Path, message: str = "change") -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def write_files(base: Path, files: Mapping[str, str | bytes]) -> None:
    for rel, body in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body)


def pem_text(key: Ed25519PrivateKey) -> str:
    return public_pem(key.public_key()).decode()


def make_workspace(
    root: Path,
    *,
    change: str = "add-review",
    pub_pem: str | None = None,
    claims: tuple[str, ...] = ("auth-boundary",),
    issuer: str = "github-actions",
    extra_provider: str = "",
) -> Path:
    """root/openspec + two git repositories web/ and api/; a change needing an external review."""
    init_repo(root / "web", {"src/app.txt": "web v1\n", "contract.json": '{"v": 1}\n'})
    init_repo(root / "api", {"src/api.txt": "api v1\n", "contract.json": '{"v": 1}\n'})
    cdir = root / "openspec" / "changes" / change
    (root / "openspec" / "specs").mkdir(parents=True)
    claim_lines = "".join(
        f"  {c}:\n    statement: {c} holds.\n    requires: [review]\n" for c in claims
    )
    write_files(
        cdir,
        {
            "evidence.yaml": f"version: 3\nrepositories:\n  web: web\n  api: api\nclaims:\n{claim_lines}",
        },
    )
    provider = ""
    if pub_pem is not None:
        indented = pub_pem.strip().replace("\n", "\\n")
        provider = (
            "  review:\n    adapter: external\n"
            f"    claims: [{', '.join(claims)}]\n"
            f'    ci: {{issuer: {issuer}, publicKey: "{indented}\\n"}}\n'
        )
    write_files(cdir, {"execution.yaml": f"version: 1\nproviders:\n{provider}{extra_provider}"})
    return cdir


def identities(root: Path, repos: tuple[str, ...] = ("api", "web")) -> dict[str, ContentIdentity]:
    return {r: content_identity(root / r, include_untracked=True) for r in repos}


def statement(
    *,
    change: str = "add-review",
    subjects: Mapping[str, ContentIdentity],
    claims: Mapping[str, str] | None = None,
    issuer: str = "github-actions",
    status: str = "pass",
    finished: datetime = T0,
    provider: str = "review",
    url: str | None = None,
) -> dict[str, Any]:
    marks = claims if claims is not None else {"auth-boundary": "credited"}
    facts = ReceiptFacts(
        change=change,
        provider=provider,
        adapter="signed",
        fingerprint="sha256:" + "ab" * 32,
        subjects=subjects,
        sandbox="none",
        issuer=issuer,
        started=finished,
        finished=finished,
        configuration={"evidence.yaml": "cd" * 32},
        url=url,
    )
    outcome = Outcome(
        capability="review",
        status=status,  # type: ignore[arg-type]
        reason=None if status == "pass" else "reviewer said no",
        claims=marks,  # type: ignore[arg-type]
    )
    return build_statement(facts, outcome)


def signed(stmt: dict[str, Any], key: Ed25519PrivateKey) -> bytes:
    return seal(stmt, key).envelope


def envelope_doc(data: bytes) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(data)
    return doc


def reencode(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


class _NoExecutor:
    remote = False
    capacity = None
    lost = None

    async def run(self, _job: Any) -> Any:
        raise AssertionError("this adapter must run nothing")


def run_context(
    plan: Plan,
    provider_name: str,
    *,
    now: datetime,
    idents: Mapping[str, ContentIdentity] | None = None,
    workdirs: Mapping[str, Path] | None = None,
) -> RunContext:
    from changeloop.providers import registry

    provider = plan.providers[provider_name]
    repos = registry.ADAPTERS[provider.adapter].repositories(provider, plan)
    if idents is None:
        idents = {
            r: content_identity(plan.repositories[r].path, include_untracked=True) for r in repos
        }
    return adapter_context(
        plan,
        provider,
        workdirs=workdirs,
        identities=idents,
        env={},
        now=now,
        run_dir=plan.root / ".changeloop" / "runs" / "t" / provider_name,
        executor=_NoExecutor(),
    )
