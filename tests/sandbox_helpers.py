"""Real git repositories for the identity, sandbox, fingerprint and cache tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import repo_helpers

if TYPE_CHECKING:
    from changeloop.model import Provider, Service

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str, index: Path | None = None) -> str:
    """Plain git, the way a user would type it (the reference the tests compare to)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_ENV)
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    out = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, check=True, text=True
    )
    return out.stdout.strip()


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def make_repo(path: Path, files: dict[str, str] | None = None, *, commit: bool = True) -> Path:
    """A git repository holding ``files``, committed unless ``commit`` is False."""
    return repo_helpers.make_repo(path, files, commit=commit, message="initial")


def commit_all(path: Path, message: str = "more") -> str:
    git(path, "add", "-A")
    git(path, "commit", "-q", "--allow-empty", "-m", message)
    return git(path, "rev-parse", "HEAD")


def user_state(path: Path) -> tuple[str, str, str, str]:
    """Everything of the user's that must never move: refs, HEAD, index bytes, status."""
    refs = git(path, "for-each-ref", "--format=%(refname) %(objectname)")
    head = git(path, "rev-parse", "--verify", "-q", "HEAD") if _has_head(path) else ""
    index = path / ".git" / "index"
    digest = index.read_bytes().hex() if index.exists() else ""
    return refs, head, digest, git(path, "status", "--porcelain", "--untracked-files=all")


def _has_head(path: Path) -> bool:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return (
        subprocess.run(
            ["git", "rev-parse", "--verify", "-q", "HEAD"],
            cwd=path,
            env=env,
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )


def reference_tree(path: Path, tmp: Path, *, include_untracked: bool, prefix: str = "") -> str:
    """The content identity computed independently, with plain git commands and a fresh index."""
    index = tmp / "ref-index"
    if index.exists():
        index.unlink()
    top = Path(git(path, "rev-parse", "--show-toplevel"))
    user_index = Path(git(path, "rev-parse", "--absolute-git-dir")) / "index"
    if user_index.exists():
        # keep the index's mtime, as git's own index has it: a fresh mtime would
        # make a same-size edit in the same clock tick as the commit look clean
        shutil.copy2(user_index, index)
    git(top, "add", "-A" if include_untracked else "-u", "--", f":/{prefix}", index=index)
    git(
        top,
        "rm",
        "-r",
        "--cached",
        "-q",
        "--ignore-unmatch",
        "--",
        f":/{prefix}openspec",
        index=index,
    )
    args = ["write-tree"] + ([f"--prefix={prefix}"] if prefix else [])
    return git(top, *args, index=index)


def fingerprints(
    repos: dict[str, Path],
    providers: dict[str, Provider],
    *,
    env_values: dict[str, str] | None = None,
    services: dict[str, Service] | None = None,
    schema: str = "changeloop/receipt@1",
    key: bytes = b"k" * 32,
) -> dict[str, str]:
    """Every provider's fingerprint, computed the way the engine does (upstream first)."""
    from changeloop.fingerprints import fingerprint
    from changeloop.git.identity import content_identity
    from changeloop.providers import registry

    trees = {
        name: content_identity(path, include_untracked=True).tree for name, path in repos.items()
    }
    out: dict[str, str] = {}
    for name, p in providers.items():  # declared upstream-first in the tests
        adapter = registry.ADAPTERS[p.adapter]
        repo = p.repository or next(iter(repos))
        digest = fingerprint.inputs_digest(repos[repo], p.inputs) if p.inputs else None
        used = [(services or {})[s] for s in p.services]
        secrets = {*p.env_from, *(n for s in used for n in s.env_from)}  # services' too
        out[name] = fingerprint.compute(
            provider=p,
            adapter_inputs=adapter.fingerprint_inputs(p),
            effective_command=adapter.effective_command(p),
            trees={repo: trees[repo]},
            inputs_digest=digest,
            upstream={d: out[d] for d in p.depends_on},
            env_from_values={k: (env_values or {}).get(k, "") for k in sorted(secrets)},
            hmac_key=key,
            services=used,
            schema_version=schema,
        )
    return out


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {k for k in before if before[k] != after[k]}
