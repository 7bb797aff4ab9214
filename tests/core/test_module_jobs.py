"""Every module stays small, and modules split by job stay split.

The project's rule is small modules with one job (docs/ARCHITECTURE.md). Any
module of the package growing past the limit fails here; so does a job drifting
back into the module it was split out of (engine, prove, no-change answer,
identity, fsio, preflight, detect, executors, process groups, config schema),
or a name callers import no longer being offered where they import it.
"""

from __future__ import annotations

import ast

import pytest
from repo_paths import REPO_ROOT

PACKAGE = REPO_ROOT / "changeloop"
LIMIT = 400  # lines: above this a module is split along its jobs

# Every module of the package: none may outgrow the limit (the ones split by job
# below got there by outgrowing it).
MODULES = sorted(
    str(path.relative_to(PACKAGE))
    for path in PACKAGE.rglob("*.py")
    if "__pycache__" not in path.parts
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
    ("pack_named", "executors/worker_files.py", "executors/worker.py"),
    ("sweep_once", "executors/worker_processes.py", "executors/worker.py"),
    ("job_result", "executors/dask_results.py", "executors/dask.py"),
    ("shipped_repositories", "executors/shipping.py", "executors/dask_checks.py"),
    ("WorkerBook", "executors/dask_workers.py", "executors/dask.py"),
    ("content_trees", "executors/dask_checks.py", "executors/dask.py"),
    ("extract", "executors/staging.py", "executors/dask_results.py"),
    ("tls_problem", "executors/tls.py", "executors/__init__.py"),
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
    ("run", "cli/prove.py", "cli/prove_full.py"),
    ("load_plan", "cli/prove_plan.py", "cli/prove.py"),
    ("dry_run", "cli/prove_plan.py", "cli/prove.py"),
    ("answer_from_record", "cli/prove_nochange.py", "cli/prove.py"),
    ("remember", "cli/prove_nochange.py", "cli/prove_full.py"),
    ("prove_full", "cli/prove_full.py", "cli/prove.py"),
    ("answer", "nochange/answer.py", "nochange/signed.py"),
    ("verify_record", "nochange/signed.py", "nochange/answer.py"),
    ("read_record", "nochange/signed.py", "nochange/answer.py"),
    ("Content", "nochange/content.py", "nochange/answer.py"),
    ("lay_out", "nochange/materialize.py", "nochange/answer.py"),
    ("write_run", "nochange/materialize.py", "nochange/answer.py"),
    ("Miss", "nochange/miss.py", "nochange/answer.py"),
    ("content_tree", "identity.py", "gitrepo.py"),
    ("git", "gitrepo.py", "identity.py"),
    ("layout", "gitrepo.py", "identity.py"),
    ("GitLayout", "gitrepo.py", "identity.py"),
    ("top_without", "loose_tree.py", "identity.py"),
    ("commit", "fsio/writes.py", "fsio/durability.py"),
    ("whole_filesystem_sync", "fsio/durability.py", "fsio/writes.py"),
    ("read_regular", "fsio/reads.py", "fsio/writes.py"),
    ("validated_memo", "config/validation_memo.py", "config/schema.py"),
    ("schema_problems", "config/schema.py", "config/validation_memo.py"),
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


@pytest.mark.parametrize("relpath", MODULES)
def test_every_module_stays_small(relpath: str) -> None:
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


def test_the_no_change_package_still_offers_what_callers_import() -> None:
    import importlib

    from changeloop import nochange
    from changeloop.nochange import miss

    # the package's ``answer`` is the function, which hides the module of that name
    assert nochange.answer is importlib.import_module("changeloop.nochange.answer").answer
    assert nochange.EXPLAIN == miss.EXPLAIN == "CHANGELOOP_EXPLAIN_NOCHANGE"


def test_identity_still_offers_the_git_helpers_its_callers_import() -> None:
    from changeloop import gitrepo, identity

    assert identity.git is gitrepo.git
    assert identity.git_env is gitrepo.git_env
    assert identity.layout is gitrepo.layout
    assert identity.GitLayout is gitrepo.GitLayout
    assert identity.GIT_REDIRECTS is gitrepo.GIT_REDIRECTS


def test_callers_still_import_load_plan_from_the_verb() -> None:
    from changeloop.cli import prove, prove_plan

    assert prove.load_plan is prove_plan.load_plan
