"""The content identities of a record's repositories, computed on threads of their own.

git (waiting on processes) runs in the background while
the calling thread verifies the record and checks the rest of its key
(changeloop.nochange.answer); the outcome is taken back on the calling thread.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from changeloop.nochange.miss import Miss


class Content:
    """The content identities of a record's repositories, computed on threads of their own
    (:meth:`start`); their outcome is taken on the calling thread (:meth:`verdict`,
    :meth:`hand_on`), in the record's order of repositories."""

    def __init__(self, sandbox: str) -> None:
        self._untracked = sandbox != "worktree"
        self._order: list[str] = []  # repository names in the record's order
        self._started: set[str] = set()
        self._trees: dict[str, str] = {}  # checkout path -> tree computed
        self._errors: dict[str, BaseException] = {}  # name -> its miss or error
        self._threads: list[Any] = []

    def start(self, doc: Mapping[str, Any], *, only: Path | None = None) -> None:
        """Start the repositories of ``doc`` not started yet (with ``only``: the one whose
        checkout is that directory, if any)."""
        repositories = doc["repositories"]
        if not isinstance(repositories, Mapping) or not all(
            isinstance(r, Mapping) and isinstance(r.get("path"), str) for r in repositories.values()
        ):
            raise TypeError("the record's repositories are not what this changeloop writes")
        self._order = list(repositories)
        todo = []
        for name, repo in repositories.items():
            if name in self._started:
                continue
            if only is not None and not _same_dir(repo["path"], only):
                continue
            self._started.add(name)
            todo.append((name, repo))
        if todo:
            worker = threading.Thread(
                target=self._run, args=(todo,), name="changeloop-content", daemon=True
            )
            try:
                worker.start()
            except RuntimeError:  # no thread to be had: the same work, here and now
                self._run(todo)
                return
            self._threads.append(worker)

    def _run(self, todo: list[tuple[str, Any]]) -> None:
        for name, repo in todo:
            try:
                _same_content(name, repo, self._untracked, self._trees)
            except BaseException as exc:  # re-raised on the joining thread
                self._errors[name] = exc
                return  # the next ones are not needed: this one decided

    def wait(self) -> None:
        for worker in self._threads:
            worker.join()

    def verdict(self) -> None:
        """Wait; the first repository's miss or error (in the record's order), raised here."""
        self.wait()
        for name in self._order:
            if name in self._errors:
                raise self._errors[name]

    def hand_on(self, seen: dict[str, str]) -> None:
        """Wait; the trees computed, for the full path to start from (a miss)."""
        self.wait()
        seen.update(self._trees)


def _same_dir(recorded: Any, directory: Path) -> bool:
    """Whether the record's checkout path ``recorded`` is ``directory``."""
    try:
        return Path(recorded).samefile(directory)
    except (OSError, TypeError, ValueError):
        return False


def _same_content(
    name: str, repo: Mapping[str, Any], untracked: bool, seen: dict[str, str]
) -> None:
    """The repository's content identity (into ``seen``), and no link in it leaving it."""
    from changeloop.git.identity import content_tree  # noqa: PLC0415 - kept off the no-change answer's imports

    path = Path(repo["path"])
    tree = content_tree(path, include_untracked=untracked)
    seen[str(path)] = tree
    if tree != repo["tree"]:
        raise Miss(f"the content of repository {name} changed")
    if repo["symlinks"] and _links_leave(path, repo["symlinks"]):
        raise Miss(f"a link of repository {name} now leaves it")


def _links_leave(path: Path, links: Sequence[str]) -> bool:
    from changeloop.fingerprints.fingerprint import external_symlinks  # noqa: PLC0415 - kept off the no-change answer's imports

    return bool(external_symlinks(path, links))
