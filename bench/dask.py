"""Dask executor benchmark: 64 providers of ``sleep 0.5`` on a real TLS cluster, beside plain Dask.

    python bench/dask.py                   # 64 providers, 4 workers, best of 3 (~2 min)
    python bench/dask.py --providers 16 --repeat 1
    python bench/dask.py --insecure        # the same cluster without TLS (tcp://)

Starts the cluster as an operator would: ``dask scheduler`` and ``--workers``
``dask worker`` processes (one thread each, with their nannies), all with TLS
and client certificates from a throwaway CA made with the ``openssl`` commands
docs/scale-out.md gives. Then, on that same cluster, best of ``--repeat``
after one warm-up each, alternating:

- **plain Dask**: a client (TLS on too) submits the same N ``sleep 0.5``
  processes (``subprocess.run``) and waits for all — the floor a Dask user sees;
- **changeloop**: ``prove --no-cache --executor dask`` of one change of N
  independent ``command`` providers (``sleep 0.5``): plan, content shipped,
  fingerprints, receipts signed, verdict, all included.

Reports each makespan, the ideal (work ÷ workers), their ratio, and
changeloop's overhead per job over plain Dask ((changeloop − plain) ×
workers ÷ jobs). The load average is printed with the figures: on a shared
machine they swing with it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# This file is named dask.py: run as a script, its directory comes first on the
# path and would shadow the real ``dask`` package that ``distributed`` imports.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from changeloop.cli.main import main  # noqa: E402 - after the path fix above

SLEEP_S = 0.5
DASK = str(Path(sys.executable).with_name("dask"))


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certificates(folder: Path) -> dict[str, Path]:
    """A CA, one certificate for the cluster's nodes, one for the client (docs/scale-out.md)."""
    folder.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(
        "req",
        "-x509",
        *ec,
        "-days",
        "1",
        "-subj",
        "/CN=bench CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        cwd=folder,
    )
    for role in ("node", "client"):
        _openssl(
            "req",
            *ec,
            "-subj",
            f"/CN=bench {role}",
            "-keyout",
            f"{role}.key",
            "-out",
            f"{role}.csr",
            cwd=folder,
        )
        _openssl(
            "x509",
            "-req",
            "-in",
            f"{role}.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-out",
            f"{role}.pem",
            cwd=folder,
        )
    return {
        name: folder / name
        for name in ("ca.pem", "node.pem", "node.key", "client.pem", "client.key")
    }


