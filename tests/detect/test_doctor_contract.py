"""doctor and prove say where each runner was detected and its version; doctor says when a
citation has no depth and when the Playwright suite lets browser errors pass."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from bootstrap_helpers import CHANGE, cli, workspace
from prove_helpers import git
from repo_paths import EXAMPLES

TESTS = {
    "pyproject.toml": '[project]\nname = "x"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": "",
    "pkg/api.py": "def create_thing(n):\n    return n * 2\n",
    "tests/test_api.py": """
        import pytest

        from pkg.api import create_thing

        pytestmark = pytest.mark.claim("thing")


        @pytest.mark.claim("thing", depth="unit")
        def test_placed():
            assert create_thing(2) == 4


        @pytest.mark.claim("thing")
        def test_unplaced():
            assert create_thing(3) == 6
        """,
}
EXECUTION = """
version: 1
{entry}
providers:
  test:
    adapter: test-discovery
    command: [python3, -m, pytest, -q, --junitxml=.changeloop/r.xml]
    report: .changeloop/r.xml
"""
EVIDENCE = "version: 3\nclaims:\n  thing: {requires: [test]}\n"


def _doctor(capsys: pytest.CaptureFixture[str], root: Path) -> dict[str, Any]:
    _, doc, err = cli(capsys, "evidence", "doctor", CHANGE, "--json", "--root", str(root))
    assert doc is not None, err
    return doc


def _pytest_version() -> str:
    return subprocess.run(
        ["python3", "-c", "import pytest; print(pytest.__version__)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def test_doctor_names_citations_without_depth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path / "a", TESTS, EVIDENCE, EXECUTION.format(entry=""))
    doc = _doctor(capsys, root)
    [missing] = [f for f in doc["findings"] if f["kind"] == "citation-depth-missing"]
    assert missing["severity"] == "warning" and doc["unresolved"] == 0
    assert "tests/test_api.py:5 pytestmark" in missing["message"]
    assert "tests/test_api.py:13 test_unplaced" in missing["message"]
    assert "test_placed" not in missing["message"]
    # once entry points are declared, prove would fail the receipt: an error
    entry = 'repositories:\n  self:\n    entryPoints: ["pkg/api.py::create_*"]'
    root = workspace(tmp_path / "b", TESTS, EVIDENCE, EXECUTION.format(entry=entry))
    doc = _doctor(capsys, root)
    [missing] = [f for f in doc["findings"] if f["kind"] == "citation-depth-missing"]
    assert missing["severity"] == "error" and doc["unresolved"] == 1
    assert "prove fails the test receipt" in missing["message"]


def test_doctor_and_prove_say_where_the_runner_was_detected_and_its_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = dict(TESTS)
    files["tests/test_api.py"] = (
        TESTS["tests/test_api.py"]
        .replace('pytestmark = pytest.mark.claim("thing")', "")
        .replace('@pytest.mark.claim("thing")\n', '@pytest.mark.claim("thing", depth="unit")\n')
    )
    files[".gitignore"] = ".changeloop/\n__pycache__/\n"
    version = _pytest_version()
    # configured wiring
    root = workspace(tmp_path / "configured", files, EVIDENCE, EXECUTION.format(entry=""))
    doc = _doctor(capsys, root)
    assert doc["detections"] == {
        "self": [
            {
                "adapter": "pytest",
                "test_type": "python",
                "detection_source": "configured",
                "version": version,  # asked of the interpreter the command runs
                "evidence": "execution.yaml providers.test",
            }
        ]
    }
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init")
    code, proved, err = cli(capsys, "prove", CHANGE, "--json", "--root", str(root))
    assert code == 0 and proved is not None, err
    [test] = proved["providers"]
    assert test["detection"] == {
        "adapter": "pytest",
        "test_type": "python",
        "detection_source": "configured",
        "version": version,  # what the run saw (the plugin reads pytest.__version__)
        "evidence": "execution.yaml providers.test",
    }
    # derived wiring keeps where the framework was detected (a manifest)
    derived = workspace(tmp_path / "derived", files, EVIDENCE)
    git(derived, "init", "-q", "-b", "main")
    git(derived, "add", "-A")
    git(derived, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init")
    doc = _doctor(capsys, derived)
    [found] = doc["detections"]["self"]
    assert (found["detection_source"], found["version"]) == ("manifest", version)
    code, proved, err = cli(capsys, "prove", CHANGE, "--json", "--root", str(derived))
    assert proved is not None, err
    [test] = [p for p in proved["providers"] if p["adapter"] == "test-discovery"]
    assert test["detection"]["detection_source"] == "manifest"
    assert test["detection"]["version"] == version


def _web(tmp_path: Path) -> Path:
    root = tmp_path / "web"
    shutil.copytree(
        EXAMPLES / "web",
        root,
        ignore=shutil.ignore_patterns("node_modules", ".changeloop", "test-results"),
    )
    (root / "node_modules").symlink_to(EXAMPLES / "web" / "node_modules")
    return root


def test_doctor_asks_for_a_fixture_failing_on_browser_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not (EXAMPLES / "web/node_modules/@playwright/test").is_dir():
        pytest.fail("examples/web needs its node_modules (scripts/test.sh runs npm ci)")
    root = _web(tmp_path)
    _, doc, err = cli(capsys, "evidence", "doctor", "add-greeting", "--json", "--root", str(root))
    assert doc is not None, err
    assert not [f for f in doc["findings"] if f["kind"] == "browser-errors-unchecked"]
    # the specs import test from @playwright/test: nothing fails a page that logs errors
    (root / "tests/fixtures.js").unlink()
    spec = root / "tests/greeting.spec.js"
    spec.write_text(
        spec.read_text().replace('require("./fixtures")', 'require("@playwright/test")')
    )
    _, doc, err = cli(capsys, "evidence", "doctor", "add-greeting", "--json", "--root", str(root))
    assert doc is not None, err
    [finding] = [f for f in doc["findings"] if f["kind"] == "browser-errors-unchecked"]
    assert finding["severity"] == "warning"
    assert "tests/fixtures.js" in finding["suggested_action"]
    command = finding["playbook_command"]
    assert command.startswith("test -e tests/fixtures.js || cat > tests/fixtures.js <<'EOF'")
    # the command writes a fixture that doctor then accepts
    subprocess.run(["sh", "-c", command], cwd=root, check=True)
    assert 'page.on("pageerror"' in (root / "tests/fixtures.js").read_text()
    _, doc, _ = cli(capsys, "evidence", "doctor", "add-greeting", "--json", "--root", str(root))
    assert doc is not None
    assert not [f for f in doc["findings"] if f["kind"] == "browser-errors-unchecked"]
