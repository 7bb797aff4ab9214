"""A change named as a URI: its repository (the remote URL where there is one) and its path.

Example::

    resource_uri(plan)   # "git+https://github.com/acme/web.git#openspec/changes/add-greeting"

The summary VSA's ``resourceUri``. The remote is ``origin`` (else the first
remote); credentials in its URL are never written; ``git@host:org/repo.git`` is
spelled ``ssh://host/org/repo.git``. A repository without a remote is named by
its ``file://`` URL.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from changeloop.git.repo import git
from changeloop.plan import display_path

if TYPE_CHECKING:
    from changeloop.model import Plan

__all__ = ["repository_url", "resource_uri"]

_SCP = re.compile(r"^(?:[^@/:]+@)?(?P<host>[^/:]+):(?P<path>.+)$")


def resource_uri(plan: Plan) -> str:
    """``git+<the repository's remote URL>#<the change's path in it>``.

    Without a remote, the repository is named by its ``file://`` URL; credentials in a
    remote URL are never written.
    """
    top = git(["rev-parse", "--show-toplevel"], cwd=plan.root, check=False)
    if top.returncode != 0:
        return f"openspec-change:{plan.change.id}"
    toplevel = Path(top.stdout.decode().strip())
    change = display_path(toplevel, plan.change.path)
    return f"git+{repository_url(toplevel)}#{change}"


def repository_url(toplevel: Path) -> str:
    """``origin``'s URL (else the first remote's), without credentials; else ``file://``."""
    remotes = git(["remote"], cwd=toplevel, check=False).stdout.decode().split()
    name = "origin" if "origin" in remotes else (remotes[0] if remotes else None)
    if name is not None:
        found = git(["config", "--get", f"remote.{name}.url"], cwd=toplevel, check=False)
        url = found.stdout.decode().strip()
        if url:
            return _uri_of_remote(url)
    return toplevel.resolve().as_uri()


def _uri_of_remote(url: str) -> str:
    scp = _SCP.match(url) if "://" not in url else None
    if scp is not None:  # git@host:org/repo.git, as ssh://host/org/repo.git
        return f"ssh://{scp['host']}/{scp['path'].lstrip('/')}"
    parts = urlsplit(url)
    if not parts.scheme:  # a local path
        return Path(url).resolve().as_uri()
    host = parts.hostname or ""
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
