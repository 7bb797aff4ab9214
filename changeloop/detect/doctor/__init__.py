"""``evidence doctor``: explain everything that would keep a change from being proven.

Example::

    findings = diagnose(ctx, derived)     # [DoctorFinding], missing adapters first
    next_steps(ctx, findings)             # the commands to paste next

Findings share one shape ``{kind, message, suggested_action, playbook_command}``
(plus ``severity``, ``repository``, ``capability`` where they apply;
:mod:`~changeloop.detect.doctor.finding`). Only ``severity: error`` findings count
as unresolved; ``no-tests-declared`` is informational (docs/bootstrap.md). Doctor reads
files and checks PATH; the only thing it runs is a test command's own interpreter
(never a script of the repository's), asking ``find_spec`` where the project's
packages would come from — no project code is imported (``detect/imports.py``).

Per provider, in order: its wiring (:mod:`~changeloop.detect.doctor.wiring`), the
tools its command starts (:mod:`~changeloop.detect.doctor.tools`, with
:mod:`~changeloop.detect.doctor.node` and :mod:`~changeloop.detect.doctor.browsers`),
a test command's interpreter (:mod:`~changeloop.detect.doctor.interpreter`), and
for a derived provider the framework configuration it would not honour
(:mod:`~changeloop.detect.doctor.config`).
Per repository, submodules that are not checked out
(:mod:`~changeloop.detect.doctor.submodules`). Per claim, whether any test cites it
(:mod:`~changeloop.detect.doctor.citations`).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from changeloop.detect.coverage import effective, test_capabilities_declared, unresolved
from changeloop.detect.derive import required
from changeloop.detect.doctor.ci_env import ci_env_findings
from changeloop.detect.doctor.citations import citation_findings
from changeloop.detect.doctor.config import config_findings
from changeloop.detect.doctor.contracts import contract_findings
from changeloop.detect.doctor.depths import depth_findings
from changeloop.detect.doctor.finding import (
    DoctorFinding,
    FileEdit,
    change_file,
    unique,
)
from changeloop.detect.doctor.interpreter import interpreter_findings
from changeloop.detect.doctor.quality import quality_findings
from changeloop.detect.doctor.submodules import submodule_findings
from changeloop.detect.doctor.tools import tool_findings
from changeloop.detect.doctor.wiring import wiring_findings
from changeloop.detect.imports import runs_tests
from changeloop.detect.playbook import change_dir, init_command, suggest
from changeloop.detect.types import ChangeContext
from changeloop.model import Provider, Repository
from changeloop.preflight.capabilities import typo_of
from changeloop.text import repository_words

__all__ = ["DoctorFinding", "diagnose", "next_steps"]


def diagnose(ctx: ChangeContext, derived: Mapping[str, Provider]) -> list[DoctorFinding]:
    """Every finding for the change, missing adapters first."""
    configured = dict(ctx.execution.providers) if ctx.execution else {}
    providers = effective(configured, derived)
    needs = required(ctx.evidence, ctx.repositories)
    cdir = change_dir(ctx.root, ctx.change.path)
    findings: list[DoctorFinding] = []
    for capability, repo_name in unresolved(needs, ctx.repositories, providers.values()):
        repo = ctx.repositories.get(repo_name)
        if repo is None or typo_of(capability) is not None:
            # an unknown repository name is a config error the loader reports; a typo of a
            # known capability is preflight's refusal (unknown_capability), said once
            continue
        hint = suggest(
            capability,
            repo,
            ctx.change.id,
            cdir,
            has_execution=ctx.execution is not None,
            lone=len(ctx.repositories) == 1,
        )
        findings.append(
            DoctorFinding(
                "missing-adapter",
                f"'{capability}' is required in {repository_words(repo_name)} but no provider "
                "(configured or derived) produces it",
                hint.action,
                hint.command,
                repository=repo_name,
                capability=capability,
                edit=hint.edit,
            )
        )
    if not test_capabilities_declared(ctx.evidence):
        findings.append(
            DoctorFinding(
                "no-tests-declared",
                "the change requires no test capability (test, discovery, browser); "
                "nothing here will run a test suite",
                "add `requires: [test]` to evidence.yaml if tests should prove this change "
                "(the text below)",
                None,
                severity="info",
                edit=FileEdit(change_file(cdir, "evidence.yaml"), "requires: [test]\n"),
            )
        )
    for provider in providers.values():
        findings.extend(_provider_findings(ctx, provider, cdir))
    findings.extend(citation_findings(ctx, providers, cdir))
    findings = unique(findings)
    findings.extend(submodule_findings(ctx.repositories.values()))
    entry_points = ctx.execution.entry_points if ctx.execution else {}
    for name, repo in ctx.repositories.items():
        findings.extend(depth_findings(repo, bool(entry_points.get(name))))
    findings.extend(quality_findings(ctx))
    findings.extend(contract_findings(ctx))
    findings.extend(ci_env_findings(ctx, providers.values(), cdir))
    return findings


def _provider_findings(ctx: ChangeContext, provider: Provider, cdir: str) -> list[DoctorFinding]:
    out = wiring_findings(provider, cdir)
    repo = _repo_of(ctx, provider)
    if repo is None or not provider.command:
        return out
    out.extend(tool_findings(provider, repo))
    if provider.adapter == "test-discovery" or runs_tests(provider.command or ()):
        out.extend(interpreter_findings(provider, repo))
    if provider.origin == "derived":
        out.extend(config_findings(provider, repo, cdir))
    return out


def _repo_of(ctx: ChangeContext, provider: Provider) -> Repository | None:
    """The provider's repository; an unnamed one only where the change has a single one."""
    if provider.repository is not None:
        return ctx.repositories.get(provider.repository)
    return next(iter(ctx.repositories.values())) if len(ctx.repositories) == 1 else None


def next_steps(
    ctx: ChangeContext, findings: list[DoctorFinding], *, init_pending: bool = True
) -> list[str]:
    """Commands to run next; ``init --write`` only while it would still write something."""
    errors = [f for f in findings if f.severity == "error" and f.playbook_command]
    prove = f"changeloop prove {shlex.quote(ctx.change.id)}"
    if errors:  # the fixes, then the proof they lead to (never back to doctor: no loop)
        return [*dict.fromkeys(f.playbook_command for f in errors if f.playbook_command), prove]
    return [init_command(ctx.change.id), prove] if init_pending else [prove]
