"""A real ``distributed.LocalCluster`` with TLS for the Dask tests, and what they share.

Each Dask test module starts one cluster for the module (3 single-threaded worker
processes); its HTTP server takes a free port, since the default 8787 may be held
by another cluster on the machine (a warning, an error under ``filterwarnings``).
Every cluster requires TLS with client certificates, signed by a throwaway CA
made here with the ``cryptography`` package (:func:`make_pki`), as a real
deployment's would be (docs/scale-out.md).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import distributed  # the [test] extra installs it: CI never skips these
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

PY = sys.executable


@dataclass(frozen=True)
class Pki:
    """A throwaway CA and what it signed: one certificate for the cluster, one for clients."""

    ca: Path  # the CA's certificate (PEM)
    node_cert: Path  # the scheduler's and the workers' certificate
    node_key: Path
    client_cert: Path  # the coordinator's (prove's) client certificate
    client_key: Path

    def security(self, *, client: bool = True) -> Any:
        """``distributed.Security`` for the cluster's nodes, and for a client when ``client``."""
        make: Any = distributed.Security
        return make(
            tls_ca_file=str(self.ca),
            tls_scheduler_cert=str(self.node_cert),
            tls_scheduler_key=str(self.node_key),
            tls_worker_cert=str(self.node_cert),
            tls_worker_key=str(self.node_key),
            tls_client_cert=str(self.client_cert if client else self.node_cert),
            tls_client_key=str(self.client_key if client else self.node_key),
            require_encryption=True,
        )

    def client_args(self) -> list[str]:
        """``prove``'s TLS options."""
        return [
            "--dask-tls-ca-file",
            str(self.ca),
            "--dask-tls-cert",
            str(self.client_cert),
            "--dask-tls-key",
            str(self.client_key),
        ]

    def node_args(self) -> list[str]:
        """``dask scheduler`` / ``dask worker``'s TLS options."""
        return [
            "--tls-ca-file",
            str(self.ca),
            "--tls-cert",
            str(self.node_cert),
            "--tls-key",
            str(self.node_key),
        ]


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def make_pki(folder: Path, name: str = "changeloop-test") -> Pki:
    """A CA (``name``) and two certificates it signs (cluster nodes, client), as PEM files."""
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name(f"{name} CA"))
        .issuer_name(_name(f"{name} CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca = folder / "ca.pem"
    ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths: list[Path] = []
    for role in ("node", "client"):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(f"{name} {role}"))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
            .sign(ca_key, hashes.SHA256())
        )
        cert_path, key_path = folder / f"{role}.pem", folder / f"{role}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, key_path)
        paths += [cert_path, key_path]
    return Pki(ca, *paths)


_PKI: list[Pki] = []


def suite_pki() -> Pki:
    """The suite's CA and certificates, made once per test process."""
    if not _PKI:
        _PKI.append(make_pki(Path(tempfile.mkdtemp(prefix="changeloop-pki-"))))
    return _PKI[0]


@contextmanager
def local_cluster(workers: int = 3, **more: Any) -> Iterator[Any]:
    """A LocalCluster of ``workers`` single-threaded processes, TLS with client certificates."""
    make: Any = distributed.LocalCluster  # untyped in distributed
    with make(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        protocol="tls://",
        security=suite_pki().security(),
        dashboard_address="127.0.0.1:0",
        silence_logs=40,
        **more,
    ) as local:
        yield local


def dask_args(cluster: Any) -> list[str]:
    """The ``prove`` options that send the run to ``cluster`` (its TLS client certificate too)."""
    return [
        "--executor",
        "dask",
        "--dask-scheduler",
        cluster.scheduler_address,
        *suite_pki().client_args(),
    ]


def client(address: str, **more: Any) -> Any:
    """A ``distributed.Client`` of the tests (the operator's), with the client certificate."""
    make: Any = distributed.Client
    return make(address, security=suite_pki().security(), **more)


def py_argv(code: str) -> str:
    """A ``command:`` running ``code`` with this interpreter, as a YAML flow list."""
    return json.dumps([PY, "-c", code])


def statements(root: Path, change: str) -> dict[str, dict[str, Any]]:
    """The decoded in-toto statement of each latest receipt of ``change``, by file name."""
    out = {}
    for path in sorted((root / ".changeloop" / "receipts" / change).glob("*.json")):
        out[path.name] = json.loads(base64.b64decode(json.loads(path.read_bytes())["payload"]))
    return out


def interval_providers(log: Path, count: int, seconds: float, extra: str = "") -> str:
    """``count`` command providers that each hold ``seconds`` and append their
    ``start end`` interval to ``log`` (``p0`` carries the claim ``hello``); ``extra`` is
    added to every provider's flow mapping (e.g. ``", resources: [gpu]"``)."""
    hold = (
        f"import time; a = time.time(); time.sleep({seconds}); b = time.time(); "
        f"open({str(log)!r}, 'a').write(f'{{a}} {{b}}\\n')"
    )
    return "version: 1\nproviders:\n" + "".join(
        f"  p{i}: {{adapter: command, command: {py_argv(hold)}{extra}"
        + (", claims: [hello]}\n" if i == 0 else "}\n")
        for i in range(count)
    )


def intervals(log: Path) -> list[tuple[float, float]]:
    """The ``(start, end)`` pairs :func:`interval_providers` logged, in start order."""
    return sorted(
        (float(a), float(b)) for a, b in (line.split() for line in log.read_text().splitlines())
    )
