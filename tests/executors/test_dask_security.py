# mypy: disable-error-code="no-untyped-call"
"""Who may run jobs and decide results on a Dask cluster, and what a worker may write here.

A worker decides results, so only machines holding a certificate of the
cluster's CA may join it or use it: ``prove --executor dask`` speaks TLS with
a client certificate, refuses plain ``tcp://`` before anything runs (unless
``--dask-insecure``), and a client without the certificate cannot connect, let
alone run anything. A worker's answer is unpacked into a staging directory and
only the job's declared files come out of it: a hostile worker plants nothing
in the checkout. One module-scoped TLS cluster (three worker processes).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask
import distributed
import pytest
from dask_helpers import (
    PY,
    client,
    dask_args,
    local_cluster,
    make_pki,
    py_argv,
    statements,
    suite_pki,
)
from prove_helpers import git, make_change, make_repo, prove_json

EVIDENCE = "version: 3\nclaims:\n  hello: {statement: it greets, requires: [use]}\n"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with local_cluster() as local:
        yield local


def _touching_change(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "ran"
    touch = py_argv(f"open({str(marker)!r}, 'w')")
    root = make_repo(tmp_path / "ws", {"src/app.py": "x = 1\n"})
    make_change(
        root,
        "c1",
        EVIDENCE,
        f"version: 1\nproviders:\n  use: {{adapter: command, command: {touch}, claims: [hello]}}\n",
    )
    return root, marker


def test_a_plain_tcp_scheduler_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """tcp:// (flag or CHANGELOOP_DASK_SCHEDULER) is exit 2 ``dask-insecure``, the fix named."""
    root, marker = _touching_change(tmp_path)
    with socket.socket() as listener:  # a scheduler address that would answer a connect
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        address = f"tcp://127.0.0.1:{listener.getsockname()[1]}"
        code, doc = prove_json(
            root, "c1", "--executor", "dask", "--dask-scheduler", address, capsys=capsys
        )
        assert code == 2, doc
        [error] = doc["errors"]
        assert error["code"] == "dask-insecure"
        assert address in error["message"]
        for word in ("tls://", "--dask-tls-ca-file", "--dask-tls-cert", "--dask-tls-key"):
            assert word in error["fix"], error
        assert "--dask-insecure" in error["fix"]
        monkeypatch.setenv("CHANGELOOP_DASK_SCHEDULER", address.removeprefix("tcp://"))
        code, doc = prove_json(root, "c1", "--executor", "dask", capsys=capsys)
        assert code == 2 and doc["errors"][0]["code"] == "dask-insecure", doc
    assert not marker.exists()
    assert not list((root / ".changeloop" / "receipts").glob("c1/*.json"))


def test_tls_without_a_client_certificate_is_refused_naming_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, marker = _touching_change(tmp_path)
    pki = suite_pki()
    code, doc = prove_json(
        root,
        "c1",
        "--executor",
        "dask",
        "--dask-scheduler",
        "tls://127.0.0.1:9",
        "--dask-tls-ca-file",
        str(pki.ca),
        capsys=capsys,
    )
    assert code == 2, doc
    [error] = doc["errors"]
    assert error["code"] == "dask-insecure"
    assert "--dask-tls-cert" in error["message"] and "--dask-tls-key" in error["message"]
    code, doc = prove_json(
        root,
        "c1",
        "--executor",
        "dask",
        "--dask-scheduler",
        "tls://127.0.0.1:9",
        "--dask-tls-ca-file",
        str(tmp_path / "no-such-ca.pem"),
        "--dask-tls-cert",
        str(pki.client_cert),
        "--dask-tls-key",
        str(pki.client_key),
        capsys=capsys,
    )
    assert code == 2, doc
    [error] = doc["errors"]
    assert error["code"] == "dask-tls-file" and "no-such-ca.pem" in error["message"], error
    assert not marker.exists()


