"""What ``kill -9`` of changeloop leaves behind is ended by the next ``prove`` (docs/processes.md).

The soak: a real ``prove --sandbox copy`` whose providers spawn grandchildren
(one ignores SIGTERM) and whose service listens on a port is killed with -9 —
sometimes mid-run, sometimes at a random moment from its start — and then one
``prove`` runs. Afterwards no process of the killed run is alive, nothing
listens on the port, and no temp file, private temp directory, process-group
record or sandbox is left. ``CHANGELOOP_SOAK_RUNS`` sets the count (default
10; the issue's figure is 30).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from port_helpers import free_port
from prove_helpers import make_change, make_repo
from repo_paths import REPO_ROOT

from changeloop.sandboxes.place import sandbox_place

ROOT = REPO_ROOT
RUNS = int(os.environ.get("CHANGELOOP_SOAK_RUNS", "10"))

SERVER = """\
import http.server, subprocess, sys
port, token = int(sys.argv[1]), sys.argv[2]
subprocess.Popen(["sleep", "3000." + token])  # the service's own grandchild
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"soak-ok")
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def _provider_script(name: str, token: str, started: Path, release: Path) -> str:
    py = sys.executable
    # Released (the follow-up prove): finish at once, so the soak measures the sweep.
    return (
        f"if [ ! -e {release} ]; then "
        f"sleep 3000.{token} & "
        f"(trap '' TERM; sleep 3001.{token}) & "
        f'{py} -c "import time; time.sleep(3000)" {token} & '
        "fi; "
        f"touch {started}/{name}; "
        f"while [ ! -e {release} ]; do sleep 0.05; done"
    )


@dataclass
class Soak:
    root: Path
    tmpdir: Path
    port: int
    token: str
    started: Path
    release: Path
    log: list[str] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        env["TMPDIR"] = str(self.tmpdir)
        return env

    def argv(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "changeloop",
            "prove",
            "soak",
            "--root",
            str(self.root),
            "--json",
            "--sandbox",
            "copy",
            "--no-cache",
        ]


@pytest.fixture
def soak(tmp_path: Path) -> Soak:
    token = str(random.randrange(10**8, 10**9))
    port = free_port()
    started, release, tmpdir = tmp_path / "started", tmp_path / "release", tmp_path / "tmp"
    started.mkdir()
    tmpdir.mkdir()
    root = make_repo(tmp_path / "ws", {"server.py": SERVER}, commit=False)
    evidence = """\
version: 3
claims:
  works:
    statement: it works
    requires: [test, lint]
"""

    def provider(name: str, capability: str, services: str) -> str:
        script = _provider_script(name, token, started, release).replace('"', '\\"')
        return (
            f"  {name}:\n    adapter: command\n    capability: {capability}\n"
            f"    claims: [works]\n{services}"
            f'    command: [sh, -c, "{script}", "{token}"]\n'
        )

    execution = (
        "version: 1\nservices:\n  web:\n"
        f'    command: ["{sys.executable}", server.py, "{port}", "{token}"]\n'
        f"    readiness:\n      url: http://127.0.0.1:{port}/\n"
        "      expect:\n        body: soak-ok\n"
        "providers:\n"
        + provider("unit", "test", "    services: [web]\n")
        + provider("style", "lint", "")
    )
    make_change(root, "soak", evidence, execution)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "soak"], cwd=root, check=True)
    return Soak(root, tmpdir, port, token, started, release)


