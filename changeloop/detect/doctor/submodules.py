"""Doctor's note on submodules that are not checked out.

A sandbox reproduces the checkout as the user has it, so an uninitialized
submodule is an empty folder there too (docs/sandboxes.md, "Submodules"). Tests
that need its files then fail for a reason that has nothing to do with the
change; the note names each one and the command that checks it out. It is
informational: an empty folder is also what the user's own checkout holds.
"""

from __future__ import annotations

from collections.abc import Iterable

from changeloop.detect.doctor.finding import DoctorFinding, cd_into
from changeloop.git import submodules
from changeloop.model import Repository


def submodule_findings(repositories: Iterable[Repository]) -> list[DoctorFinding]:
    """One ``submodule-uninitialized`` note per repository with any such submodule."""
    out = []
    for repo in repositories:
        paths = submodules.uninitialized(repo.path)
        if not paths:
            continue
        out.append(
            DoctorFinding(
                "submodule-uninitialized",
                "; ".join(submodules.note(path) for path in paths),
                "check the submodules out if the change's tests need their files",
                f"{cd_into(repo)}git submodule update --init --recursive",
                severity="info",
                repository=repo.name,
            )
        )
    return out
