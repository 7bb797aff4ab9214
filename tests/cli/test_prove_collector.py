"""cli.collector: a prove of its own never collects while its plan loads; in-process, nothing changes.

The process's own collector is watched from inside (``gc.callbacks``) by a small
driver that runs the console entry point exactly as a user's ``changeloop``
does; the plan's loading is marked by the driver around ``load_plan``.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest
from prove_helpers import git, make_change, make_repo, prove_json

PROVIDERS = 300

DRIVER = """\
import gc, json, sys
seen = {"plan": 0, "all": 0}
phase = ["start"]
def watch(stage, info):
    if stage == "start":
        seen["all"] += 1
        seen[phase[0]] = seen.get(phase[0], 0) + (phase[0] == "plan")
gc.callbacks.append(watch)
import changeloop.cli.prove.command as verb
load = verb.load_plan
def marked(*args, **kwargs):
    phase[0] = "plan"
    try:
        return load(*args, **kwargs)
    finally:
        phase[0] = "after"
verb.load_plan = marked
def report():
    frozen, threshold = gc.get_freeze_count(), gc.get_threshold()[0]
    print(json.dumps({**seen, "frozen": frozen, "threshold": threshold}), file=sys.stderr)
mode = sys.argv.pop(1)
from changeloop.cli.main import entry, main
try:
    entry() if mode == "entry" else sys.exit(main(sys.argv[1:]))
finally:  # before the exit hooks (which freeze everything for a cheap shutdown)
    report()
"""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n", ".gitignore": ".changeloop/\n"})
    providers = "".join(
        f'  p{i}:\n    adapter: command\n    capability: noop\n    command: ["true"]\n'
        for i in range(PROVIDERS)
    )
    make_change(root, "c", "version: 3\nrequires: [noop]\n", f"version: 1\nproviders:\n{providers}")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    return root


def _watched(root: Path, entry: str) -> dict[str, int]:
    argv = [
        sys.executable,
        "-c",
        DRIVER,
        entry,
        "prove",
        "c",
        "--root",
        str(root),
        "--jobs",
        "2",
        "--no-cache",
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen: dict[str, int] = json.loads(proc.stderr.strip().splitlines()[-1])
    return seen


def test_a_prove_of_its_own_never_collects_while_the_plan_loads(ws: Path) -> None:
    seen = _watched(ws, "entry")
    assert seen["plan"] == 0, seen
    # the plan (~100 objects a provider) and start-up are out of the collector's reach
    assert seen["frozen"] > 100 * PROVIDERS, seen
    assert seen["threshold"] >= 10_000, seen


def test_main_called_in_a_process_leaves_that_process_collector_alone(ws: Path) -> None:
    seen = _watched(ws, "main")
    assert seen["plan"] > 0 and seen["frozen"] == 0 and seen["threshold"] == 700, seen


def test_in_process_callers_keep_their_collector(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count())
    code, doc = prove_json(ws, "c", "--jobs", "2", capsys=capsys)
    assert code == 0 and len(doc["providers"]) == PROVIDERS
    assert (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()) == before
