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


def begin(root: Path, change_id: str, sandbox: str) -> Content:
    """The content identities, begun: on a thread of its own, the record is read (not
    believed) and, when it names the workspace root as a repository, the root's content
    identity is computed at once. ``prove`` calls this as soon as it knows the change, so
    that git runs while the rest of the decision is imported and checked.

    The root is ours, not the record's, and its content is what the full path stages too;
    nothing computed is used unless the record verifies (changeloop.nochange.answer).
    """
    content = Content(sandbox)
    content.begin(root, change_id)
    return content


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
        # the record as :func:`begin` read it (bytes, payload, parsed payload), not verified
        self.early: tuple[bytes, bytes, dict[str, Any]] | None = None
        self._read = threading.Event()  # set once :meth:`begin`'s thread read the record
        self._read.set()

    def begin(self, root: Path, change_id: str) -> None:
        """Read the record and start the root's content identity, on a thread of its own."""
        self._read.clear()
        self._spawn(self._begun, root, change_id)

    def _begun(self, root: Path, change_id: str) -> None:
        from changeloop.nochange.signed import read_record  # noqa: PLC0415 - on this thread, while the caller imports the rest
        from changeloop.workspace.state import STATE  # noqa: PLC0415 - on this thread, while the caller imports the rest

        todo: list[tuple[str, Any]] = []
        try:  # any failure here is said again, in its place, once the state checks passed
            self.early = read_record(root / STATE, change_id)
            todo = self._claim(self.early[2], only=root)
        except Exception:  # read again on the calling thread, which says why
            self.early = None
        finally:
            self._read.set()
        self._run(todo)

    def record(self) -> tuple[bytes, bytes, dict[str, Any]] | None:
        """The record :meth:`begin` read, not verified (None: none, or unreadable); waits for
        that read only, not for git."""
        self._read.wait()
        return self.early

    def start(self, doc: Mapping[str, Any], *, only: Path | None = None) -> None:
        """Start the repositories of ``doc`` not started yet (with ``only``: the one whose
        checkout is that directory, if any)."""
        todo = self._claim(doc, only=only)
        if todo:
            self._spawn(self._run, todo)

    def _claim(self, doc: Mapping[str, Any], *, only: Path | None) -> list[tuple[str, Any]]:
        """The repositories of ``doc`` to start now, marked started."""
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
        return todo

    def _spawn(self, target: Any, *args: Any) -> None:
        worker = threading.Thread(target=target, args=args, name="changeloop-content", daemon=True)
        try:
            worker.start()
        except RuntimeError:  # no thread to be had: the same work, here and now
            target(*args)
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
