"""What a full prove imports when it derives nothing: not the readers it never uses.

Checked in a fresh interpreter (pytest has imported everything already). A change
whose execution.yaml wires every capability, in a workspace with no entryPoints,
needs no manifest or source reader and no runner argv.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from prove_helpers import git, make_change, make_repo

NOT_NEEDED = (
    "tomllib",
    "configparser",
    "changeloop.project.manifests",
    "changeloop.detect.javascript",
    "changeloop.detect.python",
    "changeloop.detect.runner_commands",
    "changeloop.detect.static_analysis",
)

DRIVER = """\
import json, sys
from changeloop.cli.main import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as fh:
    json.dump({"code": code, "modules": sorted(sys.modules)}, fh)
"""


def _modules(tmp_path: Path, evidence: str, execution: str) -> tuple[int, set[str]]:
    root = make_repo(
        tmp_path / "ws",
        {"a.txt": "a\n", "pyproject.toml": "[project]\nname='x'\n", ".gitignore": ".changeloop/\n"},
    )
    make_change(root, "c", evidence, execution)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    out = tmp_path / "modules.json"
    argv = [sys.executable, "-c", DRIVER, str(out), "prove", "c", "--root", str(root)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert out.is_file(), proc.stderr[-2000:]
    found = json.loads(out.read_text())
    return found["code"], set(found["modules"])


def test_a_prove_that_derives_nothing_imports_no_reader_it_does_not_use(tmp_path: Path) -> None:
    execution = 'version: 1\nproviders:\n  a:\n    command: ["true"]\n    capability: ok\n'
    code, modules = _modules(tmp_path, "version: 3\nrequires: [ok]\n", execution)
    assert code == 0
    assert "changeloop.run.engine" in modules  # the full path did run
    assert [name for name in NOT_NEEDED if name in modules] == []


def test_a_prove_that_derives_still_reads_the_manifests(tmp_path: Path) -> None:
    code, modules = _modules(tmp_path, "version: 3\nrequires: [test]\n", "version: 1\n")
    assert "changeloop.project.manifests" in modules and "tomllib" in modules, code


def test_a_plain_command_run_imports_no_report_reader_and_no_grounding(tmp_path: Path) -> None:
    """A ``command`` provider without ``envelope`` reads no runner report and cites nothing:
    the report readers (xml included) and grounding stay unimported on the full path."""
    execution = 'version: 1\nproviders:\n  a:\n    command: ["true"]\n    capability: ok\n'
    code, modules = _modules(tmp_path, "version: 3\nrequires: [ok]\n", execution)
    assert code == 0
    assert "changeloop.providers.command" in modules  # the command did run
    unused = ("changeloop.runner_reports", "changeloop.grounding.citations", "xml.etree")
    assert [name for name in unused if name in modules] == []
