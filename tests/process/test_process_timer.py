"""One timer per command for the group's record and the time limit; waiters without shields.

``RunningProcess`` sets one loop timer for whichever comes first of the group's
record (``RECORD_AFTER_S``) and ``run_process``'s time limit, and each wait has
its own future instead of a cancel scope and a shield. These run real
commands through every order of the two events and every way a wait ends.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
from engine_helpers import env

from changeloop.process.groups import group_alive
from changeloop.process.run import ProcessResult, run_process, start_process
from changeloop.process.running import RECORD_AFTER_S


def _run(tmp: Path, script: str, timeout_ms: int) -> ProcessResult:
    async def main() -> ProcessResult:
        return await run_process(
            ["sh", "-c", script],
            cwd=tmp,
            env=env(),
            timeout_ms=timeout_ms,
            log_dir=tmp / ".changeloop" / "runs" / "r1" / "p",
            log_name="cmd",
            grace_s=0.2,
        )

    return anyio.run(main)


def _records(tmp: Path) -> list[str]:
    pgroups = tmp / ".changeloop" / "runs" / "r1" / "pgroups"
    return sorted(p.name for p in pgroups.glob("*.json") if p.name != "owner.json")


def test_time_limit_before_the_record_ends_the_group(tmp_path: Path) -> None:
    limit_ms = int(RECORD_AFTER_S * 1000) // 5  # the limit comes first
    result = _run(tmp_path, "echo started; exec sleep 30", limit_ms)
    assert result.timed_out and result.exit_code is None
    assert f"timed out after {limit_ms} ms" in result.log_tail
    assert _records(tmp_path) == []  # a record written meanwhile went with the group


def test_record_then_time_limit_from_the_same_timer(tmp_path: Path) -> None:
    # The command waits until its own group is recorded, says so, then outlives its limit:
    # the record fires first, and the limit after it still ends the group.
    script = (
        "i=0; while [ ! -s .changeloop/runs/r1/pgroups/$$.json ] && [ $i -lt 2000 ];"
        " do sleep 0.01; i=$((i+1)); done; echo recorded; exec sleep 30"
    )
    result = _run(tmp_path, script, 3000)
    assert "recorded" in result.stdout_tail
    assert result.timed_out and result.exit_code is None
    assert _records(tmp_path) == []


def test_exit_before_record_and_limit_leaves_nothing(tmp_path: Path) -> None:
    result = _run(tmp_path, "echo done", 60_000)
    assert (result.exit_code, result.timed_out, result.leftovers) == (0, False, False)
    assert result.stdout_tail == "done\n"
    assert _records(tmp_path) == []


def test_a_cancelled_wait_leaves_the_others_and_later_waits_working(tmp_path: Path) -> None:
    async def main() -> tuple[int, list[int], bool]:
        async with anyio.create_task_group() as tg:
            proc = await start_process(
                ["sh", "-c", "read x < .go; exit 7"],
                cwd=tmp_path,
                env=env(),
                log_dir=tmp_path / "logs",
                log_name="svc",
                task_group=tg,
            )
            seen: list[int] = []

            async def waiter() -> None:
                seen.append(await proc.wait())

            with anyio.move_on_after(0.05) as scope:
                await proc.wait()  # cancelled: the command waits on the fifo
            tg.start_soon(waiter)
            tg.start_soon(waiter)
            await anyio.sleep(0.05)
            with open(tmp_path / ".go", "w") as fifo:
                fifo.write("go\n")
            code = await proc.wait()
            await proc.terminate(0.2)
        return code, seen, scope.cancelled_caught

    os.mkfifo(tmp_path / ".go")
    code, seen, cancelled = anyio.run(main)
    assert cancelled
    assert code == 7 and seen == [7, 7]


def test_cancelled_run_still_ends_its_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    async def main() -> None:
        with anyio.move_on_after(0.3):
            await run_process(
                ["sh", "-c", f"echo $$ > {pid_file}; trap '' TERM; sleep 30 & wait"],
                cwd=tmp_path,
                env=env(),
                timeout_ms=60_000,
                log_dir=tmp_path / ".changeloop" / "runs" / "r1" / "p",
                log_name="cmd",
                grace_s=0.2,
            )

    anyio.run(main)
    assert not group_alive(int(pid_file.read_text()))  # zombies aside, nobody is left
    assert _records(tmp_path) == []
