"""The reproducible content commit, and git settings passed through the environment.

A commit of a content tree has a fixed author and committer and the user's HEAD
commit date, so the same content on the same HEAD is the same commit id on
every machine. Sandboxes and submodules both write it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from changeloop.git.repo import GitLayout, git, git_env

COMMIT_MESSAGE = "changeloop sandbox"


# A fixed identity keeps the commit id independent of the user's git config.
IDENT = {
    "GIT_AUTHOR_NAME": "changeloop",
    "GIT_AUTHOR_EMAIL": "changeloop@localhost",
    "GIT_COMMITTER_NAME": "changeloop",
    "GIT_COMMITTER_EMAIL": "changeloop@localhost",
}


def with_config(env: Mapping[str, str], settings: Mapping[str, str]) -> dict[str, str]:
    """``env`` plus git ``-c`` settings passed through ``GIT_CONFIG_COUNT`` (appended)."""
    out = dict(env)
    count = int(out.get("GIT_CONFIG_COUNT", "0") or "0")
    for key, value in settings.items():
        out[f"GIT_CONFIG_KEY_{count}"] = key
        out[f"GIT_CONFIG_VALUE_{count}"] = value
        count += 1
    out["GIT_CONFIG_COUNT"] = str(count)
    return out


def own_env(root: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for git acting on the sandbox at ``root`` (never the user's hooks)."""
    env = git_env(
        extra={"GIT_DIR": str(root / ".git"), "GIT_WORK_TREE": str(root), **(extra or {})}
    )
    return with_config(env, {"core.hooksPath": os.devnull})


def content_commit(
    root: Path, tree: str, lay: GitLayout, *, env: Mapping[str, str] | None = None
) -> str:
    """The sandbox's commit of ``tree``: parent the user's HEAD, reproducible id.

    ``env`` names the repository written to (default: the sandbox's own); a
    dirty submodule's content commit is written into the user's submodule
    (``changeloop.git.submodules``), which moves no ref there.
    """
    base = own_env(root) if env is None else dict(env)
    date = "@0 +0000"  # "@": git reads the number as seconds since the epoch, even 0
    if lay.head is not None:
        # The raw header, not `git show --format` (which config such as
        # log.showSignature could add to): "committer <ident> <seconds> <zone>".
        raw = git(["cat-file", "commit", lay.head], cwd=root, env=base).stdout
        for line in raw.split(b"\n"):
            if not line:
                break  # end of the headers
            if line.startswith(b"committer "):
                seconds, zone = line.decode(errors="replace").rsplit(" ", 2)[1:]
                date = f"@{seconds} {zone}"
    dated = {**base, **IDENT, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    env = with_config(dated, {"i18n.commitEncoding": "UTF-8"})
    parents = ["-p", lay.head] if lay.head else []
    args = ["commit-tree", "--no-gpg-sign", tree, *parents, "-m", COMMIT_MESSAGE]
    return git(args, cwd=root, env=env).stdout.decode().strip()
