"""doctor catches what prove would trip on, without running project code.

Shapes: ufo/ms (pnpm-lock.yaml and `packageManager: pnpm@…`, pnpm possibly not on PATH),
uuid (a build step and `node --test` with dependencies not installed), swup (Playwright
installed but no browser downloaded), and doctor's next steps once `init --write` ran.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from prove_helpers import git, make_change, make_repo

from changeloop.cli.main import main


def _doctor(root: Path, capsys: Any) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["evidence", "doctor", "c1", "--root", str(root), "--json"])
    return code, json.loads(capsys.readouterr().out)


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    root = make_repo(tmp_path / "ws", files)
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    return root


def test_pnpm_lock_install_works_as_printed(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    package = {
        "name": "u",
        "packageManager": "pnpm@10.28.0+sha512.abc",
        "scripts": {"test": "vitest run --typecheck"},
        "devDependencies": {"vitest": "^3.2.4"},
    }
    root = _repo(tmp_path, {"package.json": json.dumps(package), "pnpm-lock.yaml": "x: 1\n"})
    # a PATH with node and npx but no pnpm (the state of a fresh machine)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("node", "npx", "npm", "git"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    code, doc = _doctor(root, capsys)
    assert code == 1
    [finding] = [f for f in doc["findings"] if f["kind"] == "tool-missing"]
    assert finding["playbook_command"] == "npx -y pnpm@10.28.0 install --frozen-lockfile"
    assert "corepack enable" in finding["suggested_action"]
    assert "npm i -g pnpm@10.28.0" in finding["suggested_action"]


def test_node_dependencies_missing_before_a_build(tmp_path: Path, capsys: Any) -> None:
    package = {
        "name": "u",
        "scripts": {"build": "tsc", "pretest": "npm run build", "test": "node --test dist/*.js"},
        "devDependencies": {"typescript": "5.0.0"},
    }
    root = _repo(tmp_path, {"package.json": json.dumps(package), "package-lock.json": "{}"})
    code, doc = _doctor(root, capsys)
    assert code == 1
    found = [f for f in doc["findings"] if f["kind"] == "dependencies-missing"]
    assert len(found) == 1  # build and test need the same install: said once
    assert found[0]["playbook_command"] == "npm ci"
    (root / "node_modules").mkdir()
    code, doc = _doctor(root, capsys)
    assert not [f for f in doc["findings"] if f["kind"] == "dependencies-missing"]


def test_playwright_browsers_missing(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    root = make_repo(
        tmp_path / "ws",
        {
            "package.json": json.dumps({"devDependencies": {"@playwright/test": "1.50.0"}}),
            "playwright.config.ts": "export default {};\n",
            "node_modules/@playwright/test/package.json": '{"version": "1.50.0"}',
            ".gitignore": "node_modules\n",
        },
    )
    make_change(root, "c1", "version: 3\nrequires: [browser]\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    empty = tmp_path / "browsers"
    empty.mkdir()
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(empty))
    code, doc = _doctor(root, capsys)
    assert code == 1
    [finding] = [f for f in doc["findings"] if f["kind"] == "browsers-missing"]
    assert finding["playbook_command"] == "npx playwright install chromium"
    system = shutil.which("chromium") or shutil.which("chromium-browser")
    if system:
        assert "executablePath" in finding["suggested_action"]
    (empty / "chromium-1155").mkdir()
    code, doc = _doctor(root, capsys)
    assert not [f for f in doc["findings"] if f["kind"] == "browsers-missing"]
    # a config that names its own browser needs no download
    (empty / "chromium-1155").rmdir()
    (root / "playwright.config.ts").write_text(
        "export default { use: { launchOptions: { executablePath: '/usr/bin/chromium' } } };\n"
    )
    code, doc = _doctor(root, capsys)
    assert not [f for f in doc["findings"] if f["kind"] == "browsers-missing"]


def test_next_steps_drop_init_once_written(tmp_path: Path, capsys: Any) -> None:
    root = _repo(tmp_path, {"pytest.ini": "[pytest]\n", "tests/test_a.py": "def test_a(): pass\n"})
    capsys.readouterr()
    main(["evidence", "doctor", "c1", "--root", str(root)])
    assert "evidence init c1 --write" in capsys.readouterr().err
    assert main(["evidence", "init", "c1", "--write", "--root", str(root)]) == 0
    capsys.readouterr()
    main(["evidence", "doctor", "c1", "--root", str(root)])
    err = capsys.readouterr().err
    assert "init c1 --write" not in err
    assert "changeloop prove c1" in err


def test_venv_without_pytest_is_one_finding_with_the_extra(tmp_path: Path, capsys: Any) -> None:
    """A repository venv lacking the runner: one pasteable fix naming the test extra."""
    import subprocess
    import sys

    pyproject = '[project]\nname = "x"\nversion = "0"\noptional-dependencies.test = ["pytest"]\n'
    root = _repo(tmp_path, {"pyproject.toml": pyproject, "tests/test_a.py": "def test(): pass\n"})
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    code, doc = _doctor(root, capsys)
    assert code == 1
    found = [f for f in doc["findings"] if f["kind"] in ("tool-missing", "dependencies-missing")]
    python = ".venv/bin/python"  # made without pip (as `uv venv` does): ensurepip first
    assert [f["playbook_command"] for f in found] == [
        f"{python} -m ensurepip -q && {python} -m pip install "
        "--log .venv/changeloop-install.log -e '.[test]'"
    ]
    assert "pytest" in found[0]["message"]
