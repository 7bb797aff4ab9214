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
    "engine.py",
    "run/stages.py",
    "run/cache_from.py",
    "run/run_json.py",
    "run/order.py",
    "run/recording.py",
    "run/provider_services.py",
    "run/sink.py",
    "run/cache_reuse.py",
    "run/symlink_findings.py",
    "processes.py",
    "running_process.py",
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
    ("RunStages", "run/stages.py", "engine.py"),
    ("compose", "run/stages.py", "engine.py"),
    ("open_cache_from", "run/cache_from.py", "engine.py"),
    ("record_run", "run/run_json.py", "engine.py"),
    ("new_runlog", "run/run_json.py", "engine.py"),
    ("likely_cached", "run/order.py", "engine.py"),
    ("RecordingExecutor", "run/recording.py", "engine.py"),
    ("ServiceWorkdirs", "run/provider_services.py", "engine.py"),
    ("ports_taken", "run/provider_services.py", "engine.py"),
    ("service_repositories", "run/provider_services.py", "engine.py"),
    ("verified_passes", "run/cache_reuse.py", "run/sink.py"),
    ("cached_outcome", "run/cache_reuse.py", "run/sink.py"),
    ("with_symlink_findings", "run/symlink_findings.py", "run/sink.py"),
    ("RunningProcess", "running_process.py", "processes.py"),
    ("run_process", "processes.py", "running_process.py"),
)

# The engine's former glue, under its old private names: gone, not kept beside the new homes.
ENGINE_FORMER = (
    "_Run",
    "_compose",
    "_shared_cache",
    "_issuer_fingerprints",
    "_slots",
    "_runlog",
    "_record_run",
    "_likely_cached",
    "_Workdirs",
    "_Recording",
    "_service_repositories",
    "_ports_taken",
)

# What callers import from changeloop.engine (cli/prove.py, cli/board.py, nochange/record.py).
ENGINE_API = (
    "prove",
    "nothing_to_prove",
    "ProveResult",
    "ProveOptions",
    "ProviderReport",
    "ReceiptEntry",
    "RunEvent",
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


def test_engine_keeps_no_copy_of_its_former_glue() -> None:
    left = sorted(set(ENGINE_FORMER) & _defined("engine.py"))
    assert not left, f"changeloop/engine.py defines {left} again; they live in changeloop/run/"


def test_engine_still_offers_what_its_callers_import() -> None:
    import changeloop.engine as engine

    missing = [name for name in ENGINE_API if not hasattr(engine, name)]
    assert not missing, f"changeloop.engine no longer offers {missing}"
    assert set(ENGINE_API) - {"nothing_to_prove", "prove"} <= set(engine.__all__)
