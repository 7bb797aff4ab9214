"""The environment that runs a command is part of its fingerprint (docs/design.md).

A cached pass must not hide an environment change: a tool on PATH whose bytes
change, an `npx <tool>` whose package version changes in node_modules, re-run the
provider; nothing changed ⇒ the pass is reused. Paths never enter the part.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from prove_helpers import git, make_change, make_repo, prove_json, provider_entry

from changeloop.fingerprints import environment


def _tool(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _state(doc: dict[str, Any]) -> str:
    state: str = provider_entry(doc, "check")["state"]
    return state


def test_tool_bytes_on_path_rerun_the_provider(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    tools = tmp_path / "bin"
    _tool(tools / "mytool", "exit 0")
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [check]\n",
        "version: 1\nproviders:\n  check:\n    adapter: command\n    command: [mytool]\n",
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    assert _state(prove_json(root, "c1", capsys=capsys)[1]) == "ran"
    assert _state(prove_json(root, "c1", capsys=capsys)[1]) == "cached"
    _tool(tools / "mytool", "echo upgraded; exit 0")  # same path, new bytes
    assert _state(prove_json(root, "c1", capsys=capsys)[1]) == "ran"
    remembered = json.loads((root / ".changeloop" / "executables.json").read_text())
    assert str((tools / "mytool").resolve()) in remembered


def test_npx_tool_version_reruns_the_provider(tmp_path: Path, capsys: Any) -> None:
    root = make_repo(tmp_path / "ws", {".gitignore": "node_modules\n"})
    package = root / "node_modules" / "mytool"
    _tool(package / "cli.sh", "exit 0")
    (package / "package.json").write_text('{"name": "mytool", "version": "1.0.0"}')
    (root / "node_modules" / ".bin").mkdir()
    (root / "node_modules" / ".bin" / "mytool").symlink_to("../mytool/cli.sh")
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [check]\n",
        "version: 1\nproviders:\n  check:\n    adapter: command\n"
        "    command: [npx, --no-install, mytool]\n",
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    part = environment.part(("npx", "--no-install", "mytool"), root, None)
    assert part["tool"] == {"name": "mytool", "version": "1.0.0"}
    assert str(root) not in json.dumps(part)  # portable: digests and versions, no paths
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0, doc
    assert _state(prove_json(root, "c1", capsys=capsys)[1]) == "cached"
    (package / "package.json").write_text('{"name": "mytool", "version": "1.1.0"}')
    assert _state(prove_json(root, "c1", capsys=capsys)[1]) == "ran"


def test_a_damaged_memory_is_rebuilt(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "executables.json").write_text("[not json")
    tool = tmp_path / "t"
    _tool(tool, "exit 0")
    part = environment.part((str(tool),), tmp_path, state)
    assert part["executable"] == environment.sha256_of(tool)
    assert json.loads((state / "executables.json").read_text())[str(tool)][-1] == part["executable"]
