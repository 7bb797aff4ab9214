"""Process discipline: own process group, timeout, TERM→grace→KILL, redacted logs.

Every command runs as the leader of a new session (so of a new process group),
and whatever it leaves behind in that group is ended with it: a grandchild that
ignores SIGTERM and holds the output pipe can neither hang changeloop nor
outlive the run (DESIGN.md §5).

    result = await run_process(["pytest", "-q"], cwd=repo, env=dict(os.environ),
                               timeout_ms=1_800_000, log_dir=run_dir / "logs",
                               log_name="unit", secrets=[token])
    if result.spawn_error: ...          # missing executable: a reason, not a crash
    elif result.timed_out: ...
    else: result.exit_code

Output goes to ``<log_dir>/<log_name>.log`` (stdout and stderr interleaved in
the order read) and ``<log_name>.stdout`` (stdout alone, for report parsers).
Secret values are redacted before any byte reaches a file or a tail. Tails keep
the last 40 lines and at most 4 KiB (``process_output.TAIL_LINES``, ``TAIL_BYTES``).

When ``log_dir`` lies inside ``.changeloop/runs/<run-id>/``, its processes carry
``CHANGELOOP_OWNER`` from the start, and a group still running after
:data:`RECORD_AFTER_S` is recorded there (``pgroups/<pgid>.json``, with its
leader's start time) until it ends: if changeloop itself is killed with -9, the
next ``prove`` ends them (``sweep.sweep``: by record, and by the marker
for anything started in the instant before its record). A command that is over
sooner (most are) costs no record file at all.

Limit: a descendant that calls ``setsid()`` itself leaves our group and is not
ours to find by group (its inherited ``CHANGELOOP_OWNER`` still finds it after a
crash); if it keeps the output pipe open we stop reading after
:data:`DRAIN_S` seconds and say so in the log instead of hanging.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc

from changeloop.identity import GIT_REDIRECTS
from changeloop.process_groups import (
    OWNER_ENV,
    claim_run,
    end_group,
    forget_group,
    owner_marker,
    record_group,
    run_dir_of,
)
from changeloop.process_output import Output
from changeloop.spawn import Child, environ, start_child

DRAIN_S = 2.0  # how long we keep reading after the group is gone (see module doc)
# A group is recorded for the sweep once it has run this long (see module doc).
RECORD_AFTER_S = 0.05


@dataclass(frozen=True)
class ProcessResult:
    argv: tuple[str, ...]
    exit_code: int | None  # None when it never started or was killed
    timed_out: bool
    spawn_error: str | None  # e.g. "executable not found: npx"
    duration_ms: int
    log_path: Path  # stdout and stderr interleaved, secrets redacted
    stdout_path: Path  # stdout alone, secrets redacted (for parsers)
    log_sha256: str
    stdout_tail: str
    stderr_tail: str
    log_tail: str
    # Signal that ended the main child when we did not send it (e.g. SIGSEGV).
    signal: int | None = None
    # Processes of the group still alive when the main child exited (then ended by us).
    leftovers: bool = False


class SpawnError(Exception):
    """The command could not be started; ``reason`` is the user-facing sentence."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def _spawn_reason(argv: Sequence[str], cwd: Path, exc: OSError) -> str:
    if not cwd.is_dir():
        return f"working directory not found: {cwd}"
    if isinstance(exc, FileNotFoundError):
        return f"executable not found: {argv[0]}"
    if isinstance(exc, PermissionError):
        return f"permission denied: {argv[0]}"
    return f"cannot start {argv[0]}: {exc.strerror or exc}"


