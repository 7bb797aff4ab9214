"""The one shape every ``evidence doctor`` finding has, and how findings are de-duplicated.

Example::

    DoctorFinding("tool-missing", "…", "install vitest", "npm ci", repository="web").to_json()
    # {"kind": "tool-missing", "message": "…", "suggested_action": "install vitest",
    #  "playbook_command": "npm ci", "severity": "error", "repository": "web"}

``quality.py`` and ``contracts/`` add their own findings in this shape too.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from changeloop.model import Repository


@dataclass(frozen=True)
class DoctorFinding:
    kind: str
    message: str
    suggested_action: str
    playbook_command: str | None
    severity: str = "error"  # "error" counts as unresolved; "info" does not
    repository: str | None = None
    capability: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "message": self.message,
            "suggested_action": self.suggested_action,
            "playbook_command": self.playbook_command,
            "severity": self.severity,
        }
        if self.repository is not None:
            out["repository"] = self.repository
        if self.capability is not None:
            out["capability"] = self.capability
        return out


def unique(findings: list[DoctorFinding]) -> list[DoctorFinding]:
    """One finding per (kind, repository, command): two providers of a repository
    needing the same install say it once."""
    seen: set[tuple[str, str | None, str | None]] = set()
    out = []
    for f in findings:
        key = (f.kind, f.repository, f.playbook_command)
        if f.playbook_command is not None and key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out


def cd_into(repo: Repository) -> str:
    """``cd <repo> && `` so a pasted command runs in the repository ('' at the workspace root)."""
    return "" if repo.relpath in (".", "") else f"cd {shlex.quote(repo.relpath)} && "


def edit_command(cdir: str, name: str) -> str:
    """The command that opens one of the change's files in the user's editor."""
    return f"${{EDITOR:-vi}} {cdir}/{name}"
