"""Build small real workspaces (git repositories with an OpenSpec change) for prove tests."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import repo_helpers

from changeloop.cli.main import main


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def make_repo(path: Path, files: dict[str, str] | None = None, commit: bool = True) -> Path:
    """``repo_helpers.make_repo`` with each file's text dedented."""
    texts = {name: textwrap.dedent(text) for name, text in (files or {}).items()}
    return repo_helpers.make_repo(path, texts, commit=commit)


def make_change(root: Path, change: str, evidence: str, execution: str | None = None) -> Path:
    directory = root / "openspec" / "changes" / change
    directory.mkdir(parents=True, exist_ok=True)
    (root / "openspec" / "specs").mkdir(parents=True, exist_ok=True)
    (directory / "evidence.yaml").write_text(textwrap.dedent(evidence), encoding="utf-8")
    if execution is not None:
        (directory / "execution.yaml").write_text(textwrap.dedent(execution), encoding="utf-8")
    return directory


def inputs_change(root: Path, change: str, providers: dict[str, list[str]]) -> None:
    """A committed change whose ``command`` providers each pass and read ``inputs`` globs."""
    lines = ["version: 1", "providers:"]
    for name, globs in providers.items():
        lines += [
            f"  {name}:",
            "    adapter: command",
            '    command: [sh, -c, "exit 0"]',
            f"    inputs: {json.dumps(globs)}",
        ]
    make_change(root, change, f"version: 3\nrequires: [{', '.join(providers)}]\n", "\n".join(lines))
    repo_helpers.commit_all(root, "change")


def prove_json(root: Path, change: str, *extra: str, capsys: Any) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["prove", change, "--root", str(root), "--json", *extra])
    out = capsys.readouterr().out
    return code, json.loads(out)


def receipts_of(doc: dict[str, Any], provider: str) -> dict[str, dict[str, Any]]:
    for entry in doc["providers"]:
        if entry["name"] == provider:
            return {r["capability"]: r for r in entry["receipts"]}
    raise AssertionError(f"no provider {provider} in {doc['providers']}")


def provider_entry(doc: dict[str, Any], provider: str) -> dict[str, Any]:
    for entry in doc["providers"]:
        if entry["name"] == provider:
            found: dict[str, Any] = entry
            return found
    raise AssertionError(f"no provider {provider}")