class RunningProcess:
    """A started command whose output is being pumped to its log files.

    Used directly for long-running services (``start_process``) and internally
    by :func:`run_process`; both end the whole group the same way. Exit is
    awaited on a pidfd and the pipes are read by event-loop reader callbacks
    from the moment the command starts: no asyncio transports, no
    child-watcher thread, no task per pipe (bench/README.md "Scheduler").
    """

    def __init__(
        self,
        child: Child,
        fds: tuple[int, int],
        output: Output,
        argv: Sequence[str],
        run_dir: Path | None = None,
    ) -> None:
        self._child = child
        self._run_dir = run_dir
        self._record: Path | None = None  # .changeloop/runs/<id>/pgroups/<pgid>.json
        self.output = output
        self.argv = tuple(argv)
        self.pid = child.pid  # == the process group id (a session of its own)
        self.log_path = output.log_path
        self.stdout_path = output.stdout_path
        self._loop = asyncio.get_running_loop()
        self._open: dict[int, str] = {}  # pipe fd -> stream name, until its end is read
        self._drained = asyncio.Event()
        self._exited: asyncio.Future[None] | None = None
        self.write_error: OSError | None = None  # the log could not be written
        try:
            self._pidfd: int | None = os.pidfd_open(child.pid)
        except (AttributeError, OSError):  # pragma: no cover - not Linux ≥ 5.3
            self._pidfd = None
        for fd, name in zip(fds, ("stdout", "stderr"), strict=True):
            self._open[fd] = name
            self._loop.add_reader(fd, self._readable, fd)
        # The group's record is written once it has run RECORD_AFTER_S: most commands
        # are over by then and need none (see record_later).
        self._record_timer: asyncio.TimerHandle | None = None
        if run_dir is not None:
            self._record_timer = self._loop.call_later(RECORD_AFTER_S, self._record_now)

    @property
    def returncode(self) -> int | None:
        return self._child.returncode

    async def wait(self) -> int:
        """Wait for the main child to exit (and reap it); its group may still hold members."""
        if self._child.returncode is None:
            if self._pidfd is not None:
                if self._exited is None:  # one reader on the pidfd, shared by every waiter
                    self._exited = self._loop.create_future()
                    self._loop.add_reader(self._pidfd, self._on_exit)
                await asyncio.shield(self._exited)  # a cancelled waiter leaves it to the others
            else:  # pragma: no cover
                delay = 0.001
                while self._child.poll() is None:
                    await anyio.sleep(delay)
                    delay = min(delay * 2, 0.05)
        return self._child.wait()

    async def terminate(self, grace_s: float = 5.0) -> int:
        """End the whole group (TERM, grace, KILL), finish the logs, return the exit code.

        Shielded: ending a group is cleanup that must finish even when the
        caller is being cancelled.
        """
        with anyio.CancelScope(shield=True):
            await end_group(self.pid, grace_s)
            code = await self.wait()
            await self._finish_output()
            self._forget()
        return code

    def tail(self, stream: str = "log") -> str:
        """Bounded redacted tail of ``log`` (interleaved), ``stdout`` or ``stderr``."""
        return self.output.tails[stream].text()

    def _record_now(self) -> None:
        """Record the group for a later sweep (process_groups.record_group).

        Only while its leader is unreaped: a reaped pid may belong to another
        process by now, and a record naming it could get that one killed.
        """
        self._record_timer = None
        if self._run_dir is not None and self._child.returncode is None:
            self._record = record_group(self._run_dir, self.pid, self.argv)

    def _forget(self) -> None:
        if self._record_timer is not None:
            self._record_timer.cancel()
            self._record_timer = None
        forget_group(self._record)
        self._record = None

    def _readable(self, fd: int) -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:  # the pipe broke: nothing more will come
            data = b""
        if not data:
            self._close(fd)
        elif self.write_error is None:  # after a failed write the pipe is still drained
            try:
                self.output.write(self._open[fd], data)
            except OSError as exc:  # a full disk: run_process raises it once the group ended
                self.write_error = exc

    def _close(self, fd: int) -> None:
        self._loop.remove_reader(fd)
        os.close(fd)
        del self._open[fd]
        if not self._open:
            self._drained.set()

    def _on_exit(self) -> None:
        assert self._pidfd is not None and self._exited is not None
        self._loop.remove_reader(self._pidfd)
        if not self._exited.done():
            self._exited.set_result(None)

    async def _pump_all(self) -> None:
        """Until both pipes reached their end (the readers run on their own)."""
        await self._drained.wait()

    async def _finish_output(self) -> None:
        """Read to EOF (bounded by DRAIN_S), then close the log files."""
        if self._open:
            with anyio.move_on_after(DRAIN_S):
                await self._drained.wait()
        if self._open:
            for fd in list(self._open):
                self._close(fd)
            self.output.note(
                f"stopped reading output after {DRAIN_S:g}s: a process outside the group"
                " still holds it open"
            )
        if self._pidfd is not None:
            if self._exited is not None and not self._exited.done():
                self._loop.remove_reader(self._pidfd)
                self._exited.cancel()
            os.close(self._pidfd)
            self._pidfd = None
        self.output.close()


_DEVNULL: dict[int, int] = {}  # pid -> a /dev/null fd kept open for every child's stdin


def _devnull() -> int:
    """One read-only /dev/null per process, not one open and close per command."""
    pid = os.getpid()
    if pid not in _DEVNULL:
        _DEVNULL.clear()  # a forked child must not share its parent's bookkeeping
        _DEVNULL[pid] = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    return _DEVNULL[pid]


