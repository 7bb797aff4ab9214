"""Process discipline: own process group, timeout, TERM→grace→KILL, redacted logs.

Every command runs as the leader of a new session (so of a new process group),
and whatever it leaves behind in that group is ended with it: a grandchild that
ignores SIGTERM and holds the output pipe can neither hang changeloop nor
outlive the run (docs/processes.md).

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

When ``log_dir`` lies inside ``.changeloop/runs/<run-id>/`` (a provider, a
setup command, a service), git in it never climbs out of its sandbox
(``GIT_CEILING_DIRECTORIES``, ``sandboxes.base.git_ceiling``), and its processes carry
``CHANGELOOP_OWNER`` from the start, and a group still running after
``running_process.RECORD_AFTER_S`` is recorded there (``pgroups/<pgid>.json``,
with its leader's start time) until it ends: if changeloop itself is killed
with -9, the next ``prove`` ends them (``sweep.sweep``: by record, and by the
marker for anything started in the instant before its record). A command that
is over sooner (most are) costs no record file at all.

Limit: a descendant that calls ``setsid()`` itself leaves our group and is not
ours to find by group (its inherited ``CHANGELOOP_OWNER`` still finds it after a
crash); if it keeps the output pipe open we stop reading after
``running_process.DRAIN_S`` seconds and say so in the log instead of hanging.

The started command itself, its pipes and its group's record, is
``running_process.RunningProcess``; this module starts it and runs it to the end.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc

from changeloop.git.repo import GIT_REDIRECTS
from changeloop.process.groups import (
    OWNER_ENV,
    RUN_ENV,
    claim_run,
    end_group,
    owner_marker,
    run_dir_of,
)
from changeloop.process.output import Output
from changeloop.process.running import RunningProcess
from changeloop.process.spawn import start_child
from changeloop.sandboxes.base import git_ceiling

GIT_CEILING = "GIT_CEILING_DIRECTORIES"


@dataclass(frozen=True)
class ProcessResult:
    argv: tuple[str, ...]
    exit_code: int | None  # None when it never started or was killed
    timed_out: bool
    spawn_error: str | None  # e.g. "executable not found: npx"
    duration_ms: int
    log_path: Path  # stdout and stderr interleaved, secrets redacted
    stdout_path: Path | None  # stdout alone, redacted: kept only for a job that parses it
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
    keep_stdout: bool = False,
) -> RunningProcess:
    output = Output(log_dir, log_name, secrets, keep_stdout=keep_stdout)
    if not argv:
        output.close()
        raise SpawnError("empty command")
    run_dir = run_dir_of(log_dir)
    # Git finds the repository from the working directory (the sandbox's own .git):
    # a GIT_DIR inherited from a hook must not point a provider's git at the user's.
    env = dict(env)
    for name in GIT_REDIRECTS:
        env.pop(name, None)
    if (
        run_dir is not None
    ):  # a run's process: marked, so a later run can find it (docs/processes.md)
        env[OWNER_ENV] = owner_marker()
        env[RUN_ENV] = run_dir.name
        # and git in it never climbs out of its sandbox (or above the checkout)
        ceiling = git_ceiling(cwd)
        if ceiling is not None:
            theirs = env.get(GIT_CEILING)
            env[GIT_CEILING] = f"{ceiling}:{theirs}" if theirs else ceiling
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
    keep_stdout: bool = False,
) -> ProcessResult:
    """Run one command to completion under the discipline of the module doc.

    ``keep_stdout``: also a file of stdout alone, for a job whose adapter parses it.
    Never raises for a command that cannot start (``spawn_error`` is set);
    cancellation ends the group (TERM, grace, KILL) in a shielded cleanup and
    propagates.
    """
    started = time.monotonic()
    try:
        running = await _spawn(
            argv,
            cwd=cwd,
            env=env,
            log_dir=log_dir,
            log_name=log_name,
            secrets=secrets,
            keep_stdout=keep_stdout,
        )
    except SpawnError as exc:
        return _not_started(argv, exc.reason, started, log_dir, log_name)
    timed_out = leftovers = False
    try:
        timed_out = not await running.wait_for(timeout_ms / 1000)
        if timed_out:
            running.output.note(f"timed out after {timeout_ms} ms; ending process group")
        leftovers = await end_group(running.pid, grace_s)
        if leftovers and not timed_out:
            running.output.note("ended processes the command left running in its group")
        if not running.close_if_done():  # most commands: reaped, pipes at their end
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
        stdout_path=None,
        log_sha256=hashlib.sha256(data).hexdigest(),
        stdout_tail="",
        stderr_tail="",
        log_tail=text,
    )
