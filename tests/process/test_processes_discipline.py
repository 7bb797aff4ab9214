"""Process discipline with real process trees."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from engine_helpers import assert_tree_gone, env, pid_alive, tree_argv, wait_ready
from repo_paths import REPO_ROOT

from changeloop.process.output import TAIL_BYTES, TAIL_LINES
from changeloop.process.run import ProcessResult, run_process, start_process

GRACE = 0.3


def run(
    argv: list[str],
    tmp: Path,
    *,
    environ: dict[str, str] | None = None,
    timeout_ms: int = 20_000,
    secrets: tuple[str, ...] = (),
    keep_stdout: bool = False,
) -> ProcessResult:
    async def main() -> ProcessResult:
        return await run_process(
            argv,
            cwd=tmp,
            env=environ if environ is not None else env(),
            timeout_ms=timeout_ms,
            log_dir=tmp / "logs",
            log_name="cmd",
            grace_s=GRACE,
            secrets=secrets,
            keep_stdout=keep_stdout,
        )

    return anyio.run(main)


def test_timeout_ends_grandchild_that_ignores_term(tmp_path: Path) -> None:
    argv, ready = tree_argv(tmp_path, "sleep")
    # The timeout is long enough for Python to start twice on a loaded machine;
    # the tree sleeps forever, so it always times out.
    result = run(argv, tmp_path, timeout_ms=4000)
    info = wait_ready(ready, timeout=0)
    assert result.timed_out
    assert result.exit_code is None
    assert "timed out after 4000 ms" in result.log_tail
    assert "tree ready" in result.stdout_tail
    assert_tree_gone(info)


def test_failing_parent_leaves_no_grandchild(tmp_path: Path) -> None:
    argv, ready = tree_argv(tmp_path, "fail")
    result = run(argv, tmp_path)
    info = wait_ready(ready, timeout=0)
    assert result.exit_code == 1
    assert not result.timed_out
    assert result.leftovers
    assert_tree_gone(info)


def test_cancellation_ends_group_and_propagates(tmp_path: Path) -> None:
    argv, ready = tree_argv(tmp_path, "sleep")
    seen: dict[str, object] = {}

    async def main() -> None:
        async with anyio.create_task_group() as tg:

            async def target() -> None:
                try:
                    await run_process(
                        argv,
                        cwd=tmp_path,
                        env=env(),
                        timeout_ms=60_000,
                        log_dir=tmp_path / "logs",
                        log_name="c",
                        grace_s=GRACE,
                    )
                except anyio.get_cancelled_exc_class():
                    seen["cancelled"] = True
                    raise
                seen["returned"] = True

            tg.start_soon(target)
            while not ready.exists():
                await anyio.sleep(0.02)
            tg.cancel_scope.cancel()

    anyio.run(main)
    assert seen == {"cancelled": True}
    assert_tree_gone(wait_ready(ready, timeout=0))
    assert "cancelled; ending process group" in (tmp_path / "logs" / "c.log").read_text()


DRIVER = """
import sys
from pathlib import Path
import anyio
from changeloop.process.run import run_process
from changeloop.process.signals import cancel_on_signals

async def main() -> int:
    async with cancel_on_signals() as stop:
        await run_process(sys.argv[1:], cwd=Path.cwd(), env={**__import__("os").environ},
                          timeout_ms=60_000, log_dir=Path("logs"), log_name="d", grace_s=0.3)
        print("returned without cancellation", flush=True)
    return stop.exit_code or 0