def test_a_client_without_the_certificate_cannot_connect_or_run_anything(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """No certificate, another CA's certificate, plain TCP: no session, no task, no prove."""
    address = cluster.scheduler_address
    host, port = address.removeprefix("tls://").rsplit(":", 1)
    ran = tmp_path / "ran-by-stranger"
    pki = suite_pki()
    # a TLS client that trusts the cluster's CA but has no certificate: the handshake fails
    context = ssl.create_default_context(cafile=str(pki.ca))
    context.check_hostname = False
    with (
        socket.create_connection((host, int(port)), timeout=10) as raw,
        pytest.raises((ssl.SSLError, ConnectionError)),
        context.wrap_socket(raw) as tls,
    ):
        tls.sendall(b"\0" * 8)
        assert tls.recv(1) != b"", "the scheduler answered a client without a certificate"
    rogue = make_pki(tmp_path / "rogue", name="rogue")
    strangers = {
        "another CA's certificate": {"security": rogue.security()},
        "plain tcp": {"address": "tcp://" + address.removeprefix("tls://")},
    }
    for why, how in strangers.items():
        with pytest.raises((OSError, TimeoutError, TypeError, ValueError)):
            asyncio.run(_stranger(how.get("address", address), how.get("security"), ran, why))
    assert not ran.exists()
    # prove with another CA's certificate: unreachable, nothing runs
    root, marker = _touching_change(tmp_path)
    code, doc = prove_json(
        root,
        "c1",
        "--executor",
        "dask",
        "--dask-scheduler",
        address,
        "--dask-tls-ca-file",
        str(rogue.ca),
        "--dask-tls-cert",
        str(rogue.client_cert),
        "--dask-tls-key",
        str(rogue.client_key),
        capsys=capsys,
    )
    assert code == 2 and doc["errors"][0]["code"] == "dask_unreachable", doc
    assert not marker.exists()
    # the operator's client, with the certificate, does connect (the refusals above are TLS's)
    operator = client(address, timeout=10)
    try:
        assert operator.submit(sum, [1, 2]).result(timeout=30) == 3
    finally:
        operator.close()


async def _stranger(address: str, security: Any, ran: Path, why: str) -> None:
    """Connect as a stranger and, if that works, try to run something."""
    make: Any = distributed.Client
    async with make(address, security=security, asynchronous=True, timeout=3) as stranger:
        await stranger.submit(Path.write_text, ran, why)


def test_dasks_own_tls_configuration_stands_in_for_the_flags(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    root, marker = _touching_change(tmp_path)
    pki = suite_pki()
    with dask.config.set(
        {
            "distributed.comm.tls.ca-file": str(pki.ca),
            "distributed.comm.tls.client.cert": str(pki.client_cert),
            "distributed.comm.tls.client.key": str(pki.client_key),
        }
    ):
        code, doc = prove_json(
            root,
            "c1",
            "--executor",
            "dask",
            "--dask-scheduler",
            cluster.scheduler_address,
            capsys=capsys,
        )
    assert code == 0, doc
    assert marker.exists()
    [ext] = [s["predicate"]["changeloop"] for s in statements(root, "c1").values()]
    assert ext["executor"]["worker"].startswith("tls://")


def test_dask_insecure_allows_a_plain_tcp_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The opt-out works, and says on stderr what it gives up."""
    root, marker = _touching_change(tmp_path)
    make: Any = distributed.LocalCluster
    with make(
        n_workers=1,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        silence_logs=40,
    ) as plain:
        capsys.readouterr()
        from changeloop.cli.main import main

        code = main(
            [
                "prove",
                "c1",
                "--root",
                str(root),
                "--json",
                "--executor",
                "dask",
                "--dask-scheduler",
                plain.scheduler_address,
                "--dask-insecure",
            ]
        )
        out, err = capsys.readouterr()
    assert code == 0, out
    assert marker.exists()
    assert "--dask-insecure" in err and "tcp://" in err


def test_a_hostile_worker_plants_nothing_in_the_checkout(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--sandbox none``: the worker's archives carry a git hook, a replaced workspace key,
    ``..`` and absolute paths, links and a FIFO; only the declared report is read, as a file."""
    from dask_hostile import turn_honest, turn_hostile

    outside = tmp_path / "outside"
    outside.mkdir()
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
    code, doc = prove_json(root, "c1", "--sandbox", "none", capsys=capsys)  # makes the key
    assert code == 0, doc
    key = root / ".changeloop" / "keys" / "local.key"
    key_bytes = key.read_bytes()
    operator = client(cluster.scheduler_address)
    try:
        assert len(operator.run(turn_hostile, str(outside))) == 3
        code, doc = prove_json(
            root, "c1", "--sandbox", "none", "--no-cache", *dask_args(cluster), capsys=capsys
        )
    finally:
        operator.run(turn_honest)
        operator.close()
    assert not (root / ".git" / "hooks" / "post-commit").exists()
    assert not (root / ".git" / "hooks" / "pre-commit").exists()
    assert key.read_bytes() == key_bytes
    assert not (root.parent / "planted-above.txt").exists()
    assert list(outside.iterdir()) == []
    for name in ("evil", "hard", "fifo"):
        assert not os.path.lexists(root / name), name
    report = root / "reports" / "junit.xml"
    assert not report.is_symlink()
    git(root, "commit", "-q", "--allow-empty", "-m", "after")  # no hook runs
    assert not (root / "planted-by-hook").exists()
    # the planted report link is refused, never read: the key's bytes are nowhere
    text = json.dumps(doc)
    secret = key_bytes.decode().splitlines()[1]
    assert secret not in text
    for path in (root / ".changeloop").rglob("*"):
        if path.is_file() and path != key:
            assert secret.encode() not in path.read_bytes(), path
    made = [s["predicate"]["changeloop"] for s in statements(root, "c1").values()]
    assert made and all(ext["executor"]["kind"] == "dask" for ext in made)
    for ext in made:  # the whole answer is refused, naming what it held: never a pass
        assert ext["status"] == "inconclusive", ext
        [finding] = ext["findings"]
        assert finding["kind"] == "worker-error", finding
