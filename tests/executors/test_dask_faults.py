# mypy: disable-error-code="no-untyped-call"
"""Faults of a real cluster started as an operator would: ``dask scheduler`` and ``dask worker``.

One module-scoped cluster of the Dask CLI with TLS (a scheduler and two
workers under their nannies, one thread each). A worker killed with -9 mid-job
leaves no job process once its replacement is back; a frozen worker (SIGSTOP)
is named and its job retried or ``worker-lost`` within the documented wait;
losing the scheduler is a clean error naming it. The scheduler test runs last:
it ends the cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from dask_helpers import PY, client, py_argv, statements, suite_pki
from prove_helpers import make_change, make_repo

EVIDENCE = "version: 3\nclaims:\n  hello: {statement: it greets, requires: [use]}\n"
DASK = str(Path(PY).with_name("dask"))
WORKERS = 2


@dataclass
class CliCluster:
    address: str
    scheduler: subprocess.Popen[bytes]
    workers: list[subprocess.Popen[bytes]]
    logs: Path
    stopped: set[int] = field(default_factory=set)  # worker pids a test froze

    def args(self) -> list[str]:
        return ["--executor", "dask", "--dask-scheduler", self.address, *suite_pki().client_args()]

    def wait_for_workers(self, count: int = WORKERS, timeout: float = 60) -> set[str]:
        operator = client(self.address, timeout=10)
        try:
            operator.wait_for_workers(count, timeout=timeout)
            return set(operator.scheduler_info(n_workers=-1)["workers"])
        finally:
            operator.close()


@pytest.fixture(scope="module")
def cli_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliCluster]:
    base = tmp_path_factory.mktemp("cli-cluster")
    pki = suite_pki()
    file = base / "scheduler.json"
    logs = base / "logs"
    logs.mkdir()
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, *argv: str) -> subprocess.Popen[bytes]:
        out = (logs / f"{name}.log").open("wb")
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        procs.append(proc)
        return proc

    try:
        scheduler = start(
            "scheduler",
            DASK,
            "scheduler",
            "--protocol",
            "tls",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-dashboard",
            "--scheduler-file",
            str(file),
            *pki.node_args(),
        )
        deadline = time.monotonic() + 60
        while not file.exists() or not file.read_text().strip():
            assert scheduler.poll() is None, (logs / "scheduler.log").read_text()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        address = json.loads(file.read_text())["address"]
        assert address.startswith("tls://")
        workers = [
            start(
                f"worker-{i}",
                DASK,
                "worker",
                address,
                "--nthreads",
                "1",
                "--host",
                "127.0.0.1",
                "--no-dashboard",
                "--local-directory",
                str(base / "workers"),
                *pki.node_args(),
            )
            for i in range(WORKERS)
        ]
        cluster = CliCluster(address, scheduler, workers, logs)
        cluster.wait_for_workers()
        yield cluster
    finally:
        for proc in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGCONT)
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[-1][:1]
    except OSError:
        return False
    return state not in ("Z", "X")


def _prove(root: Path, cluster: CliCluster, *extra: str, timeout: float) -> tuple[int, Any, str]:
    """``changeloop prove --json`` as a process: a hang is a failure, not a stuck suite."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    argv = [PY, "-m", "changeloop", "prove", "c1", "--root", str(root), "--json"]
    done = subprocess.run(
        [*argv, *cluster.args(), *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return done.returncode, json.loads(done.stdout or "null"), done.stderr


def _started_change(tmp_path: Path, name: str, body: str) -> tuple[Path, Path]:
    """A change whose one provider logs ``<worker pid> <job pid>`` to a file, then runs ``body``."""
    started = tmp_path / "started.txt"
    code = (
        "import os, signal, sys, time; "
        f"first = not os.path.exists({str(started)!r}); "
        f"open({str(started)!r}, 'a').write(f'{{os.getppid()}} {{os.getpid()}}\\n'); " + body
    )
    root = make_repo(tmp_path / "ws", {"src/app.py": f"x = {name!r}\n"})
    make_change(
        root,
        "c1",
        EVIDENCE,
        f"version: 1\nproviders:\n  use: {{adapter: command, command: {py_argv(code)}, claims: [hello]}}\n",
    )
    return root, started


def _lines(started: Path) -> list[tuple[int, int]]:
    text = started.read_text() if started.exists() else ""
    return [(int(a), int(b)) for a, b in (line.split() for line in text.splitlines())]


def test_a_worker_killed_mid_job_leaves_no_job_process_once_it_is_back(
    tmp_path: Path, cli_cluster: CliCluster
) -> None:
    """kill -9 of the worker process: its nanny starts a replacement, which ends the job."""
    root, started = _started_change(tmp_path, "kill", "time.sleep(120 if first else 0)")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with subprocess.Popen(
        [PY, "-m", "changeloop", "prove", "c1", "--root", str(root), "--json", *cli_cluster.args()],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        deadline = time.monotonic() + 60
        while not _lines(started):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.05)
        [(worker_pid, job_pid)] = _lines(started)
        os.kill(worker_pid, signal.SIGKILL)
        _out, err = proc.communicate(timeout=120)
    try:
        assert proc.returncode == 0, err.decode()
        assert len(_lines(started)) == 2  # retried once, elsewhere
        cli_cluster.wait_for_workers()  # the replacement joined
        deadline = time.monotonic() + 15
        while _alive(job_pid):
            assert time.monotonic() < deadline, "the killed worker's job still runs"
            time.sleep(0.1)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(job_pid, signal.SIGKILL)


@pytest.mark.parametrize("frozen", [1, 2], ids=["retried", "lost"])
def test_a_frozen_worker_is_named_and_does_not_hang_the_run(
    tmp_path: Path, cli_cluster: CliCluster, frozen: int
) -> None:
    """The job SIGSTOPs its own worker (on the first ``frozen`` attempts): silent workers are
    lost after ``--dask-worker-timeout``; the job is retried once, then ``worker-lost``."""
    addresses = cli_cluster.wait_for_workers()
    body = (
        f"n = len(open({str(tmp_path / 'started.txt')!r}).read().splitlines()); "
        f"os.kill(os.getppid(), signal.SIGSTOP) if n <= {frozen} else None; time.sleep(1)"
    )
    root, started = _started_change(tmp_path, f"frozen{frozen}", body)
    began = time.monotonic()
    try:
        code, doc, err = _prove(root, cli_cluster, "--dask-worker-timeout", "3", timeout=90)
    finally:
        for worker_pid, _ in _lines(started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker_pid, signal.SIGCONT)
    took = time.monotonic() - began
    assert took < 60, took
    [ext] = [s["predicate"]["changeloop"] for s in statements(root, "c1").values()]
    if frozen == 1:
        assert code == 0, (doc, err)
        assert ext["status"] == "pass"
        assert ext["executor"]["worker"] in addresses
        assert "stopped answering" in err and any(a in err for a in addresses), err
    else:
        assert code == 1, (doc, err)
        assert ext["status"] == "inconclusive"
        [finding] = ext["findings"]
        assert finding["kind"] == "worker-lost"
        named = [a for a in addresses if a in finding["message"]]
        assert len(named) == 2, finding
        assert "3 s" in finding["message"], finding


def test_losing_the_scheduler_mid_run_is_a_clean_error_naming_it(
    tmp_path: Path, cli_cluster: CliCluster
) -> None:
    """kill -9 of ``dask scheduler`` while a job runs: exit 2, ``dask_scheduler_lost``."""
    cli_cluster.wait_for_workers()
    root, started = _started_change(tmp_path, "scheduler", "time.sleep(30)")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with subprocess.Popen(
        [PY, "-m", "changeloop", "prove", "c1", "--root", str(root), "--json", *cli_cluster.args()],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        deadline = time.monotonic() + 60
        while not _lines(started):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.05)
        os.killpg(cli_cluster.scheduler.pid, signal.SIGKILL)
        began = time.monotonic()
        out, err = proc.communicate(timeout=90)
    assert time.monotonic() - began < 45
    assert proc.returncode == 2, (out, err)
    [error] = json.loads(out)["errors"]
    assert error["code"] == "dask_scheduler_lost", error
    assert cli_cluster.address in error["message"]
    assert "Traceback" not in err and "filesystem_error" not in out, err
    assert not [
        s
        for s in statements(root, "c1").values()
        if s["predicate"]["changeloop"]["status"] == "pass"
    ]
