"""Named resources are held across processes on the host: two proves never hold one at once.

Two changes of one workspace each have a provider naming ``resources:
[database]``; two ``changeloop prove`` processes start together, and each
provider writes when it held the database (monotonic clock, one file per
provider). 8 rounds: the intervals never overlap, and whichever waited showed
it on the board (``waiting for database``). Before, locks were per process and
the two ran at the same time every round.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from prove_helpers import make_change, make_repo
from repo_helpers import commit_all
from repo_paths import REPO_ROOT

ROUNDS = 8

EVIDENCE = """\
version: 3
claims:
  migrated:
    statement: the schema migrates
    requires: [test]
"""
# Holds the database for a moment and says when (CLOCK_MONOTONIC: one clock for the host).
USE_DATABASE = (
    "import pathlib, sys, time\n"
    "start = time.monotonic(); time.sleep(0.2); end = time.monotonic()\n"
    "pathlib.Path(sys.argv[1]).write_text(f'{start} {end}')\n"
)


PROVE = (sys.executable, "-m", "changeloop", "prove")


def _execution(stamp: Path) -> str:
    return textwrap.dedent(f"""\
        version: 1
        providers:
          migrate:
            adapter: command
            capability: test
            claims: [migrated]
            resources: [database]
            command: [{sys.executable}, -c, {json.dumps(USE_DATABASE)}, "{stamp}"]
        """)


def test_two_proves_sharing_a_named_resource_never_overlap(tmp_path: Path) -> None:
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    root = make_repo(tmp_path / "ws")
    for change in ("one", "two"):
        make_change(root, change, EVIDENCE, _execution(stamps / change))
    commit_all(root, "changes")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    waited = 0
    for round_ in range(ROUNDS):
        runs = [
            subprocess.Popen(
                [*PROVE, change, "--root", str(root), "--no-cache", "--json"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for change in ("one", "two")
        ]
        errors = []
        for run in runs:
            out, err = run.communicate(timeout=180)
            assert run.returncode == 0, (out, err)
            assert json.loads(out)["status"] == "proven"
            errors.append(err)
        (a_start, a_end), (b_start, b_end) = (
            map(float, (stamps / change).read_text().split()) for change in ("one", "two")
        )
        assert a_end <= b_start or b_end <= a_start, f"round {round_}: both held the database"
        waited += sum("migrate waiting for database" in err for err in errors)
    # Most rounds start both at once, so one of the two waits (and says so).
    assert waited >= 1
