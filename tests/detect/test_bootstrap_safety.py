"""Bootstrap never touches what is not the repository's, and runs nothing of it.

- interpreter probes run isolated (`-I`) from a folder outside the repository: a
  top-level `json.py` in a cloned repository never runs;
- every word a printed command interpolates is shell-quoted: a change named
  `fix$(touch pwned)` prints lines that, pasted into `sh -c`, create nothing;
- no playbook installs into an interpreter outside the repository: the
  repository's own virtualenv is made and named, even when the machine's Python
  already has the project installed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from bootstrap_helpers import CHANGE, cli, workspace
from prove_helpers import make_change, make_repo

from changeloop.cli.main import main

PWNED = "fix$(touch pwned)"
MARKER = "import pathlib; pathlib.Path(__file__).with_name('RAN').write_text('json.py ran')\n"


def _src_layout(root: Path, package: str = "shadowed") -> Path:
    return workspace(
        root,
        {
            "pyproject.toml": f'[project]\nname = "{package}"\nversion = "0"\n'
            '[project.optional-dependencies]\ntest = ["pytest"]\n'
            '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n',
            f"src/{package}/__init__.py": "VALUE = 1\n",
            "tests/test_it.py": f"import {package}\ndef test_it():\n    assert {package}.VALUE\n",
        },
    )


def test_a_top_level_json_py_never_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _src_layout(tmp_path / "ws")
    (root / "json.py").write_text(MARKER)
    # the trap is real: a probe run as before (`python -c`, cwd the repository) imports it
    subprocess.run([sys.executable, "-c", "import json"], cwd=root, check=True)
    assert (root / "RAN").exists()
    (root / "RAN").unlink()

    cli(capsys, "evidence", "doctor", CHANGE, "--json", "--root", str(root))
    cli(capsys, "evidence", "init", CHANGE, "--json", "--root", str(root))
    assert not (root / "RAN").exists()


def _stub_path(tmp_path: Path) -> str:
    """PATH for pasting: every tool a printed line names is a stub that does nothing,
    so only the shell itself (and `touch`) could act on the line."""
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for tool in ("changeloop", "npm", "npx", "pnpm", "python3", "python", "cargo", "git"):
        (stubs / tool).write_text("#!/bin/sh\nexit 0\n")
        (stubs / tool).chmod(0o755)
    return f"{stubs}:/usr/bin:/bin"


def _paste(line: str, cwd: Path, path: str) -> None:
    subprocess.run(["sh", "-c", line], cwd=cwd, env={"PATH": path}, check=False)


def test_a_change_named_like_shell_runs_nothing_when_its_lines_are_pasted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"package.json": json.dumps({"name": "x"})})
    make_change(root, PWNED, "version: 3\nrequires: [test]\n")
    path = _stub_path(tmp_path)
    # the test can tell: an unquoted line would run the substitution
    _paste(f"echo {PWNED}", tmp_path, path)
    assert (tmp_path / "pwned").exists()
    (tmp_path / "pwned").unlink()

    code, doc, _ = cli(capsys, "evidence", "doctor", PWNED, "--json", "--root", str(root))
    assert code == 1 and doc is not None
    lines = [f["playbook_command"] for f in doc["findings"] if f["playbook_command"]]
    assert any("evidence init" in line for line in lines)
    main(["evidence", "doctor", PWNED, "--root", str(root)])
    main(["evidence", "init", PWNED, "--root", str(root)])
    main(["evidence", "detect", PWNED, "--root", str(root)])
    shown = capsys.readouterr().err
    lines += [
        line.strip()
        for line in shown.splitlines()
        if line.strip().startswith(("changeloop ", "npm ", "run: "))
    ]
    lines = [line.removeprefix("run: ").split("  ")[0] for line in lines]
    assert any(PWNED[:3] in line for line in lines)
    for line in lines:
        _paste(line, tmp_path, path)
        _paste(line, root, path)
    assert not (tmp_path / "pwned").exists() and not (root / "pwned").exists()


def _machine_python(tmp_path: Path, package: str) -> Path:
    """A Python outside the repository (the machine's, as far as the repository can
    tell) with an installed copy of the project and pytest importable."""
    machine = tmp_path / "machine"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(machine)], check=True)
    site = next(machine.glob("lib/python*/site-packages"))
    (site / package).mkdir()
    (site / package / "__init__.py").write_text("VALUE = 1  # the installed copy\n")
    (site / "outer-tools.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return machine


def test_no_playbook_installs_into_an_interpreter_outside_the_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _src_layout(tmp_path / "ws")
    machine = _machine_python(tmp_path, "shadowed")
    monkeypatch.setenv("PATH", f"{machine / 'bin'}{os.pathsep}{os.environ['PATH']}")
    code, doc, _ = cli(capsys, "evidence", "doctor", CHANGE, "--json", "--root", str(root))
    assert code == 1 and doc is not None
    [shadow] = [f for f in doc["findings"] if f["kind"] == "imported-from-outside"]
    command = shadow["playbook_command"]
    assert command.startswith("python3 -m venv .venv && .venv/bin/python -m pip install ")
    assert str(machine) not in command
    assert not re.search(r"(^|[\s;&|(])python3? -m pip", command)  # no bare interpreter
    assert str(root / ".venv" / "bin" / "python") in shadow["suggested_action"]
    for finding in doc["findings"]:
        pasted = finding["playbook_command"] or ""
        assert str(machine) not in pasted and not re.search(r"(^|[\s;&|(])python3? -m pip", pasted)


def test_an_explicit_outside_interpreter_is_fixed_in_the_repositorys_venv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _src_layout(tmp_path / "ws")
    machine = _machine_python(tmp_path, "shadowed")
    monkeypatch.setenv("PATH", f"{machine / 'bin'}{os.pathsep}{os.environ['PATH']}")
    (root / f"openspec/changes/{CHANGE}/execution.yaml").write_text(
        "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n"
        "    command: [python3, -m, pytest, --junitxml=r.xml]\n    report: r.xml\n"
    )
    code, doc, _ = cli(capsys, "evidence", "doctor", CHANGE, "--json", "--root", str(root))
    assert code == 1 and doc is not None
    [shadow] = [f for f in doc["findings"] if f["kind"] == "imported-from-outside"]
    assert shadow["playbook_command"].startswith("python3 -m venv .venv && .venv/bin/python")
    assert "`python3`, an interpreter outside this repository" in shadow["suggested_action"]


@pytest.mark.timeout(900)  # a virtualenv made and the project built into it, as pasted
def test_the_pasted_venv_fix_resolves_it_and_leaves_the_outside_copy_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _src_layout(tmp_path / "ws")
    machine = _machine_python(tmp_path, "shadowed")
    copy = next(machine.glob("lib/python*/site-packages")) / "shadowed" / "__init__.py"
    monkeypatch.setenv("PATH", f"{machine / 'bin'}{os.pathsep}{os.environ['PATH']}")
    _, doc, _ = cli(capsys, "evidence", "doctor", CHANGE, "--json", "--root", str(root))
    assert doc is not None
    [shadow] = [f for f in doc["findings"] if f["kind"] == "imported-from-outside"]
    done = subprocess.run(
        ["sh", "-c", shadow["playbook_command"]],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert copy.read_text() == "VALUE = 1  # the installed copy\n"  # untouched
    code, doc, _ = cli(capsys, "evidence", "doctor", CHANGE, "--json", "--root", str(root))
    assert doc is not None
    assert [f["kind"] for f in doc["findings"]] == [], doc["findings"]
    assert code == 0


BACKEND = """\
import subprocess