sys.exit(anyio.run(main))
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_driver_exits_130_and_leaves_nothing(tmp_path: Path, sig: int) -> None:
    argv, ready = tree_argv(tmp_path, "sleep")
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    root = REPO_ROOT
    proc = subprocess.Popen(
        [sys.executable, str(driver), *argv],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        info = wait_ready(ready)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out
    assert "returned without cancellation" not in out
    assert_tree_gone(info)


def test_missing_executable_is_a_reason_not_an_exception(tmp_path: Path) -> None:
    result = run(["definitely-not-a-command-xyz", "--flag"], tmp_path)
    assert result.spawn_error == "executable not found: definitely-not-a-command-xyz"
    assert result.exit_code is None
    assert result.log_path.exists()
    assert "executable not found" in result.log_tail


def test_permission_denied_is_a_reason(tmp_path: Path) -> None:
    script = tmp_path / "noexec.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    result = run([str(script)], tmp_path)
    assert result.spawn_error == f"permission denied: {script}"


def test_missing_cwd_is_named(tmp_path: Path) -> None:
    async def main() -> ProcessResult:
        return await run_process(
            ["true"],
            cwd=tmp_path / "gone",
            env=env(),
            timeout_ms=5000,
            log_dir=tmp_path / "logs",
            log_name="x",
        )

    result = anyio.run(main)
    assert result.spawn_error == f"working directory not found: {tmp_path / 'gone'}"


def test_logs_interleave_redact_and_split_stdout(tmp_path: Path) -> None:
    secret = "s3cr3t-value-1234"
    code = textwrap.dedent(
        f"""
        import sys, os
        sys.stdout.write("out {secret[:5]}"); sys.stdout.flush()
        sys.stdout.write("{secret[5:]} end\\n"); sys.stdout.flush()
        sys.stderr.write("err " + os.environ["TOKEN"] + "\\n"); sys.stderr.flush()
        sys.exit(3)
        """
    )
    result = run(
        [sys.executable, "-c", code],
        tmp_path,
        environ={**env(), "TOKEN": secret},
        secrets=(secret,),
        keep_stdout=True,
    )
    assert result.exit_code == 3
    log = result.log_path.read_text()
    assert result.stdout_path is not None
    stdout = result.stdout_path.read_text()
    assert secret not in log and secret[:5] + secret[5:] not in stdout
    assert "out *** end" in stdout
    assert "err ***" in log and "err" not in stdout
    assert "out *** end" in log
    assert result.stderr_tail == "err ***\n"
    assert result.log_sha256 == hashlib.sha256(result.log_path.read_bytes()).hexdigest()


def test_tails_are_bounded(tmp_path: Path) -> None:
    code = "for i in range(5000): print('line', i, 'x' * 30)"
    result = run([sys.executable, "-c", code], tmp_path)
    assert result.exit_code == 0
    assert len(result.stdout_tail.encode()) <= TAIL_BYTES
    assert len(result.stdout_tail.splitlines()) <= TAIL_LINES
    assert result.stdout_tail.splitlines()[-1].startswith("line 4999")
    assert len(result.log_path.read_text().splitlines()) == 5000


def test_signal_death_is_reported(tmp_path: Path) -> None:
    result = run(["sh", "-c", "kill -SEGV $$"], tmp_path)
    assert result.signal == signal.SIGSEGV
    assert result.exit_code is None
    assert not result.timed_out


def test_start_process_terminate_ends_group(tmp_path: Path) -> None:
    argv, ready = tree_argv(tmp_path, "sleep")

    async def main() -> tuple[int, int | None, str]:
        async with anyio.create_task_group() as tg:
            proc = await start_process(
                argv,
                cwd=tmp_path,
                env=env(),
                log_dir=tmp_path / "logs",
                log_name="svc",
                task_group=tg,
            )
            assert proc.returncode is None
            while not ready.exists():
                await anyio.sleep(0.02)
            code = await proc.terminate(GRACE)
            return proc.pid, code, proc.tail("stdout")
        raise AssertionError("the task group returned without the process")

    pid, code, tail = anyio.run(main)
    assert code == -signal.SIGKILL  # the parent ignores SIGTERM too
    assert not pid_alive(pid)
    assert "tree ready" in tail
    assert_tree_gone(wait_ready(ready, timeout=0))
