"""``Sandboxes``: each repository's content identity, sandbox and setup, made once per run.

An async context manager: on exit every sandbox it made is removed (unless
``keep``), shielded from cancellation. It owns the per-repository locks, so two
providers of one repository share one sandbox and one ``setup``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from pathlib import Path
from types import TracebackType

import anyio

from changeloop import sandboxes
from changeloop.git.identity import content_identity, identity_of_tree
from changeloop.model import ContentIdentity, Plan, SandboxMode
from changeloop.sandboxes.none import InPlace

Setup = Callable[[str, Path], Awaitable[bool]]  # (repository, workdir) -> setup succeeded


class Sandboxes:
    def __init__(
        self,
        plan: Plan,
        mode: SandboxMode,
        root: Path,
        *,
        keep: bool = False,
        trees: Mapping[str, str] | None = None,
    ) -> None:
        self._plan = plan
        self._trees = dict(trees or {})  # checkout path -> tree computed moments ago
        self.mode = mode
        self._root = root  # .changeloop/sandboxes
        self._keep = keep
        self._identities: dict[str, ContentIdentity] = {}
        self._boxes: dict[str, sandboxes.Sandbox] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self._setup: dict[str, bool] = {}

    async def __aenter__(self) -> Sandboxes:
        await anyio.to_thread.run_sync(sandboxes.cleanup_stale, self._root)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._remove)

    def identity(self, repo: str) -> ContentIdentity:
        """The repository's content identity: its sandbox's once made, else its checkout's."""
        if repo not in self._identities:
            path = self._plan.repositories[repo].path
            untracked = self.mode != "worktree"
            known = self._trees.pop(str(path), None)
            self._identities[repo] = (
                identity_of_tree(path, known)
                if known is not None
                else content_identity(path, include_untracked=untracked)
            )
        return self._identities[repo]

    def identities(self) -> dict[str, ContentIdentity]:
        """The content identities made so far (what this run's receipts name)."""
        return dict(self._identities)

    def made(self, repo: str) -> Path | None:
        box = self._boxes.get(repo)
        return box.path if box is not None else None

    async def workdir(self, repo: str) -> Path:
        """The repository's sandbox, made on first need and shared by its providers."""
        made = self._boxes.get(repo)
        if made is not None:  # made already: no lock (and no trip through the event loop)
            return made.path
        async with self._lock(repo):
            if repo not in self._boxes:
                repository = self._plan.repositories[repo]
                known = self._identities.get(repo) if self.mode == "none" else None
                if known is not None:  # in place: the checkout this run identified already
                    box: sandboxes.Sandbox = InPlace(repository.path, known)
                else:
                    make = partial(sandboxes.create, self.mode, repository, self._root)
                    box = await anyio.to_thread.run_sync(make)
                self._boxes[repo] = box
                self._identities[repo] = box.identity
        return self._boxes[repo].path

    async def ready(self, repo: str, setup: Setup) -> bool:
        """Run the repository's ``setup`` once for its sandbox; later callers get the answer."""
        if repo in self._setup:  # decided (its sandbox exists): the answer without a lock
            return self._setup[repo]
        workdir = await self.workdir(repo)
        async with self._lock(f"setup:{repo}"):
            if repo not in self._setup:
                self._setup[repo] = await setup(repo, workdir)
            return self._setup[repo]

    def _lock(self, key: str) -> anyio.Lock:
        return self._locks.setdefault(key, anyio.Lock())

    def _remove(self) -> None:
        if self._keep:
            return
        for box in self._boxes.values():
            box.remove()