@contextmanager
def cluster(base: Path, workers: int, certs: dict[str, Path] | None) -> Iterator[str]:
    """``dask scheduler`` and ``workers`` × ``dask worker`` (TLS unless ``certs`` is None)."""
    tls = (
        [
            "--tls-ca-file",
            str(certs["ca.pem"]),
            "--tls-cert",
            str(certs["node.pem"]),
            "--tls-key",
            str(certs["node.key"]),
        ]
        if certs
        else []
    )
    file = base / "scheduler.json"
    log = (base / "cluster.log").open("wb")
    procs = [
        subprocess.Popen(
            [
                DASK,
                "scheduler",
                "--protocol",
                "tls" if certs else "tcp",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(file),
                *tls,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    ]
    try:
        deadline = time.monotonic() + 60
        while not file.exists() or not file.read_text().strip():
            if time.monotonic() > deadline:
                raise SystemExit("the scheduler did not start (see cluster.log)")
            time.sleep(0.1)
        address = json.loads(file.read_text())["address"]
        procs += [
            subprocess.Popen(
                [
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
                    *tls,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            for _ in range(workers)
        ]
        client = _client(address, certs)
        try:
            client.wait_for_workers(workers, timeout=120)
        finally:
            client.close()
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()


def _client(address: str, certs: dict[str, Path] | None) -> Any:
    from distributed import Client, Security

    security = (
        Security(
            tls_ca_file=str(certs["ca.pem"]),
            tls_client_cert=str(certs["client.pem"]),
            tls_client_key=str(certs["client.key"]),
            require_encryption=True,
        )
        if certs
        else None
    )
    return Client(address, security=security, timeout=30)


def _sleep() -> int:
    return subprocess.run(["sleep", str(SLEEP_S)], check=False).returncode


def plain_dask(address: str, certs: dict[str, Path] | None, jobs: int) -> float:
    """N ``sleep`` processes submitted straight through ``distributed``: the script's wall
    time, connecting and closing included (as ``prove``'s makespan includes them)."""
    start = time.monotonic()
    client = _client(address, certs)
    try:
        futures = [client.submit(_sleep, pure=False) for _ in range(jobs)]
        if any(code != 0 for code in client.gather(futures)):
            raise SystemExit("a plain Dask sleep failed")
    finally:
        client.close()
    return time.monotonic() - start


def _workspace(base: Path, providers: int) -> Path:
    root = base / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    (root / "app.txt").write_text("bench\n")
    change = root / "openspec" / "changes" / "bench"
    change.mkdir(parents=True)
    (root / "openspec" / "specs").mkdir(parents=True)
    (change / "evidence.yaml").write_text(
        "version: 3\nclaims:\n  slept: {statement: every provider slept, requires: [p0]}\n"
    )
    lines = [
        f'  p{i}: {{adapter: command, command: ["sleep", "{SLEEP_S}"], resources: []'
        + (", claims: [slept]}" if i == 0 else "}")
        for i in range(providers)
    ]
    (change / "execution.yaml").write_text("version: 1\nproviders:\n" + "\n".join(lines) + "\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "bench"],
        cwd=root,
        check=True,
    )
    return root


def prove(root: Path, *extra: str) -> float:
    """``prove --no-cache --json`` in this process (its output kept aside): the makespan."""
    saved = sys.stdout, sys.stderr
    with tempfile.TemporaryFile("w+") as document, open(os.devnull, "w") as quiet:
        sys.stdout, sys.stderr = document, quiet
        try:
            start = time.monotonic()
            code = main(["prove", "bench", "--root", str(root), "--no-cache", "--json", *extra])
            took = time.monotonic() - start
        finally:
            sys.stdout, sys.stderr = saved
        if code != 0:
            document.seek(0)
            doc = json.loads(document.read())
            raise SystemExit(f"prove exited {code}: {doc.get('errors')}")
    return took


def main_(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--providers", type=int, default=64)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3, help="measured runs of each; best counts")
    parser.add_argument("--insecure", action="store_true", help="tcp:// instead of TLS")
    args = parser.parse_args(argv)
    ideal = args.providers * SLEEP_S / args.workers
    with tempfile.TemporaryDirectory(prefix="changeloop-bench-dask-") as tmp:
        base = Path(tmp)
        certs = None if args.insecure else make_certificates(base / "pki")
        root = _workspace(base, args.providers)
        with cluster(base, args.workers, certs) as address:
            flags = ["--executor", "dask", "--dask-scheduler", address]
            if certs:
                flags += [
                    "--dask-tls-ca-file",
                    str(certs["ca.pem"]),
                    "--dask-tls-cert",
                    str(certs["client.pem"]),
                    "--dask-tls-key",
                    str(certs["client.key"]),
                ]
            else:
                flags.append("--dask-insecure")
            plain_dask(address, certs, args.providers)  # warm-up: imports, connections
            prove(root, *flags)  # warm-up: content cached on the workers
            plains: list[float] = []
            proves: list[float] = []
            for _ in range(max(1, args.repeat)):  # alternating: the same minutes for both
                plains.append(plain_dask(address, certs, args.providers))
                proves.append(prove(root, *flags))
    plain, ours = min(plains), min(proves)
    print(
        json.dumps(
            {
                "providers": args.providers,
                "workers": args.workers,
                "sleepS": SLEEP_S,
                "tls": certs is not None,
                "idealS": ideal,
                "loadAverage": [round(x, 2) for x in os.getloadavg()],
                "plainDask": {
                    "makespanS": round(plain, 2),
                    "ratio": round(plain / ideal, 3),
                    "runsS": [round(r, 2) for r in plains],
                },
                "changeloop": {
                    "makespanS": round(ours, 2),
                    "ratio": round(ours / ideal, 3),
                    "runsS": [round(r, 2) for r in proves],
                    "overheadMsPerJobOverPlain": round(
                        (ours - plain) * args.workers / args.providers * 1000, 1
                    ),
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main_()