def _build(*_args, **_kwargs):
    subprocess.run(["pnpm", "run", "build"], check=True)  # a build hook's own tool
    raise RuntimeError("unreachable")

build_wheel = build_editable = _build
def get_requires_for_build_editable(config_settings=None):
    return []
def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _build()
"""


def test_a_failed_install_is_read_and_never_reoffered_as_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = workspace(
        tmp_path / "ws",
        {
            "pyproject.toml": '[project]\nname = "hooked"\nversion = "0"\n'
            '[project.optional-dependencies]\ntest = ["pytest"]\n'
            '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["_build"]\n',
            "_build/backend.py": BACKEND,
            "package.json": json.dumps({"name": "hooked", "packageManager": "pnpm@9.10.0"}),
            "src/hooked/__init__.py": "",
            "tests/test_h.py": "def test_h():\n    pass\n",
        },
    )
    # a PATH without pnpm (and the test process's own tools after the system's)
    bare = ":".join(p for p in os.environ["PATH"].split(":") if not (Path(p) / "pnpm").exists())
    monkeypatch.setenv("PATH", bare)
    _, doc, _ = cli(capsys, "evidence", "doctor", CHANGE, "--json", "--root", str(root))
    assert doc is not None
    [first] = [f for f in doc["findings"] if "pip install" in (f["playbook_command"] or "")]
    assert "--log .venv/changeloop-install.log" in first["playbook_command"]
    pasted = subprocess.run(
        ["sh", "-c", first["playbook_command"]], cwd=root, capture_output=True, check=False
    )
    assert pasted.returncode != 0  # the build hook ran pnpm, which is not there
    _, doc, _ = cli(capsys, "evidence", "doctor", CHANGE, "--json", "--root", str(root))
    assert doc is not None
    [again] = [f for f in doc["findings"] if f.get("repository") == "self"]
    assert again["playbook_command"] != first["playbook_command"]  # never the same failing line
    assert again["playbook_command"].startswith("npm i -g pnpm@9.10.0 && ")
    pip = first["playbook_command"].split(" && ", 1)[1]  # the venv is there now
    assert again["playbook_command"] == f"npm i -g pnpm@9.10.0 && {pip}"
    assert "pnpm" in again["message"] and "changeloop-install.log" in again["message"]
    assert "`pnpm`, which is not on PATH" in again["suggested_action"]


def test_an_unknown_install_failure_points_at_the_log_and_prints_no_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _src_layout(tmp_path / "ws")
    venv = root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (venv / "changeloop-install.log").write_text(
        "2026-01-01T00:00:00,000 Using pip 24.0 from /x (python 3.11)\n"
        "2026-01-01T00:00:01,000 ERROR: Could not build wheels for shadowed\n"
    )
    _, doc, _ = cli(capsys, "evidence", "doctor", CHANGE, "--json", "--root", str(root))
    assert doc is not None
    [gap] = [f for f in doc["findings"] if f.get("repository") == "self"]
    assert gap["playbook_command"] is None
    assert "changeloop-install.log" in gap["suggested_action"]
    assert "ERROR: Could not build wheels for shadowed" in gap["message"]


def test_words_a_newcomer_reads(tmp_path: Path, capsys: Any) -> None:
    root = workspace(tmp_path, {"README": "nothing here\n"})
    capsys.readouterr()
    main(["evidence", "init", CHANGE, "--root", str(root)])
    init = capsys.readouterr().err
    assert "existing providers kept" not in init
    assert "still unresolved" in init and "test in this repository" in init
    assert "changeloop prove" not in init  # not a next step while `test` is unresolved
    main(["evidence", "doctor", CHANGE, "--root", str(root)])
    main(["evidence", "detect", CHANGE, "--root", str(root)])
    shown = capsys.readouterr().err
    assert not re.search(r"\bself\b", init + shown), init + shown
    assert "this repository" in shown
