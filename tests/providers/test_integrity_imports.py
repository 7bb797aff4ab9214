"""The code proven is the code in the content (docs/bootstrap.md).

A ``src/``-layout package shadowed by a different copy installed in the
interpreter's site-packages: the tests pass against either copy, so only
*where* the package was imported from tells the truth. The interpreter here is
a real virtualenv with pytest installed from the local package index and
without changeloop, so the claim plugin must reach it through ``-p`` and
``PYTHONPATH`` alone.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import make_change, make_repo, prove_json, receipts_of

from changeloop import pytest_plugin
from changeloop.cli.main import main
from changeloop.project.packages import project_packages
from changeloop.providers import pytest_injection

CHANGE = "answer"
PYPROJECT = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "shadowlib"
version = "{version}"

[tool.setuptools.packages.find]
where = ["src"]
"""
TEST = """\
import pytest

from shadowlib import answer


@pytest.mark.claim("answers")
def test_answer():
    assert answer() == 42
"""
EVIDENCE = """\
version: 3
claims:
  answers:
    statement: answer() is 42
    requires: [test]
"""


def _pip(venv: Path, *args: str) -> None:
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"pip cannot install here: {proc.stderr[-800:]}")


@pytest.fixture(scope="module")
def shadowed_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv with pytest and an installed copy of shadowlib (not the repository's)."""
    base = tmp_path_factory.mktemp("venv")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    shadow = base / "shadow"
    (shadow / "src" / "shadowlib").mkdir(parents=True)
    (shadow / "pyproject.toml").write_text(PYPROJECT.format(version="0.9"))
    (shadow / "src" / "shadowlib" / "__init__.py").write_text(
        "def answer():\n    return 42  # an older installed release\n"
    )
    _pip(venv, "pytest", str(shadow))
    return venv


@pytest.mark.slow
@pytest.mark.timeout(900)  # the fix makes a virtualenv and builds the project into it
def test_shadowed_package_is_not_proven_until_installed_editable(
    shadowed_venv: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The project's interpreter must not see this checkout's changeloop either.
    monkeypatch.delenv("PYTHONPATH", raising=False)
    venv = tmp_path / "venv"
    shutil.copytree(shadowed_venv, venv, symlinks=True)
    _fix_scripts(shadowed_venv, venv)
    python = venv / "bin" / "python"
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert (
        subprocess.run(
            [str(python), "-c", "import changeloop"], cwd=tmp_path, capture_output=True, check=False
        ).returncode
        != 0
    )
    root = make_repo(
        tmp_path / "proj",
        {
            "pyproject.toml": PYPROJECT.format(version="1.0"),
            "src/shadowlib/__init__.py": "def answer():\n    return 42\n",
            "tests/test_answer.py": TEST,
            ".gitignore": ".changeloop/\n*.egg-info/\n",
        },
    )
    execution = textwrap.dedent(f"""\
        version: 1
        providers:
          test:
            adapter: test-discovery
            command: ["{python}", -m, pytest, --strict-markers, -p, no:cacheprovider,
                      --junitxml=.changeloop/reports/test.xml]
            report: .changeloop/reports/test.xml
    """)
    make_change(root, CHANGE, EVIDENCE, execution)
    assert project_packages(root) == {"shadowlib": "src/shadowlib"}

    # doctor sees it before anything runs, naming both paths and the fix.
    capsys.readouterr()
    assert main(["evidence", "doctor", CHANGE, "--json", "--root", str(root)]) == 1
    doc = json.loads(capsys.readouterr().out)
    found = [f for f in doc["findings"] if f["kind"] == "imported-from-outside"]
    assert len(found) == 1 and doc["unresolved"] >= 1, doc
    assert str(site / "shadowlib" / "__init__.py") in found[0]["message"]
    assert str(root / "src" / "shadowlib") in found[0]["message"]
    # the fix is the repository's own virtualenv, never the interpreter outside it
    fix = found[0]["playbook_command"]
    assert fix.startswith(
        "python3 -m venv .venv && .venv/bin/python -m pip install "
        "--log .venv/changeloop-install.log -e ."
    )
    assert str(python) not in fix and str(venv) not in fix
    assert "an interpreter outside this repository" in found[0]["suggested_action"]

    # prove: the tests pass against the installed copy, which is not the content.
    code, doc = prove_json(root, CHANGE, capsys=capsys)
    assert code != 0 and doc["status"] != "proven", doc
    test = _predicate(root, receipts_of(doc, "test")["test"])
    assert test["changeloop"]["status"] == "inconclusive"
    assert test["changeloop"]["tests"]["passed"] == 1  # green, and still not proof
    finding = next(
        f for f in test["changeloop"]["findings"] if f["kind"] == "imported-from-outside"
    )
    assert str(site / "shadowlib" / "__init__.py") in finding["message"]
    assert str(root / "src" / "shadowlib") in finding["message"]
    assert "pip install -e" in finding["message"]
    assert test["changeloop"]["claims"]["answers"] == "uncredited"

    # The pasteable fix: an editable install into the repository's own virtualenv, and
    # the provider pointed at it (as the action says); the outside copy stays as it was.
    proc = subprocess.run(
        ["bash", "-c", found[0]["playbook_command"]],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"editable install impossible here: {proc.stderr[-800:]}")
    wiring = root / "openspec" / "changes" / CHANGE / "execution.yaml"
    wiring.write_text(wiring.read_text().replace(f'"{python}"', '".venv/bin/python"'))
    assert (site / "shadowlib" / "__init__.py").is_file()  # never touched
    capsys.readouterr()
    assert main(["evidence", "doctor", CHANGE, "--json", "--root", str(root)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [f for f in doc["findings"] if f["kind"] == "imported-from-outside"] == []
    code, doc = prove_json(root, CHANGE, capsys=capsys)
    test = _predicate(root, receipts_of(doc, "test")["test"])
    assert test["changeloop"]["status"] == "pass", test["changeloop"]["findings"]
    # The claim marker reached a pytest without changeloop installed (-p + PYTHONPATH).
    assert test["changeloop"]["claims"]["answers"] == "credited"
    assert code == 0 and doc["status"] == "proven", doc


def _fix_scripts(old: Path, new: Path) -> None:
    """A copied virtualenv's scripts still name the old interpreter in their shebangs."""
    for script in (new / "bin").iterdir():
        if script.is_file() and not script.is_symlink():
            data = script.read_bytes()
            if data.startswith(b"#!") and str(old).encode() in data:
                script.write_bytes(data.replace(str(old).encode(), str(new).encode()))
    cfg = new / "pyvenv.cfg"
    cfg.write_text(cfg.read_text().replace(str(old), str(new)))


def _predicate(root: Path, entry: dict[str, Any]) -> dict[str, Any]:
    envelope = json.loads((root / entry["path"]).read_text())
    out: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    return out


def test_plugin_and_adapter_agree_on_the_variables() -> None:
    assert pytest_plugin.PACKAGES_ENV == pytest_injection.PACKAGES_ENV
    assert pytest_plugin.IMPORTS_ENV == pytest_injection.IMPORTS_ENV
    assert pytest_injection.PLUGIN_FILE.resolve() == Path(pytest_plugin.__file__).resolve()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["python3", "-m", "pytest", "-q"],
            ["python3", "-m", "pytest", "-p", "changeloop_claims", "-q"],
        ),
        (["pytest"], ["pytest", "-p", "changeloop_claims"]),
        (["uv", "run", "pytest", "-x"], ["uv", "run", "pytest", "-p", "changeloop_claims", "-x"]),
        (["python3", "-m", "unittest", "-v"], ["python3", "-m", "unittest", "-v"]),
        (["tox", "-e", "py"], ["tox", "-e", "py"]),
        (["pytest", "-p", "no:changeloop_claims"], ["pytest", "-p", "no:changeloop_claims"]),
        (["pytest", "-p", "changeloop_claims"], ["pytest", "-p", "changeloop_claims"]),
    ],
)
def test_the_plugin_goes_only_where_pytest_runs_directly(
    tmp_path: Path, argv: list[str], expected: list[str]
) -> None:
    injected = pytest_injection.inject(argv, {"PYTHONPATH": "/x"}, tmp_path, {"pkg": "pkg"})
    assert list(injected.argv) == expected
    if "pytest" in argv and "no:changeloop_claims" not in argv:
        assert injected.imports_dir is not None
        assert injected.env["PYTHONPATH"] == f"{tmp_path / 'pytest-plugin'}:/x"
        assert (tmp_path / "pytest-plugin" / "changeloop_claims.py").is_file()
    else:
        assert injected.imports_dir is None and injected.env == {"PYTHONPATH": "/x"}


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"src/alpha/__init__.py": ""}, {"alpha": "src/alpha"}),
        (
            {"beta/__init__.py": "", "tests/__init__.py": "", "docs/__init__.py": ""},
            {"beta": "beta"},
        ),
        (
            {"pyproject.toml": '[tool.flit.module]\nname = "gamma"\n', "gamma.py": ""},
            {"gamma": "gamma.py"},
        ),
        (
            {
                "pyproject.toml": '[tool.hatch.build.targets.wheel]\npackages = ["lib/delta"]\n',
                "lib/delta/__init__.py": "",
            },
            {"delta": "lib/delta"},
        ),
        (
            {
                "setup.cfg": "[options]\npackages = find:\n[options.packages.find]\nwhere = code\n",
                "pyproject.toml": '[project]\nname = "eps-ilon"\n',
                "code/eps_ilon/__init__.py": "",
            },
            {"eps_ilon": "code/eps_ilon"},
        ),
    ],
)
def test_project_packages_from_layout_and_config(
    tmp_path: Path, files: dict[str, str], expected: dict[str, str]
) -> None:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert project_packages(tmp_path) == expected


