"""Two defects end to end: a port held beside a service on it; `inputs: [src]`."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from port_helpers import free_port
from prove_helpers import git, make_change, make_repo, prove_json, receipts_of

from changeloop.scheduling.resources import parse_resources
from changeloop.scheduling.scheduler import Task, TaskResult, schedule

SERVER = """\
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"defects-srv")
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def _states(doc: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["state"] for p in doc["providers"]}


# -- 1. port:N held by one provider while another uses a service on port N ---------------


class Recorder:
    """Runs jobs that yield a few times, recording start order and who ran alongside whom."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.running: set[str] = set()
        self.overlaps: set[frozenset[str]] = set()

    async def run(self, job: Task) -> bool:
        self.order.append(job.name)
        self.overlaps.update(frozenset((job.name, other)) for other in self.running)
        self.running.add(job.name)
        for _ in range(3):
            await anyio.sleep(0)
        self.running.discard(job.name)
        return True

    def schedule(self, jobs: list[Task], slots: int) -> dict[str, TaskResult]:
        async def main() -> dict[str, TaskResult]:
            with anyio.fail_after(20):
                return await schedule(jobs, self.run, slots=slots)

        return anyio.run(main)


def _conflict(a: Task, b: Task) -> bool:
    """Two jobs exclude each other when they share a lock and either takes it exclusively."""
    mine = {c.key: c.mode for c in parse_resources(a.resources)}
    return any(
        c.key in mine and (c.mode != "read" or mine[c.key] != "read")
        for c in parse_resources(b.resources)
    )


def test_port_holder_first_then_service_users_all_run() -> None:
    jobs = [
        Task("holder", resources=("port:4173",)),
        Task("user1", resources=("service-port:4173", "workspace-read:web")),
        Task("user2", resources=("service-port:4173", "workspace-read:web")),
    ]
    rec = Recorder()
    results = rec.schedule(jobs, slots=3)
    assert {r.state for r in results.values()} == {"ok"}, results
    assert rec.order[0] == "holder"
    assert frozenset(("user1", "user2")) in rec.overlaps  # the service's users share its port
    assert not any("holder" in pair for pair in rec.overlaps)


def test_waiting_port_holder_is_not_starved_by_new_service_users() -> None:
    # u1 and u2 use the service; the holder arrives while they run; u3 and u4 become
    # ready later (after u1 and u2) and must wait behind the holder, as readers wait
    # behind a writer of a repository.
    jobs = [
        Task("u1", resources=("service-port:9",), estimate_s=5),
        Task("u2", resources=("service-port:9",), estimate_s=5),
        Task("holder", resources=("port:9",), estimate_s=1),
        Task("u3", depends_on=("u1",), resources=("service-port:9",)),
        Task("u4", depends_on=("u2",), resources=("service-port:9",)),
    ]
    rec = Recorder()
    results = rec.schedule(jobs, slots=3)
    assert {r.state for r in results.values()} == {"ok"}, results
    assert rec.order.index("holder") < rec.order.index("u3")
    assert rec.order.index("holder") < rec.order.index("u4")
    assert not any("holder" in pair for pair in rec.overlaps)


def test_writers_of_two_repositories_reading_each_other_all_run() -> None:
    # Found by the random test below (only workspace locks): a writer woken for one
    # repository but blocked on the other still held back new readers of the first;
    # two of them held back each other's readers and nothing ran (KeyError in prove).
    jobs = [
        Task("j0", resources=("workspace-write:b", "workspace-read:a"), estimate_s=0.5),
        Task("j1", resources=("workspace-read:a", "workspace-write:b"), estimate_s=0.5),
        Task("j2", resources=("workspace-write:a", "workspace-write:b")),
        Task("j3", resources=("workspace-write:a", "workspace-read:b"), estimate_s=0.5),
        Task("j4"),
    ]
    results = Recorder().schedule(jobs, slots=2)
    assert {r.state for r in results.values()} == {"ok"}, results


def _random_jobs(rng: random.Random) -> list[Task]:
    names = [
        "port:1",
        "service-port:1",
        "service-port:2",
        "port:2",
        "db",
        "workspace-read:a",
        "workspace-write:a",
        "workspace-read:b",
        "workspace-write:b",
    ]
    jobs: list[Task] = []
    for i in range(rng.randint(3, 12)):
        deps = tuple(j.name for j in jobs if rng.random() < 0.15)
        resources = tuple(rng.sample(names, rng.randint(0, 3)))
        jobs.append(Task(f"j{i}", deps, resources, rng.choice([None, 0.5, 2.0])))
    return jobs


def test_random_mixes_of_locks_all_finish_without_conflicts() -> None:
    for seed in range(2000):
        rng = random.Random(seed)
        jobs = _random_jobs(rng)
        rec = Recorder()
        results = rec.schedule(jobs, slots=rng.randint(1, 5))
        assert [r.state for r in results.values()] == ["ok"] * len(jobs), (seed, results)
        by_name = {j.name: j for j in jobs}
        for pair in rec.overlaps:
            a, b = sorted(pair)
            assert not _conflict(by_name[a], by_name[b]), (seed, by_name[a], by_name[b])


def test_prove_with_a_port_holder_and_a_service_on_that_port(tmp_path: Path, capsys: Any) -> None:
    port = free_port()
    root = make_repo(tmp_path / "ws", {"srv.py": SERVER})
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [holder, user]\n",
        f"""\
        version: 1
        providers:
          holder:
            adapter: command
            command: [{sys.executable}, -c, "pass"]
            resources: ["port:{port}"]
          user:
            adapter: command
            command: [{sys.executable}, -c, "import urllib.request as u; u.urlopen('http://127.0.0.1:{port}/')"]
            services: [srv]
        services:
          srv:
            command: [{sys.executable}, srv.py, "{port}"]
            readiness:
              url: http://127.0.0.1:{port}/
              expect: {{body: defects-srv}}
              timeoutMs: 20000
        """,
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    code, doc = prove_json(root, "c1", "--jobs", "2", capsys=capsys)
    assert code == 0, doc
    assert _states(doc) == {"holder": "ran", "user": "ran"}
    assert receipts_of(doc, "user")["user"]["status"] == "pass"


# -- 2. `inputs: [src]` covers everything under src/ -------------------------------------


@pytest.mark.parametrize(
    ("pattern", "sandbox"),
    [("src", "none"), ("src/", "none"), ("./src", "none"), ("src/**", "none"), ("src", "copy")],
)
def test_inputs_directory_covers_its_files(
    tmp_path: Path, capsys: Any, pattern: str, sandbox: str
) -> None:
    root = make_repo(
        tmp_path / "ws",
        {"src/pkg/mod.py": "x = 1\n", "src/top.py": "y = 1\n", "README.md": "r\n"},
    )
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [unit]\n",
        f"""\
        version: 1
        providers:
          unit:
            adapter: command
            command: [{sys.executable}, -c, "pass"]
            inputs: ["{pattern}"]
        """,
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    code, doc = prove_json(root, "c1", "--sandbox", sandbox, capsys=capsys)
    assert code == 0 and _states(doc) == {"unit": "ran"}, doc
    code, doc = prove_json(root, "c1", "--sandbox", sandbox, capsys=capsys)
    assert code == 0 and _states(doc) == {"unit": "cached"}, doc

    (root / "README.md").write_text("outside the inputs\n")
    code, doc = prove_json(root, "c1", "--sandbox", sandbox, capsys=capsys)
    assert code == 0 and _states(doc) == {"unit": "cached"}, doc

    (root / "src/pkg/mod.py").write_text("x = 2\n")  # deep under src/
    code, doc = prove_json(root, "c1", "--sandbox", sandbox, capsys=capsys)
    assert code == 0 and _states(doc) == {"unit": "ran"}, doc

    (root / "src/pkg/new.py").write_text("z = 1\n")  # a new, untracked file under src/
    code, doc = prove_json(root, "c1", "--sandbox", sandbox, capsys=capsys)
    assert code == 0 and _states(doc) == {"unit": "ran"}, doc
