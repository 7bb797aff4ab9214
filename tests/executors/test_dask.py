# mypy: disable-error-code="no-untyped-call"
"""``prove --executor dask`` on a real ``distributed.LocalCluster`` (docs/scale-out.md).

One module-scoped cluster of three single-threaded worker *processes* on
127.0.0.1, started here, so CI needs nothing beyond the pip extra. Everything
else is real: git repositories, the CLI, processes on the workers, signed
receipts. The test that kills workers runs last (the nannies restart them).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
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
    suite_pki,
)
from dask_helpers import (
    client as dask_client,
)
from prove_helpers import (
    make_change,
    make_repo,
    prove_json,
    provider_entry,
    receipts_of,
)

from changeloop.executors import worker as remote
from changeloop.git.identity import content_identity

EVIDENCE = "version: 3\nclaims:\n  hello: {statement: it greets, requires: [use]}\n"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with local_cluster() as local:
        yield local


def test_same_change_local_and_on_the_cluster_gives_the_same_receipts(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    gen = "import pathlib; pathlib.Path('out').mkdir(exist_ok=True); pathlib.Path('out/gen.txt').write_text('made')"
    use = "import pathlib, sys; sys.exit(0 if pathlib.Path('out/gen.txt').read_text() == 'made' else 1)"
    bad = "import sys; print('nope'); sys.exit(3)"
    sees = py_argv("open('notes.txt').read()")
    root = make_repo(
        tmp_path / "ws",
        {
            "src/app.py": "print('hi')\n",
            ".gitignore": "out/\nreports/\n",
            "pkg/__init__.py": "",
            "pkg/mod.py": "def f() -> int:\n    return 1\n",
            "tests/test_mod.py": "from pkg.mod import f\n\n\ndef test_f():\n    assert f() == 1\n",
        },
    )
    (root / "notes.txt").write_text("untracked, not ignored\n")
    make_change(
        root,
        "c1",
        EVIDENCE + "  other: {statement: no, requires: [bad]}\n",
        "version: 1\nproviders:\n"
        f"  gen: {{adapter: command, command: {py_argv(gen)}}}\n"
        f"  use: {{adapter: command, command: {py_argv(use)}, dependsOn: [gen], claims: [hello]}}\n"
        f"  bad: {{adapter: command, command: {py_argv(bad)}, claims: [other]}}\n"
        f"  sees: {{adapter: command, command: {sees}}}\n"
        "  unit:\n    adapter: test-discovery\n"
        f"    command: [{json.dumps(PY)}, -m, pytest, -q, -p, no:cacheprovider,"
        " --junitxml, reports/junit.xml]\n    report: reports/junit.xml\n",
    )
    code_local, local = prove_json(root, "c1", "--sandbox", "copy", capsys=capsys)
    receipts_local = statements(root, "c1")
    code_dask, dask = prove_json(
        root, "c1", "--sandbox", "copy", "--no-cache", *dask_args(cluster), capsys=capsys
    )
    receipts_dask = statements(root, "c1")
    assert code_local == code_dask == 1
    assert local["claims"] == dask["claims"] and local["status"] == dask["status"]
    assert dask["claims"]["hello"]["status"] == "proven"
    assert [p["state"] for p in local["providers"]] == [p["state"] for p in dask["providers"]]
    assert receipts_local.keys() == receipts_dask.keys() and len(receipts_dask) == 6
    unit = receipts_dask["unit.test.json"]["predicate"]["changeloop"]
    assert unit["status"] == "pass" and unit["tests"]["passed"] == 1, unit  # report came back
    workers = set()
    for name, statement in receipts_dask.items():
        ext = statement["predicate"]["changeloop"]
        assert receipts_local[name]["predicate"]["changeloop"]["executor"] == {"kind": "local"}
        assert ext["executor"]["kind"] == "dask" and ext["executor"]["worker"].startswith("tls://")
        workers.add(ext["executor"]["worker"])
        for doc in (statement, receipts_local[name]):
            ext_ = doc["predicate"]["changeloop"]
            for key in ("executor", "startedOn", "finishedOn", "durationMs"):
                ext_.pop(key)
            if name.startswith("unit."):  # pytest prints its own timing into the log
                ext_.pop("log")
                for tail in ("stdoutTail", "stderrTail"):
                    ext_["details"].pop(tail, None)
            doc["predicate"].pop("runDetails", None)
            doc["predicate"].pop("metadata", None)
        assert statement == receipts_local[name], name
    # use ran where gen made out/gen.txt (worker restriction)
    assert len(workers) >= 2


def test_setup_runs_on_the_worker_and_rebuilds_what_is_ignored(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ignored files never travel; the repository's setup makes them on the worker."""
    make = py_argv(
        "import pathlib; pathlib.Path('build').mkdir(); pathlib.Path('build/dep.txt').write_text('ok')"
    )
    need = py_argv(
        "import pathlib, sys; sys.exit(pathlib.Path('build/dep.txt').read_text() != 'ok')"
    )
    clean = py_argv("import os, sys; sys.exit(os.path.exists('secret.env'))")
    root = make_repo(
        tmp_path / "ws", {"src/app.py": "x = 9\n", ".gitignore": "build/\nsecret.env\n"}
    )
    (root / "secret.env").write_text("TOKEN=never-shipped\n")  # ignored: stays here
    make_change(
        root,
        "c1",
        EVIDENCE.replace("[use]", "[use, clean]"),
        "version: 1\nrepositories:\n  self:\n"
        f"    setup: [{make}]\n"
        "providers:\n"
        f"  use: {{adapter: command, command: {need}, claims: [hello]}}\n"
        f"  clean: {{adapter: command, command: {clean}, claims: [hello]}}\n",
    )
    code, doc = prove_json(root, "c1", *dask_args(cluster), capsys=capsys)
    assert code == 0, doc
    assert not (root / "build").exists()  # setup ran on the worker, not here