def test_inside_rejects_installed_copies_inside_the_repository(tmp_path: Path) -> None:
    own = tmp_path / "src" / "pkg" / "__init__.py"
    vendored = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages" / "pkg" / "x.py"
    assert pytest_injection.inside(str(own), [tmp_path])
    assert not pytest_injection.inside(str(vendored), [tmp_path])
    assert not pytest_injection.inside("/usr/lib/python3/dist-packages/pkg/x.py", [tmp_path])


def test_doctor_checks_a_unittest_project_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """unittest has no plugin, so doctor's find_spec check is what catches it (docs/design.md)."""
    import yaml  # an installed package to be shadowed: changeloop's interpreter has it

    root = tmp_path / "proj"
    (root / "src" / "yaml").mkdir(parents=True)
    (root / "src" / "yaml" / "__init__.py").write_text("VERSION = 'mine'\n")
    (root / "tox.ini").write_text("[testenv]\ncommands = python -m unittest -v\n")
    make_change(
        root,
        CHANGE,
        EVIDENCE,
        f"version: 1\nproviders:\n  test:\n    adapter: command\n"
        f'    command: ["{sys.executable}", -m, unittest, -v]\n',
    )
    capsys.readouterr()
    assert main(["evidence", "doctor", CHANGE, "--json", "--root", str(root)]) == 1
    doc = json.loads(capsys.readouterr().out)
    found = [f for f in doc["findings"] if f["kind"] == "imported-from-outside"]
    assert len(found) == 1, doc
    assert str(Path(yaml.__file__).resolve()) in found[0]["message"]
    assert str(root / "src" / "yaml") in found[0]["message"]
    # never an install into the interpreter outside the repository (changeloop's own here)
    fix = found[0]["playbook_command"]
    assert fix.startswith("python3 -m venv .venv && .venv/bin/python -m pip install --log")
    assert sys.executable not in fix
