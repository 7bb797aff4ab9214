"""Inputs outside the content identity: files under openspec/, links into it or to ignored
files, ignored files named by ``inputs``, dependency folders.

Each test: ``prove`` passes → the input is changed so the check fails (and committed
where git can hold it) → gate, the no-change answer and a cached ``prove`` say what
``prove --no-cache`` says.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from closure_helpers import answers, cli, prove, state_of
from prove_helpers import make_change, make_repo
from repo_helpers import commit_all

EVIDENCE = "version: 3\nrequires: [check]\n"


def _workspace(tmp_path: Path, files: dict[str, str], execution: str) -> Path:
    root = make_repo(tmp_path / "ws", {".gitignore": ".changeloop/\n", **files})
    make_change(root, "c", EVIDENCE, execution)
    commit_all(root, "change")
    return root


def test_a_script_under_openspec_is_bound(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path,
        {"README": "x\n"},
        "version: 1\nproviders:\n  check:\n    command: [sh, openspec/changes/c/check.sh]\n",
    )
    script = root / "openspec/changes/c/check.sh"
    script.write_text("exit 0\n")
    commit_all(root, "script")
    assert prove(root, "c")[0] == 0
    script.write_text("exit 1\n")
    commit_all(root, "break the script")
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_test_data_under_the_change_folder_is_bound(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path,
        {"check.sh": 'grep -q "^ok$" openspec/changes/c/data/expected.txt\n'},
        "version: 1\nproviders:\n  check:\n    command: [sh, check.sh]\n",
    )
    data = root / "openspec/changes/c/data/expected.txt"
    data.parent.mkdir(parents=True)
    data.write_text("ok\n")
    commit_all(root, "data")
    assert prove(root, "c")[0] == 0
    data.write_text("broken\n")
    commit_all(root, "break the data")
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_an_ignored_file_under_openspec_is_bound_and_caches_are_not(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path,
        {
            ".gitignore": ".changeloop/\nopenspec/changes/c/local/\n__pycache__/\n",
            "check.sh": 'grep -q "^ok$" openspec/changes/c/local/flag\n',
        },
        "version: 1\nproviders:\n  check:\n    command: [sh, check.sh]\n",
    )
    flag = root / "openspec/changes/c/local/flag"
    flag.parent.mkdir()
    flag.write_text("ok\n")
    assert prove(root, "c")[0] == 0
    cache = root / "openspec/changes/c/__pycache__/x.cpython-311.pyc"
    cache.parent.mkdir()
    cache.write_bytes(b"\0")
    code, doc = prove(root, "c")
    assert code == 0 and state_of(doc, "check") == "cached"
    flag.write_text("broken\n")
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_markdown_and_receipts_under_openspec_change_nothing(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path,
        {"check.sh": "exit 0\n"},
        "version: 1\nproviders:\n  check:\n    command: [sh, check.sh]\n",
    )
    assert prove(root, "c")[0] == 0
    change = root / "openspec/changes/c"
    (change / "proposal.md").write_text("# why\n")
    (change / "receipts").mkdir()
    (change / "receipts" / "ci.json").write_text("{}\n")
    (root / "openspec/specs/greeting.md").write_text("# spec\n")
    commit_all(root, "docs")
    code, doc = prove(root, "c")
    assert code == 0 and state_of(doc, "check") == "cached"


def test_a_link_into_openspec_opens_the_identity(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path,
        {"check.sh": 'grep -q "^ok$" data.txt\n'},
        "version: 1\nproviders:\n  check:\n    command: [sh, check.sh]\n",
    )
    target = root / "openspec/changes/c/data.txt"
    target.write_text("ok\n")
    os.symlink("openspec/changes/c/data.txt", root / "data.txt")
    commit_all(root, "link")
    code, doc = prove(root, "c")
    assert code == 0
    findings = _findings(root, doc, "check")
    assert [f["kind"] for f in findings] == ["external-symlink"]
    assert "openspec/changes/c/data.txt" in findings[0]["message"]
    code, again = prove(root, "c")
    assert state_of(again, "check") == "ran"  # never reused
    target.write_text("broken\n")
    commit_all(root, "break the target")
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_a_link_to_an_ignored_file_opens_the_identity(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path,
        {".gitignore": ".changeloop/\nlocal/\n", "check.sh": 'grep -q "^ok$" cfg.txt\n'},
        "version: 1\nproviders:\n  check:\n    command: [sh, check.sh]\n",
    )
    (root / "local").mkdir()
    (root / "local" / "cfg.txt").write_text("ok\n")
    os.symlink("local/cfg.txt", root / "cfg.txt")
    commit_all(root, "link")
    code, doc = prove(root, "c")
    assert code == 0
    findings = _findings(root, doc, "check")
    assert [f["kind"] for f in findings] == ["external-symlink"]
    assert "local/cfg.txt" in findings[0]["message"] and "ignored" in findings[0]["message"]
    (root / "local" / "cfg.txt").write_text("broken\n")
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_inputs_may_name_an_ignored_file(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path,
        {".gitignore": ".changeloop/\nbuild/\n", "check.sh": 'grep -q "^ok$" build/flag\n'},
        "version: 1\nproviders:\n  check:\n    command: [sh, check.sh]\n"
        "    inputs: [check.sh, build/flag]\n",
    )
    (root / "build").mkdir()
    (root / "build" / "flag").write_text("ok\n")
    assert prove(root, "c")[0] == 0
    (root / "build" / "flag").write_text("broken\n")
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_an_ignored_file_not_named_by_inputs_stays_unbound(tmp_path: Path) -> None:
    """Ignored files are not content: only ``inputs`` (or a dependency record) binds one."""
    root = _workspace(
        tmp_path,
        {".gitignore": ".changeloop/\nbuild/\n", "check.sh": "exit 0\n"},
        "version: 1\nproviders:\n  check:\n    command: [sh, check.sh]\n",
    )
    (root / "build").mkdir()
    (root / "build" / "scratch").write_text("1\n")
    assert prove(root, "c")[0] == 0
    (root / "build" / "scratch").write_text("2\n")
    code, doc = prove(root, "c")
    assert code == 0 and state_of(doc, "check") == "cached"


def _npm_workspace(tmp_path: Path) -> Path:
    root = _workspace(
        tmp_path,
        {
            ".gitignore": ".changeloop/\nnode_modules/\n",
            "package.json": json.dumps({"name": "app", "version": "1.0.0", "private": True}),
            "check.js": "const v = require('dep/package.json').version;\n"
            "process.exit(v === '1.0.0' ? 0 : 1);\n",
        },
        "version: 1\nproviders:\n  check:\n    command: [node, check.js]\n",
    )
    for version in ("1.0.0", "2.0.0"):
        pkg = tmp_path / f"dep-{version}"
        pkg.mkdir()
        (pkg / "package.json").write_text(json.dumps({"name": "dep", "version": version}))
        (pkg / "index.js").write_text("module.exports = 1;\n")
    return root


@pytest.mark.slow
def test_installing_another_npm_version_re_runs(tmp_path: Path) -> None:
    import shutil
    import subprocess

    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed")
    root = _npm_workspace(tmp_path)

    def install(version: str) -> None:
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--offline", "--install-links",
             "--no-save", str(tmp_path / f"dep-{version}")],
            cwd=root, check=True, capture_output=True,
        )  # fmt: skip

    install("1.0.0")
    assert (root / "node_modules" / ".package-lock.json").is_file()
    assert prove(root, "c")[0] == 0
    install("2.0.0")
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


@pytest.mark.parametrize(
    ("record", "before", "after"),
    [
        ("node_modules/.modules.yaml", "dep: 1.0.0\n", "dep: 2.0.0\n"),
        ("node_modules/.pnpm/lock.yaml", "dep: 1.0.0\n", "dep: 2.0.0\n"),
        ("node_modules/.yarn-state.yml", "dep@1.0.0\n", "dep@2.0.0\n"),
        ("node_modules/.yarn-integrity", '{"dep": "1.0.0"}\n', '{"dep": "2.0.0"}\n'),
        ("Cargo.lock", 'version = "1.0.0"\n', 'version = "2.0.0"\n'),
    ],
)
def test_another_package_manager_install_re_runs(
    tmp_path: Path, record: str, before: str, after: str
) -> None:
    """pnpm, yarn and cargo: the manager rewrites its record when it installs another
    version; the ignored files the check reads change with it and nothing git holds does."""
    root = _workspace(
        tmp_path,
        {
            ".gitignore": ".changeloop/\nnode_modules/\nvendor/\nCargo.lock\n",
            "check.sh": "grep -q '^1$' vendor/dep/v.txt\n",
        },
        "version: 1\nproviders:\n  check:\n    command: [sh, check.sh]\n",
    )

    def install(version: str, text: str) -> None:
        (root / record).parent.mkdir(parents=True, exist_ok=True)
        (root / record).write_text(text)
        (root / "vendor/dep").mkdir(parents=True, exist_ok=True)
        (root / "vendor/dep/v.txt").write_text(f"{version}\n")

    install("1", before)
    assert prove(root, "c")[0] == 0
    install("2", after)
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_a_virtualenv_distribution_changed_re_runs(tmp_path: Path) -> None:
    """A venv's installed distributions bind a command that is not its interpreter (sh)."""
    import subprocess
    import sys

    root = _workspace(
        tmp_path,
        {
            ".gitignore": ".changeloop/\n.venv/\n",
            "check.sh": ".venv/bin/python -c 'import dep, sys; sys.exit(dep.V != 1)'\n",
        },
        "version: 1\nproviders:\n  check:\n    command: [sh, check.sh]\n",
    )
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    site = next((root / ".venv" / "lib").glob("python*/site-packages"))

    def install(version: int) -> None:
        for old in site.glob("dep-*.dist-info"):
            for f in old.iterdir():
                f.unlink()
            old.rmdir()
        info = site / f"dep-{version}.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: dep\nVersion: {version}.0\n")
        (site / "dep.py").write_text(f"V = {version}\n")
        (info / "RECORD").write_text(f"dep.py,,\ndep-{version}.0.dist-info/METADATA,,\n")

    install(1)
    assert prove(root, "c")[0] == 0
    install(2)
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def _findings(root: Path, doc: dict[str, object], provider: str) -> list[dict[str, str]]:
    import base64

    for entry in doc["providers"]:  # type: ignore[attr-defined]
        if entry["name"] == provider:
            path = root / entry["receipts"][0]["path"]
            envelope = json.loads(path.read_text())
            statement = json.loads(base64.b64decode(envelope["payload"]))
            found: list[dict[str, str]] = statement["predicate"]["changeloop"]["findings"]
            return found
    raise AssertionError(provider)


def test_cli_helper_sees_a_refusal_as_json(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "ws", {"a": "1\n"})
    code, doc, _err = cli(root, "gate", "nope")
    assert code == 2 and doc["status"] == "not-proven"