async def _spawn(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    log_dir: Path,
    log_name: str,
    secrets: Sequence[str],
) -> RunningProcess:
    output = Output(log_dir, log_name, secrets)
    if not argv:
        output.close()
        raise SpawnError("empty command")
    run_dir = run_dir_of(log_dir)
    # Git finds the repository from the working directory (the sandbox's own .git):
    # a GIT_DIR inherited from a hook must not point a provider's git at the user's.
    env = dict(env)
    for name in GIT_REDIRECTS:
        env.pop(name, None)
    if run_dir is not None:  # a run's process: marked, so a later run can find it (§5 Faults)
        env[OWNER_ENV] = owner_marker()
    out_r, out_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    err_r, err_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    os.set_blocking(out_w, True)  # the child's ends block, as any program expects
    os.set_blocking(err_w, True)
    try:
        child = start_child(
            argv,
            cwd=cwd,
            env=env,
            stdin=_devnull(),
            stdout=out_w,
            stderr=err_w,
            parent_path=environ().get("PATH"),
        )
    except OSError as exc:
        os.close(out_r)
        os.close(err_r)
        reason = _spawn_reason(argv, cwd, exc)
        output.note(reason)
        output.close()
        raise SpawnError(reason) from exc
    finally:
        os.close(out_w)
        os.close(err_w)
    if run_dir is not None:
        claim_run(run_dir)  # once per run: the run is known to a later sweep from now on
    return RunningProcess(child, (out_r, err_r), output, argv, run_dir)


async def start_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    log_dir: Path,
    log_name: str,
    task_group: anyio.abc.TaskGroup,
    secrets: Sequence[str] = (),
) -> RunningProcess:
    """Start a long-running command (a service); its output is pumped in ``task_group``.

    Raises :class:`SpawnError` when it cannot start. The caller must
    ``await proc.terminate(grace_s)`` before ``task_group`` exits.
    """
    running = await _spawn(
        argv, cwd=cwd, env=env, log_dir=log_dir, log_name=log_name, secrets=secrets
    )
    task_group.start_soon(running._pump_all)
    return running


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_ms: int,
    log_dir: Path,
    log_name: str,
    secrets: Sequence[str] = (),
    grace_s: float = 5.0,
) -> ProcessResult:
    """Run one command to completion under the discipline of the module doc.

    Never raises for a command that cannot start (``spawn_error`` is set);
    cancellation ends the group (TERM, grace, KILL) in a shielded cleanup and
    propagates.
    """
    started = time.monotonic()
    try:
        running = await _spawn(
            argv, cwd=cwd, env=env, log_dir=log_dir, log_name=log_name, secrets=secrets
        )
    except SpawnError as exc:
        return _not_started(argv, exc.reason, started, log_dir, log_name)
    timed_out = leftovers = False
    try:
        with anyio.move_on_after(timeout_ms / 1000) as limit:
            await running.wait()
        timed_out = limit.cancelled_caught
        if timed_out:
            running.output.note(f"timed out after {timeout_ms} ms; ending process group")
        leftovers = await end_group(running.pid, grace_s)
        if leftovers and not timed_out:
            running.output.note("ended processes the command left running in its group")
        await running.terminate(grace_s)
    except BaseException:
        with anyio.CancelScope(shield=True):
            running.output.note("cancelled; ending process group")
            await running.terminate(grace_s)
        raise
    if running.write_error is not None:  # as when a pump task raised: the caller says why
        raise running.write_error
    code = running.returncode
    sig = -code if code is not None and code < 0 and not timed_out else None
    out = running.output
    return ProcessResult(
        argv=tuple(argv),
        exit_code=None if timed_out or sig is not None else code,
        timed_out=timed_out,
        spawn_error=None,
        duration_ms=int((time.monotonic() - started) * 1000),
        log_path=out.log_path,
        stdout_path=out.stdout_path,
        log_sha256=out.sha256,
        stdout_tail=out.tails["stdout"].text(),
        stderr_tail=out.tails["stderr"].text(),
        log_tail=out.tails["log"].text(),
        signal=sig,
        leftovers=leftovers and not timed_out,
    )


def _not_started(
    argv: Sequence[str], reason: str, started: float, log_dir: Path, log_name: str
) -> ProcessResult:
    """The result of a command that never started (its log holds the reason)."""
    log_path = log_dir / f"{log_name}.log"
    data = log_path.read_bytes()
    text = data.decode("utf-8", "replace")
    return ProcessResult(
        argv=tuple(argv),
        exit_code=None,
        timed_out=False,
        spawn_error=reason,
        duration_ms=int((time.monotonic() - started) * 1000),
        log_path=log_path,
        stdout_path=log_dir / f"{log_name}.stdout",
        log_sha256=hashlib.sha256(data).hexdigest(),
        stdout_tail="",
        stderr_tail="",
        log_tail=text,
    )
