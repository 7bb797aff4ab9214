"""Preflight of the repositories: each one a git work tree, every name of one declared."""

from __future__ import annotations

from collections.abc import Iterable

from changeloop.errors import Location, Problem
from changeloop.model import Plan
from changeloop.preflight.locate import Locator
from changeloop.workspace.discovery import git_work_tree_refusal


def repositories(plan: Plan, at: Locator) -> Iterable[Problem]:
    """Missing or refused checkouts, and unknown repository names wherever they are used."""
    for name, checkout in plan.repositories.items():
        where = (
            at.in_evidence("repositories", name)
            if plan.evidence.declared_repositories
            else at.in_evidence()
        )
        if not checkout.path.is_dir():
            yield Problem(
                "missing_repository",
                f"repository {name!r} ({checkout.relpath}) does not exist at {checkout.path}",
                where,
                fix=f"clone it there, or fix the path of {name!r} in evidence.yaml",
            )
        elif (refusal := git_work_tree_refusal(checkout.path)) is not None:
            reason, git_fix = refusal
            if git_fix is not None:  # git refuses a repository it found: say why, as git does
                yield Problem(
                    "git_refused",
                    f"repository {name!r} ({checkout.relpath}): git "
                    f"refuses {checkout.path}: {reason}",
                    where,
                    fix=git_fix,
                )
            else:
                yield Problem(
                    "not_a_git_worktree",
                    f"repository {name!r} ({checkout.relpath}) "
                    f"is not a git work tree: {checkout.path} ({reason})",
                    where,
                    fix=f"run `git init` in {checkout.path}, or point {name!r} at a checkout",
                )
    known = sorted(plan.repositories)

    def unknown(
        repo: str, where: Location | None, what: str, providers: tuple[str, ...] = ()
    ) -> Problem:
        return Problem(
            "unknown_repository",
            f"{what} names unknown repository {repo!r} (repositories: {', '.join(known)})",
            where,
            fix="use one of the repositories evidence.yaml declares",
            providers=providers,
        )

    for capability, repos in plan.evidence.requires.items():
        for i, repo in enumerate(repos or ()):
            if repo not in plan.repositories:
                yield unknown(
                    repo, at.in_evidence("requires", capability, i), f"requires.{capability}"
                )
    for claim in plan.evidence.claims.values():
        if claim.repository is not None and claim.repository not in plan.repositories:
            yield unknown(
                claim.repository,
                at.in_evidence("claims", claim.id, "repository"),
                f"claim {claim.id!r}",
            )
    for repo in plan.execution.setup if plan.execution else {}:
        if repo not in plan.repositories:
            yield unknown(
                repo, at.in_execution("repositories", repo, key=True), "execution.yaml repositories"
            )
    for service in plan.services.values():
        if service.repository is None:
            yield Problem(
                "service_without_repository",
                f"service {service.name!r} names no "
                f"repository and there are several ({', '.join(known)})",
                at.service(service),
                fix="add `repository: <name>` to the service",
            )
        elif service.repository not in plan.repositories:
            yield unknown(
                service.repository, at.service(service, "repository"), f"service {service.name!r}"
            )
