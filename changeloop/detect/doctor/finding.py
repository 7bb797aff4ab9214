"""The one shape every ``evidence doctor`` finding has, and how findings are de-duplicated.

Example::

    DoctorFinding("tool-missing", "…", "install vitest", "npm ci", repository="web").to_json()
    # {"kind": "tool-missing", "message": "…", "suggested_action": "install vitest",
    #  "playbook_command": "npm ci", "severity": "error", "repository": "web"}

``quality.py`` and ``contracts/`` add their own findings in this shape too.

No finding opens an editor: where a file must be edited, the finding carries the
exact text to add (``edit``: the file and the text) and ``playbook_command`` is
only ever a command that does the whole job when pasted.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from changeloop.detect.playbook import FileEdit, change_file
from changeloop.model import Repository

__all__ = ["DoctorFinding", "FileEdit", "cd_into", "change_file", "unique"]


@dataclass(frozen=True)
class DoctorFinding:
    kind: str
    message: str
    suggested_action: str
    playbook_command: str | None
    severity: str = "error"  # "error" counts as unresolved; "info" does not
    repository: str | None = None
    capability: str | None = None
    edit: FileEdit | None = None  # where a file must be edited: the exact text to add

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
        if self.edit is not None:
            out["edit"] = self.edit.to_json()
        return out


def unique(findings: list[DoctorFinding]) -> list[DoctorFinding]:
    """One finding per (repository, command): two providers of a repository needing
    the same install say it once, whichever finding found it first (a runner missing
    and node_modules missing are both `npm install`)."""
    seen: set[tuple[str | None, str | None]] = set()
    out = []
    for f in findings:
        key = (f.repository, f.playbook_command)
        if f.playbook_command is not None and key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out


def cd_into(repo: Repository) -> str:
    """``cd <repo> && `` so a pasted command runs in the repository ('' at the workspace root)."""
    return "" if repo.relpath in (".", "") else f"cd {shlex.quote(repo.relpath)} && "