def _ours(token: str) -> list[int]:
    """Live (non-zombie) processes whose command line carries the soak's token."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        state = stat[stat.rfind(b")") + 2 :].split()[:1]
        if token.encode() in cmdline and state not in ([b"Z"], [b"X"]):
            found.append(int(entry.name))
    return found


def _listening(port: int) -> bool:
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def _leftover_files(soak: Soak) -> list[Path]:
    state = soak.root / ".changeloop"
    found = [p for p in state.rglob("*") if ".tmp" in p.name]
    found += [p for p in state.glob("runs/*/pgroups")]
    found += [p for p in state.glob("sandboxes/*") if p.name != ".gitignore"]
    place = sandbox_place(soak.root).path  # where sandboxes are made: the user's cache directory
    found += [p for p in place.glob("*") if p.name != ".gitignore"]
    found += [p for p in soak.tmpdir.iterdir() if p.name.startswith("changeloop-")]
    return found


def _kill_mid_run(soak: Soak, rng: random.Random, early: bool) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        soak.argv(), env=soak.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    if early:  # anywhere from start-up to the providers (identity, copy, setup, service)
        time.sleep(rng.uniform(0.0, 1.5))
    else:  # both providers and their grandchildren running, the service listening
        while proc.poll() is None and not (
            (soak.started / "unit").exists()
            and (soak.started / "style").exists()
            and _listening(soak.port)
        ):
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.2))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return proc


def _soak(soak: Soak, runs: int) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    before: list[int] = []
    for i in range(runs):
        for marker in soak.started.iterdir():
            marker.unlink()
        soak.release.unlink(missing_ok=True)
        _kill_mid_run(soak, rng, early=i % 3 == 2)
        before.append(len(_ours(soak.token)))
        soak.release.touch()
        clock = time.monotonic()
        done = subprocess.run(
            soak.argv(), env=soak.env(), capture_output=True, text=True, check=False
        )
        took = time.monotonic() - clock
        doc = json.loads(done.stdout)
        assert done.returncode == 0, (i, seed, doc, done.stderr[-2000:])
        assert doc["status"] == "proven"
        left = _ours(soak.token)
        files = _leftover_files(soak)
        soak.log.append(f"run {i}: {before[-1]} left by kill -9, {len(left)} after ({took:.1f}s)")
        assert left == [], (i, seed, left)
        assert not _listening(soak.port), (i, seed)
        assert files == [], (i, seed, files)
    print(f"kill -9 soak: {runs} runs (seed {seed}); processes left by kill -9 per run: {before}")
    print("\n".join(soak.log))
    # The soak means something only if kill -9 did leave processes to end.
    assert sum(before) > 0, before


@pytest.mark.slow
def test_kill9_soak(soak: Soak) -> None:
    try:
        _soak(soak, RUNS)
    finally:
        soak.release.touch()
        for pid in _ours(soak.token):  # never leave our own mess on a failure
            os.kill(pid, signal.SIGKILL)


def test_live_run_and_reused_pid_are_never_touched(soak: Soak) -> None:
    """A run whose owner lives (or whose pid now names a younger process) is not swept."""
    from changeloop.process.groups import OWNER_FILE, PGROUPS, process_start
    from changeloop.process.sweep import sweep

    state = soak.root / ".changeloop"
    victim = subprocess.Popen(["sleep", f"3000.{soak.token}"], start_new_session=True)
    try:
        live = state / "runs" / "live" / PGROUPS
        live.mkdir(parents=True)
        me = os.getpid()
        (live / OWNER_FILE).write_text(json.dumps({"pid": me, "start": process_start(me)}))
        record = {"pgid": victim.pid, "start": process_start(victim.pid)}
        (live / f"{victim.pid}.json").write_text(json.dumps(record))
        # Same owner pid, another start time: the pid was reused, the "owner" is gone —
        # but the group's leader start time differs too, so the group is not ours either.
        reused = state / "runs" / "reused" / PGROUPS
        reused.mkdir(parents=True)
        (reused / OWNER_FILE).write_text(json.dumps({"pid": me, "start": 1}))
        stale = {"pgid": victim.pid, "start": (process_start(victim.pid) or 0) + 7}
        (reused / f"{victim.pid}.json").write_text(json.dumps(stale))
        report = sweep(state, grace_s=0.1)
        assert victim.poll() is None, "a process not provably ours was signalled"
        assert report.runs == ["reused"]
        assert live.is_dir() and not reused.exists()
    finally:
        victim.kill()
        victim.wait()


def test_groups_are_recorded_while_they_run_and_forgotten_after(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A provider sees its own group's record (pgid, leader start, owner) and the owner
    marker; once the run is over no record is left."""
    from changeloop.cli.main import main
    from changeloop.process.groups import process_start

    seen = tmp_path / "seen.txt"
    script = (  # the record is written just after the spawn: wait for it (at most 10 s)
        "i=0; while [ ! -e .changeloop/runs/*/pgroups/$$.json ] && [ $i -lt 1000 ]; "
        "do sleep 0.01; i=$((i+1)); done; "
        f'echo "$$" > {seen}; echo "$CHANGELOOP_OWNER" >> {seen}; '
        f"cat .changeloop/runs/*/pgroups/*.json >> {seen}"
    )
    root = make_repo(tmp_path / "ws")
    make_change(
        root,
        "rec",
        "version: 3\nclaims:\n  a:\n    requires: [test]\n",
        "version: 1\nproviders:\n  test:\n    adapter: command\n    claims: [a]\n"
        f"    command: [sh, -c, {json.dumps(script)}]\n",
    )
    assert main(["prove", "rec", "--root", str(root), "--json"]) == 0, capsys.readouterr()
    lines = seen.read_text().splitlines()
    pgid, marker = int(lines[0]), lines[1]
    me = os.getpid()
    assert marker == f"{me}-{process_start(me)}"
    docs = _objects(lines[2:])
    records = [d for d in docs if "pgid" in d]
    owners = [d for d in docs if "pgid" not in d]
    assert owners == [{"pid": me, "start": process_start(me)}]
    (record,) = [r for r in records if r["pgid"] == pgid]
    assert record["owner"] == me and record["ownerStart"] == process_start(me)
    assert isinstance(record["start"], int) and record["start"] > 0
    assert list((root / ".changeloop" / "runs").glob("*/pgroups")) == []


def _objects(lines: list[str]) -> list[dict[str, object]]:
    """``cat`` of several one-line JSON files: split ``}{`` into separate documents."""
    text = "".join(lines).replace("}{", "}\n{")
    return [json.loads(part) for part in text.splitlines() if part]