def test_pytest_in_place_reads_its_report_and_import_records_from_the_worker(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """--sandbox none: the provider directory lies inside the checkout; paths still map back."""
    root = make_repo(
        tmp_path / "ws",
        {
            ".gitignore": "reports/\n",
            "pkg/__init__.py": "",
            "pkg/mod.py": "def f() -> int:\n    return 2\n",
            "tests/test_mod.py": "from pkg.mod import f\n\n\ndef test_f():\n    assert f() == 2\n",
        },
    )
    make_change(
        root,
        "c1",
        EVIDENCE.replace("[use]", "[test]"),
        "version: 1\nproviders:\n  unit:\n    adapter: test-discovery\n"
        f"    command: [{json.dumps(PY)}, -m, pytest, -q, -p, no:cacheprovider,"
        " --junitxml, reports/junit.xml]\n    report: reports/junit.xml\n    claims: [hello]\n",
    )
    code, doc = prove_json(root, "c1", *dask_args(cluster), capsys=capsys)
    assert code == 0, doc
    ext = statements(root, "c1")["unit.test.json"]["predicate"]["changeloop"]
    assert ext["executor"]["kind"] == "dask"
    assert ext["tests"]["passed"] == 1 and ext["findings"] == []


def test_exclusive_resources_never_overlap_across_workers(
    tmp_path: Path,
    cluster: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CHANGELOOP_DASK_SCHEDULER", cluster.scheduler_address)
    log = tmp_path / "intervals.txt"
    root = make_repo(tmp_path / "ws", {"src/app.py": "x = 1\n"})
    providers = interval_providers(log, 4, 0.3, extra=", resources: [gpu]")
    make_change(root, "c1", EVIDENCE.replace("[use]", "[p0]"), providers)
    # the address from the environment
    code, doc = prove_json(
        root, "c1", "--executor", "dask", *suite_pki().client_args(), capsys=capsys
    )
    assert code == 0, doc
    spans = intervals(log)
    assert len(spans) == 4
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start, spans
    used = {
        s["predicate"]["changeloop"]["executor"]["worker"] for s in statements(root, "c1").values()
    }
    assert len(used) >= 2  # the lock held across workers, not by running on one


def test_a_secret_is_read_on_the_worker_and_missing_there_fails(
    tmp_path: Path,
    cluster: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("H13_ONLY_HERE_TOKEN", "coordinator-only-value")  # workers started before
    root = make_repo(tmp_path / "ws", {"src/app.py": "x = 2\n"})
    make_change(
        root,
        "c1",
        EVIDENCE,
        "version: 1\nproviders:\n"
        f"  use: {{adapter: command, command: {py_argv('pass')}, envFrom: [H13_ONLY_HERE_TOKEN],"
        " claims: [hello]}\n",
    )
    code, doc = prove_json(root, "c1", *dask_args(cluster), capsys=capsys)
    assert code == 1
    [ext] = [s["predicate"]["changeloop"] for s in statements(root, "c1").values()]
    assert ext["status"] == "fail"
    assert [f["kind"] for f in ext["findings"]] == ["secret-missing"]
    assert "coordinator-only-value" not in json.dumps(doc)


def test_a_worker_whose_content_is_not_the_jobs_tree_fails_content_mismatch(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"src/app.py": f"x = {time.time_ns()}\n"})
    make_change(
        root,
        "c1",
        EVIDENCE,
        f"version: 1\nproviders:\n  use: {{adapter: command, command: {py_argv('pass')}, claims: [hello]}}\n",
    )
    tree = content_identity(root, include_untracked=True).tree
    client = dask_client(cluster.scheduler_address)
    try:
        for folder in client.run(remote.content_dir, tree).values():
            Path(folder).mkdir(parents=True)
            (Path(folder) / "src").mkdir()
            (Path(folder) / "src" / "app.py").write_text("x = 'tampered'\n")
    finally:
        client.close()
    code, _doc = prove_json(root, "c1", *dask_args(cluster), capsys=capsys)
    assert code == 1
    [ext] = [s["predicate"]["changeloop"] for s in statements(root, "c1").values()]
    assert ext["status"] == "fail"
    assert [f["kind"] for f in ext["findings"]] == ["content-mismatch"]


def test_an_unreachable_scheduler_refuses_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "ran"
    touch = py_argv(f"open({str(marker)!r}, 'w')")
    root = make_repo(tmp_path / "ws", {"src/app.py": "x = 3\n"})
    make_change(
        root,
        "c1",
        EVIDENCE,
        f"version: 1\nproviders:\n  use: {{adapter: command, command: {touch}, claims: [hello]}}\n",
    )
    code, doc = prove_json(
        root,
        "c1",
        "--executor",
        "dask",
        "--dask-scheduler",
        "tls://127.0.0.1:9",
        *suite_pki().client_args(),
        capsys=capsys,
    )
    assert code == 2 and doc["errors"][0]["code"] == "dask_unreachable"
    assert not marker.exists()


SERVER = """\
import http.server, os, sys
open(sys.argv[2], "w").write(os.getcwd())
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"h13-api")
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_a_service_starts_on_the_worker_of_the_job_that_needs_it(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    where = tmp_path / "where.txt"
    root = make_repo(tmp_path / "ws", {"srv.py": SERVER})
    fetch = py_argv(
        f"import urllib.request as u; assert u.urlopen('http://127.0.0.1:{port}/').read() == b'h13-api'"
    )
    make_change(
        root,
        "c1",
        EVIDENCE,
        "version: 1\nproviders:\n"
        f"  use: {{adapter: command, command: {fetch}, services: [api], claims: [hello]}}\n"
        "services:\n"
        f"  api:\n    command: [{json.dumps(PY)}, srv.py, '{port}', {json.dumps(str(where))}]\n"
        f"    readiness: {{url: 'http://127.0.0.1:{port}/', expect: {{body: h13-api}}, timeoutMs: 20000}}\n",
    )
    code, doc = prove_json(root, "c1", *dask_args(cluster), capsys=capsys)
    assert code == 0, doc
    ran_in = Path(where.read_text()).resolve()
    assert root.resolve() not in (ran_in, *ran_in.parents)  # on the worker, in its sandbox
    assert "changeloop" in ran_in.parts and "repos" in ran_in.parts
    with socket.socket() as s:  # stopped after the job
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_ctrl_c_cancels_the_remote_job_and_exits_130(tmp_path: Path, cluster: Any) -> None:
    started = tmp_path / "started.txt"
    slow = py_argv(
        f"import os, time; open({str(started)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    )
    root = make_repo(tmp_path / "ws", {"src/app.py": "x = 5\n"})
    make_change(
        root,
        "c1",
        EVIDENCE,
        f"version: 1\nproviders:\n  use: {{adapter: command, command: {slow}, claims: [hello]}}\n",
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with subprocess.Popen(
        [PY, "-m", "changeloop", "prove", "c1", "--root", str(root), *dask_args(cluster)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as proc:
        try:
            deadline = time.monotonic() + 60
            while not started.exists() or not started.read_text():
                assert proc.poll() is None, "prove ended before its job started"
                assert time.monotonic() < deadline
                time.sleep(0.05)
            remote_pid = int(started.read_text())
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=30) == 130
        finally:
            if proc.poll() is None:
                proc.kill()
    deadline = time.monotonic() + 15
    while _alive(remote_pid):
        assert time.monotonic() < deadline, "the remote job's process outlived Ctrl-C"
        time.sleep(0.1)
    assert not list((root / ".changeloop" / "receipts").glob("c1/*.json"))


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1]
    except OSError:
        return False
    return state != "Z"


@contextlib.contextmanager
def _extra_worker(cluster: Any, env: dict[str, str], *args: str) -> Iterator[str]:
    """One more worker process (``dask worker``) joined to the cluster; yields its address."""
    client = dask_client(cluster.scheduler_address)
    try:
        before = set(client.scheduler_info()["workers"])
        with subprocess.Popen(
            [
                PY,
                "-m",
                "distributed.cli.dask_worker",
                cluster.scheduler_address,
                "--nthreads",
                "1",
                "--no-nanny",
                "--host",
                "127.0.0.1",
                "--no-dashboard",
                *suite_pki().node_args(),
                *args,
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ) as extra:
            try:
                client.wait_for_workers(len(before) + 1, timeout=60)
                [address] = set(client.scheduler_info()["workers"]) - before
                yield address
            finally:
                extra.terminate()
                extra.wait(timeout=30)
    finally:
        client.close()


def test_a_resource_a_worker_advertises_places_the_job_there(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dask worker --resources GPU=1`: a provider holding resource GPU runs on that worker."""
    ok = py_argv("pass")
    root = make_repo(tmp_path / "ws", {"src/app.py": "x = 8\n"})
    others = "".join(f"  p{i}: {{adapter: command, command: {ok}}}\n" for i in range(3))
    make_change(
        root,
        "c1",
        EVIDENCE,
        "version: 1\nproviders:\n"
        f"  use: {{adapter: command, command: {ok}, resources: [GPU], claims: [hello]}}\n" + others,
    )
    with _extra_worker(cluster, dict(os.environ), "--resources", "GPU=1") as gpu:
        code, doc = prove_json(root, "c1", *dask_args(cluster), capsys=capsys)
    assert code == 0, doc
    where = {
        name: s["predicate"]["changeloop"]["executor"]["worker"]
        for name, s in statements(root, "c1").items()
    }
    assert where["use.use.json"] == gpu
    assert any(w != gpu for w in where.values())


def test_workers_that_disagree_on_an_executable_refuse_the_run(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """One extra worker resolves the tool to other bytes: exit 2 before anything runs."""
    tool_dir = tmp_path / "bin"
    tool_dir.mkdir()
    tool = tool_dir / "h13-tool"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    marker = tmp_path / "ran"
    env = {**os.environ, "PATH": f"{tool_dir}:{os.environ['PATH']}"}
    with _extra_worker(cluster, env):
        root = make_repo(tmp_path / "ws", {"src/app.py": "x = 6\n"})
        make_change(
            root,
            "c1",
            EVIDENCE,
            "version: 1\nproviders:\n"
            f"  use: {{adapter: command, command: [h13-tool, {marker}], claims: [hello]}}\n",
        )
        code, doc = prove_json(root, "c1", *dask_args(cluster), capsys=capsys)
    assert code == 2
    assert doc["errors"][0]["code"] == "environment-mismatch"
    assert "h13-tool" in doc["errors"][0]["message"]
    assert not (root / ".changeloop" / "runs").exists() or not any(
        (root / ".changeloop" / "runs").iterdir()
    )


def test_without_the_dask_extra_the_run_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """A ``distributed`` that cannot be imported (shadowed here) is exit 2, dask_missing."""
    shadow = tmp_path / "shadow" / "distributed"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named distributed')\n")
    marker = tmp_path / "ran"
    touch = py_argv(f"open({str(marker)!r}, 'w')")
    root = make_repo(tmp_path / "ws", {"src/app.py": "x = 7\n"})
    make_change(
        root,
        "c1",
        EVIDENCE,
        f"version: 1\nproviders:\n  use: {{adapter: command, command: {touch}, claims: [hello]}}\n",
    )
    worktree = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{shadow.parent}:{worktree}"}
    done = subprocess.run(
        [
            PY,
            "-m",
            "changeloop",
            "prove",
            "c1",
            "--root",
            str(root),
            "--json",
            "--executor",
            "dask",
            "--dask-scheduler",
            "tcp://127.0.0.1:9",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout)["errors"][0]["code"] == "dask_missing"
    assert "pip install 'changeloop[dask]'" in done.stderr
    assert not marker.exists()


def _prove_killing(
    root: Path, cluster: Any, capsys: pytest.CaptureFixture[str], started: Path, limit: int
) -> tuple[int, dict[str, Any], list[int]]:
    """Prove while SIGKILLing the worker (and job) of each of the first ``limit`` attempts."""
    # the workers an earlier test killed are back first (their nannies restart them)
    cluster.wait_for_workers(3, timeout=120)
    done = threading.Event()
    killed: list[int] = []

    def killer() -> None:
        seen = 0
        while not done.is_set():
            lines = started.read_text().splitlines() if started.exists() else []
            for line in lines[seen:]:
                if len(killed) >= limit:
                    break
                parent, child = map(int, line.split())
                for pid in (parent, child):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                killed.append(parent)
            seen = len(lines)
            time.sleep(0.05)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    try:
        code, doc = prove_json(root, "c1", *dask_args(cluster), capsys=capsys)
    finally:
        done.set()
        thread.join()
    return code, doc, killed


def test_a_job_whose_worker_dies_is_retried_once_on_another(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    started = tmp_path / "started.txt"
    slow = (
        "import os, time; "
        f"first = not os.path.exists({str(started)!r}); "
        f"open({str(started)!r}, 'a').write(f'{{os.getppid()}} {{os.getpid()}}\\n'); "
        "time.sleep(20 if first else 0)"
    )
    root = make_repo(tmp_path / "ws", {"src/app.py": "x = 10\n"})
    make_change(
        root,
        "c1",
        EVIDENCE,
        f"version: 1\nproviders:\n  use: {{adapter: command, command: {py_argv(slow)}, claims: [hello]}}\n",
    )
    code, doc, killed = _prove_killing(root, cluster, capsys, started, limit=1)
    assert code == 0, doc
    assert len(killed) == 1 and len(started.read_text().splitlines()) == 2
    [ext] = [s["predicate"]["changeloop"] for s in statements(root, "c1").values()]
    assert ext["status"] == "pass" and ext["findings"] == []


def test_a_worker_killed_mid_job_never_gives_a_pass(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kill the worker running the job, then the one it is retried on: worker-lost."""
    started = tmp_path / "started.txt"
    slow = (
        "import os, time; "
        f"open({str(started)!r}, 'a').write(f'{{os.getppid()}} {{os.getpid()}}\\n'); time.sleep(20)"
    )
    root = make_repo(tmp_path / "ws", {"src/app.py": "x = 4\n"})
    make_change(
        root,
        "c1",
        EVIDENCE,
        f"version: 1\nproviders:\n  use: {{adapter: command, command: {py_argv(slow)}, claims: [hello]}}\n",
    )
    code, doc, killed = _prove_killing(root, cluster, capsys, started, limit=2)
    assert code == 1
    assert len(killed) == 2  # the first worker, then the one it was retried on
    [ext] = [s["predicate"]["changeloop"] for s in statements(root, "c1").values()]
    assert ext["status"] == "inconclusive"
    assert [f["kind"] for f in ext["findings"]] == ["worker-lost"]
    assert doc["claims"]["hello"]["status"] != "proven"
    assert receipts_of(doc, "use")["use"]["status"] == "inconclusive"
    assert provider_entry(doc, "use")["state"] == "ran"


def test_a_variable_the_wiring_does_not_name_never_reaches_a_command_on_a_worker(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The workers inherited the suite's environment (PYTEST_CURRENT_TEST among it): a
    command sees only what its wiring binds, on a worker as on this machine."""
    seen = "import os, sys; sys.exit(1 if 'PYTEST_CURRENT_TEST' in os.environ else 0)"
    passed = "import os, sys; sys.exit(0 if os.environ.get('PATH') else 1)"
    root = make_repo(tmp_path / "ws", {"src/app.py": "x = 11\n"})
    make_change(
        root,
        "c1",
        EVIDENCE,
        "version: 1\nproviders:\n"
        f"  use: {{adapter: command, command: {py_argv(seen)}, claims: [hello]}}\n"
        f"  path: {{adapter: command, command: {py_argv(passed)}}}\n",
    )
    code, doc = prove_json(root, "c1", "--no-cache", *dask_args(cluster), capsys=capsys)
    assert code == 0, doc
    kinds = {
        s["predicate"]["changeloop"]["executor"]["kind"] for s in statements(root, "c1").values()
    }
    assert kinds == {"dask"}


def test_a_finished_run_leaves_no_sandbox_on_the_workers(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The coordinator does not wait for the workers' cleanup, but it must happen: a
    long-lived worker would otherwise keep a copy of the repository per run."""
    root = make_repo(tmp_path / "ws", {"src/app.py": "x = 12\n"})
    make_change(
        root,
        "c1",
        EVIDENCE,
        f"version: 1\nproviders:\n  use: {{adapter: command, command: {py_argv('pass')}, "
        "claims: [hello]}\n",
    )
    code, doc = prove_json(root, "c1", "--no-cache", *dask_args(cluster), capsys=capsys)
    assert code == 0, doc
    with dask_client(cluster.scheduler_address) as client:
        bases = [Path(b) / "runs" for b in client.run(remote.base_dir).values()]
    deadline = time.monotonic() + 30
    while any(b.is_dir() and any(b.iterdir()) for b in bases) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [
        sorted(p.name for p in b.iterdir()) for b in bases if b.is_dir() and any(b.iterdir())
    ]
