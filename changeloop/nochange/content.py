"""The content identities of a record's repositories, computed on threads of their own.

git (waiting on processes) runs in the background while the calling thread reads and
verifies the record and checks the rest of its key (changeloop.nochange.answer); the
outcome is taken back on the calling thread, in the record's order of repositories.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from changeloop.nochange.miss import Miss


def begin(root: Path, sandbox: str) -> Content:
    """The content identities, begun: the workspace root's is computed at once, on a thread of
    its own, before any record is read. ``prove`` calls this as soon as it knows the change, so
    that git runs while the rest of the decision is imported and the record is read.

    The root is ours, not the record's, and its content is what the full path stages too:
    its tree is handed to the full path on any miss, while nothing computed decides an
    answer unless the record verifies (changeloop.nochange.answer).
    """
    content = Content(sandbox)
    content.begin(root)
    return content


class Content:
    """The content identities of a record's repositories, computed on threads of their own
    (:meth:`begin`, :meth:`start`); their outcome is taken on the calling thread
    (:meth:`verdict`, :meth:`hand_on`), in the record's order of repositories."""

    def __init__(self, sandbox: str) -> None:
        self._untracked = sandbox != "worktree"
        self._root: Path | None = None
        self._root_key: str | None = None  # the root's resolved path: its tree's key
        self._repositories: list[tuple[str, Mapping[str, Any], str]] = []  # name, entry, key
        self._trees: dict[str, str] = {}  # key (checkout path) -> tree computed
        self._errors: dict[str, BaseException] = {}  # key -> the error computing its tree
        self._threads: list[Any] = []

    def begin(self, root: Path) -> None:
        """Start the root's content identity, on a thread of its own."""
        self._root, self._root_key = root, str(root.resolve())
        self._spawn([self._root_key])

    def start(self, doc: Mapping[str, Any]) -> None:
        """Take the repositories of the record ``doc`` (read, not yet verified) and start those
        not begun: only their paths are taken before its signature is checked (git there,
        with a temporary index, writes objects and nothing else)."""
        repositories = doc["repositories"]
        if not isinstance(repositories, Mapping) or not all(
            isinstance(r, Mapping) and isinstance(r.get("path"), str) for r in repositories.values()
        ):
            raise TypeError("the record's repositories are not what this changeloop writes")
        self._repositories = [
            (name, repo, self._key_of(repo["path"])) for name, repo in repositories.items()
        ]
        todo = [key for _name, _repo, key in self._repositories if key != self._root_key]
        if todo:
            self._spawn(todo)

    def _key_of(self, recorded: str) -> str:
        """The key of a recorded checkout path: the root's when it is the root."""
        if self._root is not None and self._root_key and _same_dir(recorded, self._root):
            return self._root_key
        return recorded

    def _spawn(self, paths: list[str]) -> None:
        content_tree = _git_side()
        worker = threading.Thread(
            target=self._compute,
            args=(content_tree, paths),
            name="changeloop-content",
            daemon=True,
        )
        try:
            worker.start()
        except RuntimeError:  # no thread to be had: the same work, here and now
            self._compute(content_tree, paths)
            return
        self._threads.append(worker)

    def _compute(self, content_tree: Callable[..., str], paths: list[str]) -> None:
        for path in paths:
            try:
                self._trees[path] = content_tree(Path(path), include_untracked=self._untracked)
            except BaseException as exc:  # re-raised on the joining thread
                self._errors[path] = exc
                return  # the next ones are not needed: this one decided

    def wait(self) -> None:
        for worker in self._threads:
            worker.join()

    def verdict(self) -> None:
        """Wait; the first repository's miss or error (in the record's order), raised here."""
        self.wait()
        for name, repo, key in self._repositories:
            if key in self._errors:
                raise self._errors[key]
            if key not in self._trees:
                raise Miss(f"the content of repository {name} was not identified")
            if self._trees[key] != repo["tree"]:
                raise Miss(f"the content of repository {name} changed")
            if repo["symlinks"] and _links_leave(Path(repo["path"]), repo["symlinks"]):
                raise Miss(f"a link of repository {name} now leaves it")

    def hand_on(self, seen: dict[str, str], *, verified: bool) -> None:
        """Wait; the trees computed, for the full path to start from (a miss): the root's
        always (the root is ours, not the record's), by its checkout path; the record's
        repositories' only once it ``verified``, by their recorded checkout paths."""
        self.wait()
        if self._root_key in self._trees:
            seen[self._root_key] = self._trees[self._root_key]
        if verified:
            for _name, repo, key in self._repositories:
                if key in self._trees:
                    seen[repo["path"]] = self._trees[key]


def _git_side() -> Callable[..., str]:
    """The content identity's code, imported here on the calling thread, never on the
    content thread: while one thread imports, the other waits for the import lock inside a
    module lock's weakref callback, and a signal whose handler raises there is swallowed
    ("Exception ignored in"), so an interrupt would be lost. (A repository without an
    index file, staged from HEAD, still imports the model there: rare, and only then.)"""
    import atexit  # noqa: F401, PLC0415 - weakref.finalize (a TemporaryDirectory) imports it at first use

    from changeloop.git import submodules  # noqa: F401, PLC0415 - kept off the imports until the check begins
    from changeloop.git.identity import content_tree  # noqa: PLC0415 - kept off the imports until the check begins

    return content_tree


def _same_dir(recorded: Any, directory: Path) -> bool:
    """Whether the record's checkout path ``recorded`` is ``directory``."""
    try:
        return Path(recorded).samefile(directory)
    except (OSError, TypeError, ValueError):
        return False


def _links_leave(path: Path, links: Sequence[str]) -> bool:
    from changeloop.fingerprints.fingerprint import external_symlinks  # noqa: PLC0415 - kept off the no-change answer's imports

    return bool(external_symlinks(path, links))
