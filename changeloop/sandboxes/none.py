"""``--sandbox none``: providers run in the user's checkout itself.

Nothing is copied, so nothing isolates the checkout from provider writes; the
identity includes untracked-not-ignored files because that is what providers see.
"""

from __future__ import annotations

from pathlib import Path

from changeloop.git.identity import content_identity
from changeloop.model import ContentIdentity, Repository, SandboxMode
from changeloop.sandboxes.base import Sandbox


class InPlace(Sandbox):
    def __init__(self, path: Path, identity: ContentIdentity) -> None:
        self.mode: SandboxMode = "none"
        self.path = path
        self.identity = identity

    def remove(self) -> None:
        """Nothing to remove: the checkout is the user's."""


def create(repo: Repository, base_dir: Path) -> Sandbox:
    del base_dir  # in place: no directory of our own
    return InPlace(repo.path, content_identity(repo.path, include_untracked=True))
