"""A Python project proven from zero, shaped like humanize.

pytest 9's `[tool.pytest]` table with `filterwarnings = error`, a `src/` layout, the
runner in a `tests` extra, `.venv/` in .gitignore. The user's steps: `init --write`
before any venv exists, then doctor's command pasted as printed (it makes the venv),
then prove. changeloop is never installed in that venv: the claim marker reaches the
project's pytest through the injected plugin (a PytestUnknownMarkWarning would be an
error here). Installing a distribution into the venv afterwards re-runs the provider.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from prove_helpers import git, make_change, make_repo, prove_json, provider_entry, receipts_of

from changeloop.cli.main import main

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "minihum"
version = "0.1"
optional-dependencies.tests = ["pytest"]

[tool.pytest]
filterwarnings = ["error"]
testpaths = ["tests"]
"""
TESTS = """\
import pytest
import minihum


@pytest.mark.claim("naturalsize")
def test_size():
    assert minihum.size(2048) == "2.0 kB"


def test_other():
    assert minihum.size(0) == "0 Bytes"
"""
EVIDENCE = """\
    version: 3
    requires: [test]
    claims:
      naturalsize:
        statement: sizes read naturally
        requires: [test]
"""


def _doctor(root: Path, capsys: Any) -> dict[str, Any]:
    capsys.readouterr()
    main(["evidence", "doctor", "c1", "--root", str(root), "--json"])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


@pytest.mark.slow
def test_humanize_shape_from_zero(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)  # the project's venv sees no changeloop
    root = make_repo(
        tmp_path / "ws",
        {
            "pyproject.toml": PYPROJECT,
            ".gitignore": ".venv\n*.egg-info/\n",
            "src/minihum/__init__.py": "def size(n):\n"
            "    return '0 Bytes' if n == 0 else f'{n / 1000:.1f} kB'\n",
            "tests/test_size.py": TESTS,
        },
    )
    make_change(root, "c1", EVIDENCE)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    # detection and init agree: [tool.pytest] is manifest evidence (pytest 9)
    capsys.readouterr()
    assert main(["evidence", "detect", "c1", "--root", str(root), "--json"]) == 0
    [det] = json.loads(capsys.readouterr().out)["repositories"]["self"]
    assert det["adapter"] == "pytest" and det["detection_source"] == "manifest"
    assert main(["evidence", "init", "c1", "--write", "--root", str(root)]) == 0
    execution = yaml.safe_load((root / "openspec/changes/c1/execution.yaml").read_text())
    assert execution["providers"]["test"]["command"][0] == "python"  # not frozen at init
    # doctor asks the interpreter `python` resolves to: minihum is not importable there
    doc = _doctor(root, capsys)
    assert doc["unresolved"] >= 1
    [gap] = [f for f in doc["findings"] if f["kind"] in ("tool-missing", "dependencies-missing")]
    assert "minihum" in gap["message"]
    assert gap["playbook_command"] == (
        "python3 -m venv .venv && .venv/bin/python -m pip install "
        "--log .venv/changeloop-install.log -e '.[tests]'"
    )
    paste = subprocess.run(
        gap["playbook_command"],
        shell=True,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if paste.returncode != 0:
        pytest.skip(f"pip cannot install here: {paste.stderr[-600:]}")
    venv_python = root / ".venv" / "bin" / "python"
    no_cl = subprocess.run(
        [str(venv_python), "-c", "import changeloop"], cwd=root, capture_output=True, check=False
    )
    assert no_cl.returncode != 0  # changeloop is not installed in the project's venv
    after = _doctor(root, capsys)
    assert after["unresolved"] == 0, after
    # prove: the venv is used (resolved when it runs); the ignored .venv is no error
    code, proved = prove_json(root, "c1", capsys=capsys)
    assert code == 0, proved
    test = receipts_of(proved, "test")["test"]
    assert test["tests"] == {"discovered": 2, "passed": 2, "failed": 0, "skipped": 0}
    assert proved["claims"]["naturalsize"]["status"] == "proven"
    code, again = prove_json(root, "c1", capsys=capsys)
    assert code == 0 and provider_entry(again, "test")["state"] == "cached"
    # a distribution installed into the venv changes the environment: the pass re-runs
    site = next((root / ".venv" / "lib").glob("python3*/site-packages"))
    dist = site / "extra_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: extra-plugin\nVersion: 1.0\n")
    code, third = prove_json(root, "c1", capsys=capsys)
    assert code == 0 and provider_entry(third, "test")["state"] == "ran"


def test_explicit_python3_is_never_rewritten(tmp_path: Path, capsys: Any) -> None:
    """A configured interpreter stays as written even when the repository has a venv."""
    root = make_repo(tmp_path / "ws", {"t.py": "import sys\nprint(sys.executable)\n"})
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [check]\n",
        "version: 1\nproviders:\n  check:\n    adapter: command\n"
        "    command: [python3, -c, \"import sys; assert '.venv' not in sys.prefix, sys.prefix\"]\n",
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    code, doc = prove_json(root, "c1", "--sandbox", "none", capsys=capsys)
    assert code == 0, doc
    assert os.path.isdir(root / ".venv")
