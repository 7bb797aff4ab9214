# mypy: disable-error-code="no-untyped-call"
"""Grounding on a real Dask cluster (TLS, worker processes): the tracer runs on the worker and
its out-of-band record travels back, so examples/python-grounding gets the same groundings,
claims and findings as a local run — a citation no tracer observed never credits."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dask_helpers import dask_args, local_cluster, statements
from prove_helpers import git, prove_json

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python-grounding"

EXECUTION = """\
version: 1
repositories:
  self:
    entryPoints: ["shop/api.py::create_*"]
providers:
  test:
    adapter: test-discovery
    command: [python3, -m, pytest, -q, --junitxml=.changeloop/reports/test.xml]
    report: .changeloop/reports/test.xml
    timeoutMs: 120000
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with local_cluster(workers=1) as local:
        yield local


def _project(root: Path) -> Path:
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".changeloop", "__pycache__"))
    (root / "openspec/changes/add-orders/execution.yaml").write_text(EXECUTION)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init")
    return root


def _groundings(root: Path) -> dict[str, dict[str, Any]]:
    ext = statements(root, "add-orders")["test.test.json"]["predicate"]["changeloop"]
    return {
        c["test"].rsplit("::")[-1]: {
            "claim": claim,
            "grounding": c.get("grounding"),
            "depth": c.get("depth"),
            "outside": c.get("reached_outside_entry", "omitted"),
        }
        for claim, cites in ext["citations"].items()
        for c in cites
    }


def test_groundings_on_the_cluster_equal_the_local_ones(
    tmp_path: Path, cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    local_root = _project(tmp_path / "local")
    local_code, local = prove_json(local_root, "add-orders", capsys=capsys)
    dask_root = _project(tmp_path / "dask")
    dask_code, remote = prove_json(dask_root, "add-orders", *dask_args(cluster), capsys=capsys)
    ext = statements(dask_root, "add-orders")["test.test.json"]["predicate"]["changeloop"]
    assert ext["executor"]["kind"] == "dask"
    assert (dask_code, remote["claims"]) == (local_code, local["claims"])
    assert _groundings(dask_root) == _groundings(local_root)
    by_test = _groundings(dask_root)
    # what the tracer on the worker saw, not a default: a real grounding, an `assert True`
    # left untouched, a schema read that is inert
    assert by_test["test_total_with_discount"]["grounding"] == "grounded"
    assert by_test["test_refund"]["grounding"] == "untouched"
    assert by_test["test_schema_declares_currency"]["grounding"] == "inert"
    assert remote["claims"]["refunds"]["status"] == "inconclusive"
    assert remote["claims"]["order-total"]["status"] == "proven"
    kinds = {f["kind"] for f in ext["findings"]}
    assert "grounding-unavailable" not in kinds
