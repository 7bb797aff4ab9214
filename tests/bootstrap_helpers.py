"""Tiny fixture repositories for detect/derive/init/doctor tests, written as plain files."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from changeloop.cli.main import main

CHANGE = "add-thing"


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def workspace(
    root: Path,
    files: dict[str, str] | None = None,
    evidence: str = "version: 3\nrequires: [test]\n",
    execution: str | None = None,
) -> Path:
    """A workspace with one change (``add-thing``) and the given repository files."""
    change = f"openspec/changes/{CHANGE}"
    all_files = {f"{change}/evidence.yaml": evidence, **(files or {})}
    if execution is not None:
        all_files[f"{change}/execution.yaml"] = execution
    (root / "openspec" / "specs").mkdir(parents=True, exist_ok=True)
    return write(root, all_files)


def venv_with(root: Path, package: str, version: str, at: str = ".venv") -> None:
    """A repository-local virtualenv layout holding ``package`` metadata (nothing runnable)."""
    write(
        root,
        {
            f"{at}/pyvenv.cfg": "home = /usr/bin\n",
            f"{at}/lib/python3.11/site-packages/{package}-{version}.dist-info/METADATA": f"Name: {package}\nVersion: {version}\n",
        },
    )


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any] | None, str]:
    """Run the CLI; returns (exit code, parsed stdout JSON or None, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err
