"""A real ``distributed.LocalCluster`` for the Dask tests, and what they share.

Each Dask test module starts one cluster for the module (3 single-threaded worker
processes); its HTTP server takes a free port, since the default 8787 may be held
by another cluster on the machine (a warning, an error under ``filterwarnings``).
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import distributed  # the [test] extra installs it: CI never skips these

PY = sys.executable


@contextmanager
def local_cluster(workers: int = 3) -> Iterator[Any]:
    make: Any = distributed.LocalCluster  # untyped in distributed
    with make(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        silence_logs=40,
    ) as local:
        yield local


def dask_args(cluster: Any) -> list[str]:
    """The ``prove`` options that send the run to ``cluster``."""
    return ["--executor", "dask", "--dask-scheduler", cluster.scheduler_address]


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
