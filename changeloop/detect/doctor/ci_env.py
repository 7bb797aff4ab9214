"""Doctor's word on a variable the project's CI sets that no provider here gets.

A provider runs with the fixed set (``PATH``, ``HOME``, ``USER``, ``LANG``,
``LC_*``, ``TZ``, ``TMPDIR``, ``TERM``, ``CI``) and what its wiring names. A
variable CI sets for its jobs (a workflow's ``env:`` at the top, per job or per
step, or GitLab's ``variables:``) may be one the checks need; doctor names each
one the wiring does not pass, with the key that passes it (``envFrom`` for a
value CI takes from its secrets). Informational: doctor cannot know whether a
check reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from changeloop.config.yamlio import load_yaml
from changeloop.detect.doctor.finding import DoctorFinding
from changeloop.detect.playbook import FileEdit, change_file
from changeloop.detect.types import ChangeContext
from changeloop.errors import ConfigError
from changeloop.model import Provider
from changeloop.passenv import passes

__all__ = ["ci_env_findings"]

LIMIT = 1024 * 1024  # a workflow file read at most


def ci_env_findings(
    ctx: ChangeContext, providers: Iterable[Provider], cdir: str
) -> list[DoctorFinding]:
    """One ``env-not-passed`` finding per variable CI sets that no provider gets."""
    providers = list(providers)
    patterns = tuple(sorted({g for p in providers for g in p.pass_env}))
    named = {n for p in providers for n in (*p.env, *p.env_from)}
    seen: dict[str, tuple[str, bool]] = {}
    for folder in dict.fromkeys([ctx.root, *(r.path for r in ctx.repositories.values())]):
        for where, name, secret in _ci_variables(folder):
            seen.setdefault(name, (where, secret))
    out = []
    for name, (where, secret) in sorted(seen.items()):
        if name in named or passes(name, patterns):
            continue
        key = "envFrom" if secret else "passEnv"
        out.append(
            DoctorFinding(
                "env-not-passed",
                f"CI sets {name} ({where}), but no provider here gets it: a provider runs "
                "with PATH, HOME, USER, LANG, LC_*, TZ, TMPDIR, TERM and CI, plus what its "
                "env, envFrom and passEnv name — so a local proof runs without it",
                f"if a check reads it, add `{key}: [{name}]` to that provider (its value "
                "then counts in the fingerprint"
                + (", as an HMAC: CI takes it from its secrets)" if secret else ")"),
                None,
                severity="info",
                # the key to merge under the provider whose check reads it
                edit=FileEdit(change_file(cdir, "execution.yaml"), f"{key}: [{name}]\n"),
            )
        )
    return out


def _ci_variables(folder: Path) -> list[tuple[str, str, bool]]:
    """(where, name, from a secret) for each variable CI configuration in ``folder`` sets."""
    out: list[tuple[str, str, bool]] = []
    workflows = folder / ".github" / "workflows"
    try:
        files = sorted([*workflows.glob("*.yml"), *workflows.glob("*.yaml")])
    except OSError:
        files = []
    for path in files:
        doc = _load(path)
        if not isinstance(doc, Mapping):
            continue
        label = f".github/workflows/{path.name}"
        out += _env(doc.get("env"), label)
        jobs = doc.get("jobs")
        for job_name, job in jobs.items() if isinstance(jobs, Mapping) else ():
            if not isinstance(job, Mapping):
                continue
            out += _env(job.get("env"), f"{label} jobs.{job_name}")
            steps = job.get("steps")
            for step in steps if isinstance(steps, list) else ():
                if isinstance(step, Mapping):
                    out += _env(step.get("env"), f"{label} jobs.{job_name}")
    gitlab = _load(folder / ".gitlab-ci.yml")
    if isinstance(gitlab, Mapping):
        out += _env(gitlab.get("variables"), ".gitlab-ci.yml variables")
    return out


def _env(block: Any, where: str) -> list[tuple[str, str, bool]]:
    if not isinstance(block, Mapping):
        return []
    return [
        (where, str(name), "secrets." in str(value))
        for name, value in block.items()
        if isinstance(name, str) and name
    ]


def _load(path: Path) -> Any:
    """The file's data, read with the project's own YAML reader (bounded, no alias bombs);
    None for anything that is not a readable YAML file."""
    try:
        if not path.is_file() or path.stat().st_size > LIMIT:
            return None
        return load_yaml(path).data
    except (OSError, ConfigError, RecursionError):
        return None
