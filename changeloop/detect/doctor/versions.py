"""The runner version doctor reports beside each detection, where the manifests do not pin it.

pytest's version is known only to the interpreter that runs it: doctor asks that
interpreter (the one a provider's command resolves to) for
``importlib.metadata.version("pytest")`` — installed metadata, no project code —
when no lock file, pin or repository virtualenv already said it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import replace

from changeloop.detect.imports import interpreter_of, trusted_interpreter
from changeloop.detect.pyenv import runner_of
from changeloop.detect.types import Detection
from changeloop.model import Provider, Repository

TIMEOUT_S = 30
_ASK = "import importlib.metadata as m; print(m.version('pytest'))"


def pytest_version(repo: Repository, argv: Sequence[str]) -> str | None:
    """The pytest version the interpreter ``argv`` runs has installed, or None."""
    found = interpreter_of(repo.path, argv)
    if found is None or not trusted_interpreter(repo.path, found[1]):
        return None
    try:
        proc = subprocess.run(
            [str(found[1]), "-I", "-c", _ASK],
            cwd=repo.path,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = proc.stdout.strip()
    return version if proc.returncode == 0 and version else None


def with_versions(
    detections: Mapping[str, list[Detection]],
    repositories: Mapping[str, Repository],
    providers: Sequence[Provider],
) -> dict[str, list[Detection]]:
    """``detections`` with pytest's version filled in from the interpreter that runs it."""
    out: dict[str, list[Detection]] = {}
    for name, found in detections.items():
        repo = repositories.get(name)
        filled = []
        for det in found:
            if det.adapter == "pytest" and det.version is None and repo is not None:
                argv = next(
                    (
                        p.command
                        for p in providers
                        if p.command
                        and runner_of(p.command) == "pytest"
                        and p.repository in (name, None)
                    ),
                    ("python", "-m", "pytest"),
                )
                det = replace(det, version=pytest_version(repo, argv))  # noqa: PLW2901
            filled.append(det)
        out[name] = filled
    return out
