"""The ``prove`` verb, the no-change answer and content identity stay split by job.

``cli/prove.py``, ``nochange/answer.py`` and ``identity.py`` once held two or
three jobs each in 420-570 lines (docs/ARCHITECTURE.md, "Module map"). A part
growing past the limit again, or a job drifting back into its old module,
fails here; callers keep importing ``load_plan`` from ``changeloop.cli.prove`` and
the git helpers from ``changeloop.identity``.
"""

from __future__ import annotations

import ast

import pytest
from repo_paths import REPO_ROOT

PACKAGE = REPO_ROOT / "changeloop"
LIMIT = 400  # lines: above this a module is split along its jobs

SPLIT = (
    "cli/prove.py",
    "cli/prove_plan.py",
    "cli/prove_nochange.py",
    "cli/prove_full.py",
    "nochange/answer.py",
    "nochange/signed.py",
    "nochange/content.py",
    "nochange/materialize.py",
    "nochange/miss.py",
    "identity.py",
    "gitrepo.py",
    "loose_tree.py",
)

# job -> (the module it lives in, a module it must not live in any more)
HOMES = (
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
