"""From an empty directory to PROVEN, pasting only what changeloop says (README "Your first change").

A person with a pytest project and a person with a vitest project each make an
OpenSpec change the way the README says (without the OpenSpec CLI: two folders
and ``evidence.yaml``), then run ``changeloop evidence doctor`` and do only what
the tool tells them: each command of its "Next steps" is run as printed, and
each ``${EDITOR:-vi} FILE`` step applies the snippet doctor's finding gave for
that file (a human editor's job, done here by a small literal editor). No step
comes from anywhere else. The run ends PROVEN, and the board's next steps
(``gate``, ``report``) succeed as printed. Before this, the first proof looped:
prove said nothing cites the claim, doctor said "0 unresolved".

Real processes throughout: the console script, pytest, and vitest installed
from the npm registry by the command doctor prints.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
MAX_ROUNDS = 6  # doctor → fix → prove never needs more; a loop fails here instead


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHANGELOOP_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # this venv: changeloop, pytest
    env.pop("NO_COLOR", None)
    return env


def _sh(cwd: Path, line: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", line],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )


def _steps(err: str) -> list[str]:
    block = err.rsplit("Next steps:\n", 1)[1]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def _findings(err: str) -> dict[str, list[str]]:
    """kind -> the text of doctor's findings of that kind (message, do:, run: lines)."""
    out: dict[str, list[str]] = {}
    for block in re.split(r"\n(?=\[)", err.split("\n\n", maxsplit=1)[0]):
        kind = re.match(r"\[([a-z-]+)\]", block)
        if kind:
            out.setdefault(kind.group(1), []).append(block)
    return out


def _edit(project: Path, file: str, findings: dict[str, list[str]]) -> None:
    """What a person does in their editor with doctor's snippet for ``file``."""
    path = project / file
    text = path.read_text()
    cited = [f for f in findings.get("claim-not-cited", []) if f"run: ${{EDITOR:-vi}} {file}" in f]
    for finding in cited:
        marker = re.search(r"(@pytest\.mark\.claim\(\"[^\"]+\"\)) above the test function", finding)
        tag = re.search(r"test\(\"what it checks (\[claim:[^\]]+\])\"", finding)
        if marker:  # the decorator, above the first test function
            text = re.sub(r"^def test_", f"{marker.group(1)}\ndef test_", text, count=1, flags=re.M)
            if "import pytest" not in text:
                text = "import pytest\n" + text
        elif tag:  # the tag, in the first test's name
            text = re.sub(r'test\("([^"]*)"', rf'test("\1 {tag.group(1)}"', text, count=1)
        else:
            raise AssertionError(f"no snippet to apply in {finding!r}")
    for finding in findings.get("claim-marker-unregistered", []):
        if f"run: ${{EDITOR:-vi}} {file}" not in finding:
            continue
        line = re.search(r"^\s*(markers = .*)$", finding, re.M)
        assert line, finding
        text = text.replace(
            "[tool.pytest.ini_options]\n", f"[tool.pytest.ini_options]\n{line.group(1)}\n"
        )
    path.write_text(text)


def _follow(project: Path, change: str) -> str:
    """doctor, then every step it and prove print, until PROVEN; the last board."""
    done = _sh(project, f"changeloop evidence doctor {change}")
    for _ in range(MAX_ROUNDS):
        findings = _findings(done.stderr)
        ran_prove = None
        for step in _steps(done.stderr):
            edit = re.fullmatch(r"\$\{EDITOR:-vi\} (\S+)", step)
            if edit:
                _edit(project, edit.group(1), findings)
                # a finding that names another file for the same fix (the marker) is done too
                for other in findings.get("claim-marker-unregistered", []):
                    again = re.search(r"run: \$\{EDITOR:-vi\} (\S+)", other)
                    if again and again.group(1) != edit.group(1):
                        _edit(project, again.group(1), findings)
                continue
            result = _sh(project, step)
            if step.startswith(f"changeloop prove {change}"):
                ran_prove = result
            else:
                assert result.returncode == 0, (step, result.stdout, result.stderr)
        if ran_prove is not None and ran_prove.returncode == 0:
            return ran_prove.stderr
        done = (
            ran_prove
            if ran_prove is not None
            else _sh(project, f"changeloop evidence doctor {change}")
        )
    raise AssertionError(
        f"no proof after {MAX_ROUNDS} rounds of doing what changeloop said:\n{done.stderr}"
    )


