"""Modules that were split by job stay split: each part small, each job in its own place.

The project's rule is small modules with one job (docs/ARCHITECTURE.md). These
modules once mixed two or three jobs in 450-600 lines; a part growing past the
limit again, or a job drifting back into its old module, fails here.
"""

from __future__ import annotations

import ast

import pytest
from repo_paths import REPO_ROOT

PACKAGE = REPO_ROOT / "changeloop"
LIMIT = 400  # lines: above this a module is split along its jobs

SPLIT = (
    "process_groups.py",
    "sweep.py",
    "preflight/__init__.py",
    "preflight/providers.py",
    "detect/derive.py",
    "detect/static_analysis.py",
    "detect/script_providers.py",
    "detect/runner_commands.py",
    "executors/worker.py",
    "executors/worker_sandboxes.py",
    "executors/worker_files.py",
    "executors/wire.py",
    "executors/dask.py",
    "executors/dask_results.py",
    "executors/shipping.py",
)

# job -> (the module it lives in, a module it must not live in any more)
HOMES = (
    ("sweep", "sweep.py", "process_groups.py"),
    ("Sweep", "sweep.py", "process_groups.py"),
    ("record_group", "process_groups.py", "sweep.py"),
    ("check", "preflight/__init__.py", "preflight/providers.py"),
    ("services", "preflight/services.py", "preflight/__init__.py"),
    ("links", "preflight/links.py", "preflight/__init__.py"),
    ("linters", "detect/static_analysis.py", "detect/derive.py"),
    ("test_command", "detect/runner_commands.py", "detect/derive.py"),
    ("from_scripts", "detect/script_providers.py", "detect/derive.py"),
    ("derive_explained", "detect/derive.py", "detect/script_providers.py"),
    ("WireJob", "executors/wire.py", "executors/worker.py"),
    ("sandbox_of", "executors/worker_sandboxes.py", "executors/worker.py"),
    ("pack_dir", "executors/worker_files.py", "executors/worker.py"),
    ("job_result", "executors/dask_results.py", "executors/dask.py"),
    ("shipped_repositories", "executors/shipping.py", "executors/dask.py"),
)


def _defined(relpath: str) -> set[str]:
    tree = ast.parse((PACKAGE / relpath).read_text(encoding="utf-8"))
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


@pytest.mark.parametrize("relpath", SPLIT)
def test_split_module_stays_small(relpath: str) -> None:
    lines = len((PACKAGE / relpath).read_text(encoding="utf-8").splitlines())
    assert lines <= LIMIT, f"changeloop/{relpath} has {lines} lines; split it along its jobs"


@pytest.mark.parametrize(("name", "home", "former"), HOMES)
def test_each_job_is_defined_in_its_own_module(name: str, home: str, former: str) -> None:
    assert name in _defined(home), f"{name} belongs in changeloop/{home}"
    assert name not in _defined(former), f"{name} is defined again in changeloop/{former}"
