"""Starting one child in a session of its own: ``subprocess.Popen``, one road for every command.

``Popen(argv, cwd=cwd, env=env, start_new_session=True, stdin=…, stdout=…,
stderr=…)`` is the whole discipline the process layer needs of a start:

- the child leads a new session, so a new process group (``start_new_session``);
- every descriptor above 2 is closed in the child (``close_fds``, the default);
- SIGPIPE and SIGXFSZ, which Python ignores for itself, are back at their
  defaults in the child (``restore_signals``, the default);
- it starts in ``cwd``, and a relative program is found from there; a bare
  name is searched in the child's own ``PATH``;
- what a C string cannot carry (a NUL in ``argv``, ``env`` or ``cwd``, a ``=``
  in a variable's name) is refused with ``ValueError``, never cut short; a
  program or directory that is not there is ``FileNotFoundError``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

__all__ = ["Child", "start_child"]


class Child(Protocol):
    """What the process layer needs of a started child (``Popen`` has it)."""

    pid: int

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self) -> int: ...


def start_child(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: int,
    stdout: int,
    stderr: int,
) -> Child:
    """Start ``argv`` as the leader of a new session; ``OSError`` when it cannot start."""
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
    )
