# mypy: disable-error-code="no-untyped-call"
"""The Dask executor's remaining parity with a local run, on a real LocalCluster.

A failing ``setup`` gives the same records on the cluster as here; a service
of another repository starts on the job's worker from that repository's
shipped content; a repository with a submodule is refused before anything
runs; ``--jobs`` caps the jobs in flight on the cluster. One module-scoped
cluster of three single-threaded worker processes, as in ``test_dask.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dask_helpers import (
    PY,
    dask_args,
    interval_providers,
    intervals,
    local_cluster,
    py_argv,
    statements,
)
from dask_helpers import (
    client as dask_client,
)
from port_helpers import free_port
from prove_helpers import git, make_change, make_repo, prove_json

EVIDENCE = "version: 3\nclaims:\n  hello: {statement: it greets, requires: [use]}\n"
VOLATILE = ("executor", "startedOn", "finishedOn", "durationMs")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with local_cluster() as local:
        yield local


def _comparable(statement: dict[str, Any]) -> dict[str, Any]:
    """A statement minus where and when it ran."""
    doc: dict[str, Any] = json.loads(json.dumps(statement))
    for key in VOLATILE:
        doc["predicate"]["changeloop"].pop(key, None)
    doc["predicate"].pop("runDetails", None)
    doc["predicate"].pop("metadata", None)
    return doc


def _board(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    return sorted(
        (
            p["name"],
            p["state"],
            p.get("reason"),
            tuple(sorted((r["capability"], r["status"], r["reason"]) for r in p["receipts"])),
        )
        for p in doc["providers"]
    )


BROKEN = "import sys; print('installing deps'); sys.exit(4)"
# the second command needs what the first made: both must run, in order, in one sandbox
MAKES = "import pathlib; pathlib.Path('made.txt').write_text('1')"
NEEDS = "import pathlib, sys; pathlib.Path('made.txt').read_text(); print('step 2'); sys.exit(5)"


@pytest.mark.parametrize("setup", [[BROKEN], [MAKES, NEEDS]], ids=["first", "second"])
def test_a_failing_setup_gives_the_same_records_on_the_cluster_as_here(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str], setup: list[str]
) -> None:
    """Same statuses, findings, board and receipts (bar where and when) either way."""
    root = make_repo(tmp_path / "ws", {"src/app.py": "x = 11\n", ".gitignore": "made.txt\n"})
    make_change(
        root,
        "c1",
        EVIDENCE,
        "version: 1\nrepositories:\n  self:\n"
        f"    setup: [{', '.join(py_argv(c) for c in setup)}]\n"
        "providers:\n"
        f"  use: {{adapter: command, command: {py_argv('pass')}, claims: [hello]}}\n"
        f"  also: {{adapter: command, command: {py_argv('pass')}}}\n",
    )
    code_local, local = prove_json(root, "c1", "--sandbox", "copy", capsys=capsys)
    receipts_local = statements(root, "c1")
    code_dask, dask = prove_json(
        root, "c1", "--sandbox", "copy", "--no-cache", *dask_args(cluster), capsys=capsys
    )
    receipts_dask = statements(root, "c1")
    assert code_local == code_dask == 1
    assert local["claims"] == dask["claims"] and local["status"] == dask["status"]
    assert _board(local) == _board(dask)
    assert "setup-self.setup.json" in receipts_dask
    assert receipts_local.keys() == receipts_dask.keys()
    made = receipts_dask["setup-self.setup.json"]["predicate"]["changeloop"]
    assert made["status"] == "fail" and made["executor"]["kind"] == "dask"
    assert made["reason"].endswith(f"exited {4 if len(setup) == 1 else 5}"), made["reason"]
    for name, statement in receipts_dask.items():
        assert _comparable(statement) == _comparable(receipts_local[name]), name
        ext = statement["predicate"]["changeloop"]
        if name != "setup-self.setup.json":
            assert ext["status"] == "inconclusive" and ext["findings"] == [], ext


def test_a_repository_with_a_submodule_is_refused_before_anything_runs(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its content is a commit id the coordinator cannot ship as a tree: exit 2, named."""
    library = make_repo(tmp_path / "lib", {"lib.py": "y = 1\n"})
    marker = tmp_path / "ran"
    root = make_repo(tmp_path / "ws", {"src/app.py": "x = 12\n"})
    subprocess.run(
        [
            "git",
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            f"file://{library}",
            "vendor/lib",
        ],
        cwd=root,
        check=True,
        capture_output=True,
    )
    git(root, "commit", "-q", "-m", "vendor lib")
    assert (root / "vendor" / "lib" / "lib.py").is_file()
    touch = py_argv(f"open({str(marker)!r}, 'w')")
    make_change(
        root,
        "c1",
        EVIDENCE,
        f"version: 1\nproviders:\n  use: {{adapter: command, command: {touch}, claims: [hello]}}\n",
    )
    code, doc = prove_json(root, "c1", *dask_args(cluster), capsys=capsys)
    assert code == 2, doc
    [error] = doc["errors"]
    assert error["code"] == "dask_submodule_unsupported"
    assert "vendor/lib" in error["message"] and "--executor local" in error["fix"]
    assert not marker.exists()
    assert not list((root / ".changeloop" / "receipts").glob("c1/*.json"))
    code, doc = prove_json(root, "c1", capsys=capsys)  # the fix works
    assert code == 0, doc


