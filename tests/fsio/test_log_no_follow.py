"""A process log is never written through a symlink standing at its name (docs/threat-model.md)."""

from __future__ import annotations

import errno
import sys
from pathlib import Path

import anyio
import pytest
from engine_helpers import env

from changeloop.process.run import run_process


@pytest.mark.parametrize("suffix", [".log", ".stdout"])
def test_a_symlink_at_a_log_name_is_refused_and_its_target_kept(
    tmp_path: Path, suffix: str
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / f"cmd{suffix}").symlink_to(victim)

    async def main() -> None:
        await run_process(
            [sys.executable, "-c", "print('written')"],
            cwd=tmp_path,
            env=env(),
            timeout_ms=20_000,
            log_dir=logs,
            log_name="cmd",
            keep_stdout=suffix == ".stdout",  # the stdout copy of a job that parses it
        )

    with pytest.raises(OSError) as caught:
        anyio.run(main)
    assert caught.value.errno == errno.ELOOP
    assert victim.read_text() == "keep me\n"
    assert (logs / f"cmd{suffix}").is_symlink()