def _change(project: Path, change: str, claim: str, statement: str) -> None:
    """README, without the OpenSpec CLI: two folders and evidence.yaml."""
    folder = project / "openspec" / "changes" / change
    folder.mkdir(parents=True)
    (project / "openspec" / "specs").mkdir()
    (folder / "evidence.yaml").write_text(
        f"version: 3\nclaims:\n  {claim}:\n    statement: {statement}\n    requires: [test]\n"
    )


def _git(project: Path) -> None:
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "mine"]):
        subprocess.run(["git", *argv], cwd=project, check=True, env=_env())


def _after_proven(project: Path, change: str, board: str) -> None:
    assert f"change {change}: PROVEN" in board
    steps = _steps(board)
    assert steps == [f"changeloop gate {change}", f"changeloop report {change}"], steps
    for step in steps:
        done = _sh(project, step)
        assert done.returncode == 0, (step, done.stderr)
    page = project / ".changeloop" / "report" / f"{change}.html"
    assert page.absolute().as_uri() in done.stderr  # the report, as a link to click
    assert "Verdict: PROVEN" in page.read_text()


def test_a_pytest_project_reaches_proven_by_doing_what_changeloop_says(tmp_path: Path) -> None:
    project = tmp_path / "greeter"
    (project / "tests").mkdir(parents=True)
    (project / "greet.py").write_text('def greet(name):\n    return f"Hello, {name.strip()}!"\n')
    (project / "tests" / "test_greet.py").write_text(
        "from greet import greet\n\n\ndef test_greets_by_trimmed_name():\n"
        '    assert greet(" Ann ") == "Hello, Ann!"\n'
    )
    # --strict-markers: a plain `pytest` refuses a marker it does not know
    (project / "pyproject.toml").write_text(
        '[project]\nname = "greeter"\nversion = "0.1.0"\n\n[tool.pytest.ini_options]\n'
        'addopts = "--strict-markers"\npythonpath = ["."]\n'
    )
    (project / ".gitignore").write_text("__pycache__/\n")
    _git(project)
    _change(project, "add-greeting", "greeting", "A person is greeted by their trimmed name.")
    board = _follow(project, "add-greeting")
    _after_proven(project, "add-greeting", board)
    plain = _sh(project, "python -m pytest -q -p no:cacheprovider")  # without changeloop
    assert plain.returncode == 0, plain.stdout + plain.stderr


@pytest.mark.skipif(shutil.which("npm") is None, reason="needs Node.js and npm")
def test_a_vitest_project_reaches_proven_by_doing_what_changeloop_says(tmp_path: Path) -> None:
    project = tmp_path / "slugs"
    (project / "src").mkdir(parents=True)
    (project / "package.json").write_text(
        '{\n  "name": "slugs",\n  "private": true,\n  "type": "module",\n'
        '  "scripts": {"test": "vitest run"},\n  "devDependencies": {"vitest": "^3.2.4"}\n}\n'
    )
    (project / "src" / "slug.js").write_text(
        "export function slug(title) {\n"
        '  return title.trim().toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");\n'
        "}\n"
    )
    (project / "src" / "slug.test.js").write_text(
        'import { expect, test } from "vitest";\nimport { slug } from "./slug.js";\n\n'
        'test("lowercases and joins words with dashes", () => {\n'
        '  expect(slug("  Hello, World! ")).toBe("hello-world");\n});\n'
    )
    (project / ".gitignore").write_text("node_modules/\n")
    _git(project)
    _change(project, "add-slug", "slug", "A title becomes a lowercase, dash-joined slug.")
    board = _follow(project, "add-slug")
    _after_proven(project, "add-slug", board)