SERVER = """\
import http.server, os, sys
open(sys.argv[2], "w").write(os.getcwd())
body = open("greeting.txt", "rb").read() + open("build/suffix.txt", "rb").read()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_a_service_of_another_repository_starts_on_the_jobs_worker(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two repositories: the service's content travels by its own tree, is set up and starts there.

    The same plan proven here first gives the same statuses and claims.
    """
    port = free_port()
    where = tmp_path / "where.txt"
    api = make_repo(tmp_path / "api", {"srv.py": SERVER, ".gitignore": "build/\n"})
    (api / "greeting.txt").write_text("from-api-untracked")  # untracked, not ignored: travels
    web = make_repo(tmp_path / "web", {"a.txt": "a\n"})
    fetch = py_argv(
        "import urllib.request as u; "
        f"assert u.urlopen('http://127.0.0.1:{port}/').read() == b'from-api-untracked+built'"
    )
    build = py_argv(
        "import pathlib; pathlib.Path('build').mkdir(); "
        "pathlib.Path('build/suffix.txt').write_text('+built')"
    )
    make_change(
        web,
        "c1",
        "version: 3\nrepositories: {web: ., api: ../api}\n"
        "claims:\n  hello: {statement: it greets, requires: [check]}\n",
        f"version: 1\nrepositories:\n  api:\n    setup: [{build}]\nproviders:\n"
        "  check:\n    adapter: command\n    repository: web\n"
        f"    command: {fetch}\n    services: [apisrv]\n    claims: [hello]\n"
        "services:\n  apisrv:\n    repository: api\n"
        f"    command: [{json.dumps(PY)}, srv.py, '{port}', {json.dumps(str(where))}]\n"
        f"    readiness: {{url: 'http://127.0.0.1:{port}/', expect: {{body: from-api-untracked+built}},"
        " timeoutMs: 20000}\n",
    )
    code_local, local = prove_json(web, "c1", "--sandbox", "copy", capsys=capsys)
    code, doc = prove_json(
        web, "c1", "--sandbox", "copy", "--no-cache", *dask_args(cluster), capsys=capsys
    )
    assert code == code_local == 0, doc
    assert doc["claims"] == local["claims"] and _board(doc) == _board(local)
    assert doc["claims"]["hello"]["status"] == "proven"
    assert not (api / "build").exists()  # its setup ran in sandboxes, never in the checkout
    ran_in = Path(where.read_text()).resolve()
    assert api.resolve() not in (ran_in, *ran_in.parents)  # on the worker, in its sandbox
    assert ran_in.parts[-2:] == ("repos", "api")
    [ext] = [s["predicate"]["changeloop"] for s in statements(web, "c1").values()]
    assert ext["executor"]["kind"] == "dask" and ext["status"] == "pass"
    with socket.socket() as s:  # stopped after the job
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_jobs_caps_the_jobs_in_flight_on_the_cluster(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--jobs 2`` on three workers: never more than two commands at once (interval log)."""
    log = tmp_path / "intervals.txt"
    root = make_repo(tmp_path / "ws", {"src/app.py": "x = 13\n"})
    make_change(root, "c1", EVIDENCE.replace("[use]", "[p0]"), interval_providers(log, 6, 0.4))
    code, doc = prove_json(root, "c1", "--jobs", "2", *dask_args(cluster), capsys=capsys)
    assert code == 0, doc
    spans = intervals(log)
    assert len(spans) == 6
    most = max(sum(1 for a, b in spans if a <= t < b) for t, _ in spans)
    assert most <= 2, spans
    [run_json] = (root / ".changeloop" / "runs").glob("*/run.json")
    assert json.loads(run_json.read_text())["slots"] == 2
    # without --jobs: three in flight per worker thread (one running, two waiting there)
    code, doc = prove_json(root, "c1", "--no-cache", *dask_args(cluster), capsys=capsys)
    assert code == 0, doc
    runs = [json.loads(p.read_text()) for p in (root / ".changeloop" / "runs").glob("*/run.json")]
    assert sorted(r["slots"] for r in runs) == [2, 9]


def test_every_worker_gets_the_content_before_its_first_job(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The coordinator ships each tree to every worker when it connects (one job runs here)."""
    from changeloop.executors import worker as remote
    from changeloop.git.identity import content_identity

    root = make_repo(tmp_path / "ws", {"src/app.py": f"x = {tmp_path.name!r}\n"})
    make_change(
        root,
        "c1",
        EVIDENCE,
        f"version: 1\nproviders:\n  use: {{adapter: command, command: {py_argv('pass')}, claims: [hello]}}\n",
    )
    code, doc = prove_json(root, "c1", *dask_args(cluster), capsys=capsys)
    assert code == 0, doc
    tree = content_identity(root, include_untracked=True).tree
    client = dask_client(cluster.scheduler_address)
    try:
        client.run(lambda: None)  # every worker has finished what it was sent
        folders = client.run(remote.content_dir, tree)
    finally:
        client.close()
    assert len(folders) == 3
    assert all(Path(folder).is_dir() for folder in folders.values()), folders


def test_a_worker_that_joins_during_the_run_is_warmed_too(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The coordinator sees a new worker (its 0.5 s watch) and sends it the run's content."""
    from test_dask import _extra_worker

    from changeloop.executors import worker as remote
    from changeloop.git.identity import content_identity

    started, joined = tmp_path / "started", tmp_path / "joined"
    hold = (
        f"import pathlib, time; pathlib.Path({str(started)!r}).write_text('1'); "
        f"[time.sleep(0.05) for _ in range(1200) if not pathlib.Path({str(joined)!r}).exists()]; "
        "time.sleep(1.5)"
    )
    root = make_repo(tmp_path / "ws", {"src/app.py": f"x = {tmp_path.name!r} + 'join'\n"})
    make_change(
        root,
        "c1",
        EVIDENCE,
        f"version: 1\nproviders:\n  use: {{adapter: command, command: {py_argv(hold)}, claims: [hello]}}\n",
    )
    proved = threading.Event()
    found: list[str] = []

    def join_a_worker() -> None:  # prove runs in the main thread (it owns the signals)
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            with _extra_worker(cluster, dict(os.environ)) as extra:
                joined.write_text("1")
                proved.wait(timeout=120)
                tree = content_identity(
                    root, include_untracked=True
                ).tree  # after prove's .gitignore
                client = dask_client(cluster.scheduler_address)
                try:
                    folder = client.run(remote.content_dir, tree, workers=[extra])[extra]
                    found.append(f"{folder} {Path(folder).is_dir()}")  # gone with the worker
                finally:
                    client.close()
        finally:
            joined.write_text("1")

    helper = threading.Thread(target=join_a_worker)
    helper.start()
    try:
        code, doc = prove_json(root, "c1", *dask_args(cluster), capsys=capsys)
    finally:
        proved.set()
        helper.join(timeout=180)
    assert code == 0, doc
    [seen] = found
    assert seen.endswith(" True"), seen


GROUNDING = Path(__file__).resolve().parents[2] / "examples" / "python-grounding"


def test_grounding_gives_the_same_verdicts_on_the_cluster_as_here(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """examples/python-grounding's tests, traced on a worker: the same citations, grounded.

    The tracer's configuration travels with the job (its entry points, the
    sandbox's root), so the worker traces the citing tests as a local run does.
    """
    root = tmp_path / "shop"
    shutil.copytree(GROUNDING, root, ignore=shutil.ignore_patterns(".changeloop", "__pycache__"))
    execution = root / "openspec" / "changes" / "add-orders" / "execution.yaml"
    text = execution.read_text()
    # the test provider only (mutation runs on the coordinator either way), with this Python
    text = text[: text.index("  mutation:")].replace("[python3,", f"[{json.dumps(PY)},")
    execution.write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    code_local, local = prove_json(root, "add-orders", "--sandbox", "copy", capsys=capsys)
    receipts_local = statements(root, "add-orders")
    code_dask, dask = prove_json(
        root, "add-orders", "--sandbox", "copy", "--no-cache", *dask_args(cluster), capsys=capsys
    )
    receipts_dask = statements(root, "add-orders")
    assert code_local == code_dask == 1
    expected = {"order-total": "proven", "refunds": "inconclusive", "schema-currency": "proven"}
    assert {c: v["status"] for c, v in local["claims"].items()} == expected
    assert dask["claims"] == local["claims"] and _board(dask) == _board(local)
    test = receipts_dask["test.test.json"]["predicate"]["changeloop"]
    assert test["executor"]["kind"] == "dask"
    assert {c["grounding"] for c in test["citations"]["order-total"]} == {"grounded"}
    for name, statement in receipts_dask.items():
        mine, theirs = _comparable(statement), _comparable(receipts_local[name])
        for doc in (mine, theirs):  # pytest prints its own timing
            ext = doc["predicate"]["changeloop"]
            ext.pop("log")
            for tail in ("stdoutTail", "stderrTail"):
                ext["details"].pop(tail, None)
        assert mine == theirs, name
