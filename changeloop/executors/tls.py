"""How the coordinator reaches a Dask cluster: TLS with a client certificate.

A worker decides results, so whoever can submit work to the cluster can forge
them; the cluster must admit only holders of a certificate its CA signed.
:func:`tls_problem` refuses, before anything is contacted, an address that is
not ``tls://`` (unless ``--dask-insecure``) and TLS without the CA, the client
certificate or its key — from ``--dask-tls-*``, else from Dask's own
``distributed.comm.tls.ca-file`` / ``.client.cert`` / ``.client.key``.
:func:`security_of` builds the ``distributed.Security`` the client uses
(``require_encryption``: no plain connection is ever made).
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import dask.config
from distributed import Security

from changeloop.errors import Location, Problem
from changeloop.records import ProveOptions

TLS_FIX = (
    "start the scheduler and workers with TLS (docs/scale-out.md shows how, certificates "
    "included) and pass --dask-scheduler tls://host:8786 --dask-tls-ca-file ca.pem "
    "--dask-tls-cert client.pem --dask-tls-key client.key (or set Dask's "
    "distributed.comm.tls.ca-file / .client.cert / .client.key); --dask-insecure accepts "
    "a cluster without TLS, on a network only you can reach"
)
FLAGS = {"ca": "--dask-tls-ca-file", "cert": "--dask-tls-cert", "key": "--dask-tls-key"}
CONFIG = {
    "ca": "distributed.comm.tls.ca-file",
    "cert": "distributed.comm.tls.client.cert",
    "key": "distributed.comm.tls.client.key",
}


def _files(options: ProveOptions) -> dict[str, str | None]:
    """The CA, certificate and key: each from its flag, else from Dask's configuration."""
    given = {
        "ca": options.dask_tls_ca_file,
        "cert": options.dask_tls_cert,
        "key": options.dask_tls_key,
    }
    out: dict[str, str | None] = {}
    for part, path in given.items():
        configured = dask.config.get(CONFIG[part], default=None)
        out[part] = str(path) if path is not None else (str(configured) if configured else None)
    return out


def tls_problem(options: ProveOptions) -> Problem | None:
    """Why this run must not reach its cluster as configured; None when it may."""
    address = options.dask_scheduler or ""
    secure = address.startswith("tls://")
    if not secure:
        if options.dask_insecure:
            return None
        return Problem(
            code="dask-insecure",
            message=f"the Dask scheduler address {address} is not tls://: without TLS and "
            "client certificates anyone who can reach the cluster can run code on its "
            "workers and decide this run's results",
            fix=TLS_FIX,
        )
    files = _files(options)
    key_in_cert = files["key"] is None and files["cert"] is not None and _holds_key(files["cert"])
    missing = [part for part, path in files.items() if path is None and not key_in_cert]
    if missing:
        names = " and ".join(f"{FLAGS[p]} (or {CONFIG[p]})" for p in missing)
        return Problem(
            code="dask-insecure",
            message=f"{address} needs a client certificate signed by the cluster's CA; "
            f"missing: {names}",
            fix=TLS_FIX,
        )
    for part, path in files.items():
        if path is None:
            continue
        file = Path(path)
        if not file.is_file():
            return Problem(
                code="dask-tls-file",
                message=f"{FLAGS[part]}: {path} is not a readable file",
                location=Location(str(path)),
                fix="give the PEM file's path (docs/scale-out.md shows how to make them)",
            )
    try:
        security_of(options).get_connection_args("client")
    except (OSError, ValueError, ssl.SSLError) as exc:
        return Problem(
            code="dask-tls-file",
            message=f"the TLS files ({', '.join(p for p in files.values() if p)}) cannot be "
            f"used: {exc}",
            fix="give the CA's certificate, the client certificate and its private key as "
            "PEM files (docs/scale-out.md shows how to make them)",
        )
    return None


def _holds_key(cert: str) -> bool:
    """A PEM file holding the certificate and its key together (Dask accepts that)."""
    try:
        with Path(cert).open("rb") as fh:
            return b"PRIVATE KEY-----" in fh.read(1 << 20)
    except OSError:
        return False


def security_of(options: ProveOptions) -> Any:
    """The client's ``distributed.Security``; None for an insecure (``--dask-insecure``) address."""
    if not (options.dask_scheduler or "").startswith("tls://"):
        return None
    files = _files(options)
    make: Any = Security  # untyped in distributed
    return make(
        tls_ca_file=files["ca"],
        tls_client_cert=files["cert"],
        tls_client_key=files["key"],
        require_encryption=True,
    )
