"""`changeloop adapters check`: tool capability contracts against the tools the project resolves."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from gate_helpers import run
from prove_helpers import git, make_change, make_repo
from repo_paths import REPO_ROOT
from tool_installs import matrix_folder

from changeloop.contracts.check import Contract, contracts, has_flag, has_subcommand
from changeloop.detect import runner_commands
from changeloop.detect.types import Detection
from changeloop.model import Provider
from changeloop.providers import playwright

REPO = REPO_ROOT
EXAMPLES = REPO / "examples"


def _check(
    root: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, Any], str]:
    code, doc, err = run(["adapters", "check", "--root", str(root), "--json", *extra], capsys)
    assert doc is not None, err
    return code, doc, err


def _by_tool(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["tool"]: t for t in doc["tools"]}


# -- the contracts name what the adapters actually use ------------------------
def _contract(tool: str) -> Contract:
    return next(c for c in contracts() if c.tool == tool)


def _options(argv: tuple[str, ...]) -> set[str]:
    return {a.split("=", 1)[0] for a in argv if a.startswith("-") and a != "--"}


@pytest.mark.parametrize(
    ("adapter", "tool", "words"),
    [
        ("pytest", "pytest", set()),
        ("vitest", "vitest", {"run"}),
        ("jest", "jest", set()),
        ("node-test", "node", set()),
        ("cargo", "cargo", {"test"}),
        ("unittest", "unittest", set()),
    ],
)
def test_contract_covers_every_option_derived_wiring_uses(
    tmp_path: Path, adapter: str, tool: str, words: set[str]
) -> None:
    det = Detection(adapter, "python", "manifest", None, "x")
    argv, _report = runner_commands.test_command(det, tmp_path, ".changeloop/reports/test")
    contract = _contract(tool)
    flags = {f.name for p in contract.probes for f in p.flags}
    subcommands = {s for p in contract.probes for s in p.subcommands}
    assert _options(argv) - {"-m"} <= flags, (argv, flags)
    assert words <= subcommands and words <= set(argv)


def test_playwright_contract_covers_the_injected_options() -> None:
    provider = Provider(
        name="browser",
        adapter="playwright",
        capability="browser",
        command=("npx", "playwright", "test"),
        project="chromium",
    )
    argv = playwright.effective_command(provider)
    assert argv is not None
    contract = _contract("playwright")
    assert _options(argv) <= {f.name for p in contract.probes for f in p.flags}
    assert "test" in {s for p in contract.probes for s in p.subcommands}


def test_every_shipped_contract_loads() -> None:
    tools = {c.tool for c in contracts()}
    assert tools == {
        "pytest", "vitest", "jest", "node", "cargo", "playwright", "unittest", "jest-junit",
    }  # fmt: skip
    for c in contracts():
        assert c.probes and all(p.flags or p.subcommands for p in c.probes)


def test_presence_is_a_whole_word_match() -> None:
    text = "  --reporter-foo  x\n  --test-reporter=...  y\n  run [...filters]\n  test-server\n"
    assert not has_flag(text, "--reporter") and has_flag(text, "--test-reporter")
    assert not has_flag(text, "--test")
    assert has_subcommand(text, "run") and not has_subcommand(text, "test")


# -- against the examples' pinned tools, where installed -------------------------
def _need(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} is not installed (scripts/test.sh runs npm ci)")


@pytest.mark.parametrize(
    ("example", "tools", "need"),
    [
        ("node-vitest", {"vitest", "node"}, "node_modules/.bin/vitest"),
        ("web", {"playwright", "node"}, "node_modules/.bin/playwright"),
        ("node-test", {"node"}, None),
        ("python-pytest", {"pytest"}, None),
        ("rust-cargo", {"cargo"}, None),
    ],
)
def test_examples_pinned_tools_keep_their_contracts(
    example: str, tools: set[str], need: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    root = EXAMPLES / example
    if need:
        _need(root / need)
    if "cargo" in tools and shutil.which("cargo") is None:
        pytest.skip("cargo is not installed")
    code, doc, err = _check(root, capsys)
    assert code == 0, err
    assert doc["status"] == "ok"
    found = _by_tool(doc)
    assert tools <= set(found)
    for tool in tools:
        assert found[tool]["status"] == "ok" and found[tool]["missing"] == []
        assert found[tool]["version"], found[tool]
    if "vitest" in tools:
        pinned = json.loads((root / "node_modules/vitest/package.json").read_text())["version"]
        assert found["vitest"]["version"] == pinned


def _copy_example(example: str, tmp_path: Path) -> Path:
    src = EXAMPLES / example
    dest = tmp_path / example
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns("node_modules"))
    if (src / "node_modules").exists():
        (dest / "node_modules").symlink_to(src / "node_modules")
    return dest


def test_checking_never_runs_project_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A vitest config and a conftest that would leave a mark when loaded: no mark."""
    _need(EXAMPLES / "node-vitest" / "node_modules" / ".bin" / "vitest")
    root = _copy_example("node-vitest", tmp_path)
    mark = tmp_path / "project-code-ran"
    (root / "vitest.config.mjs").write_text(
        f"import fs from 'node:fs';\nfs.writeFileSync({json.dumps(str(mark))}, 'vitest');\n"
        "export default {};\n"
    )
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    (root / "conftest.py").write_text(f"open({str(mark)!r}, 'w').write('conftest')\n")
    code, doc, err = _check(root, capsys)
    assert code == 0, err
    assert {"vitest", "pytest"} <= set(_by_tool(doc))
    assert not mark.exists()


# -- drift --------------------------------------------------------------------------
def _fake_vitest(root: Path, run_help: str) -> None:
    bin_dir = root / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True)
    script = bin_dir / "vitest"
    (root / "run-help.txt").write_text(run_help)
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = run ]; then cat {root / "run-help.txt"}; exit 0; fi\n'
        "printf 'vitest/0.0.1\\n\\nCommands:\\n  run [...filters]\\n  bench\\n'\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    pkg = root / "node_modules" / "vitest" / "package.json"
    pkg.parent.mkdir(parents=True)
    pkg.write_text('{"name": "vitest", "version": "0.0.1"}')


def test_drift_exits_2_naming_tool_version_and_capability(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"README": "x\n"})
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    _fake_vitest(root, "  --reporter <name>   Specify reporters\n  --outputFiles <x>  not it")
    code, doc, err = _check(root, capsys)
    assert code == 2 and doc["status"] == "drift"
    vitest = _by_tool(doc)["vitest"]
    assert vitest["status"] == "drift" and vitest["version"] == "0.0.1"
    assert vitest["missing"] == [
        {"kind": "flag", "name": "--outputFile", "probe": ["run", "--help"]}
    ]
    assert "vitest 0.0.1" in err and "--outputFile" in err
    # Doctor reports the same drift as a finding with the fix.
    _code, doctor, _ = run(["evidence", "doctor", "c1", "--root", str(root), "--json"], capsys)
    assert doctor is not None
    drift = [f for f in doctor["findings"] if f["kind"] == "tool-contract-drift"]
    assert len(drift) == 1 and "--outputFile" in drift[0]["message"]
    assert "vitest" in drift[0]["suggested_action"]
    assert drift[0]["playbook_command"] == "changeloop adapters check"
    # Upgrading the tool makes the recorded drift stale: doctor no longer reports it.
    pkg = root / "node_modules" / "vitest" / "package.json"
    pkg.write_text('{"name": "vitest", "version": "0.0.2"}')
    _code, doctor, _ = run(["evidence", "doctor", "c1", "--root", str(root), "--json"], capsys)
    assert doctor is not None
    assert "tool-contract-drift" not in {f["kind"] for f in doctor["findings"]}


def test_doctor_executes_no_tool_to_find_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Doctor reads the last check's record; it never runs the repository's own binaries."""
    root = make_repo(tmp_path / "ws", {"README": "x\n"})
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    _fake_vitest(root, "  --reporter <name>")
    mark = tmp_path / "tool-ran"
    script = root / "node_modules" / ".bin" / "vitest"
    script.write_text(script.read_text().replace("#!/bin/sh\n", f"#!/bin/sh\ntouch {mark}\n", 1))
    _code, doctor, _ = run(["evidence", "doctor", "c1", "--root", str(root), "--json"], capsys)
    assert doctor is not None and not mark.exists()
    assert "tool-contract-drift" not in {f["kind"] for f in doctor["findings"]}
    assert _check(root, capsys)[0] == 2 and mark.exists()  # the check itself asks the tool
    mark.unlink()
    _code, doctor, _ = run(["evidence", "doctor", "c1", "--root", str(root), "--json"], capsys)
    assert doctor is not None and not mark.exists()
    assert "tool-contract-drift" in {f["kind"] for f in doctor["findings"]}


def test_a_repository_without_such_tools_is_ok(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"README": "x\n"})
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    code, doc, _ = _check(root, capsys)
    assert code == 0 and doc["status"] == "ok" and doc["tools"] == []


def test_unknown_change_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_repo(tmp_path / "ws", {"README": "x\n"})
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    code, doc, _ = _check(root, capsys, "--change", "nope")
    assert code == 2 and doc["errors"]


def test_a_tool_the_manifest_calls_for_but_that_does_not_resolve_is_absent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/verbs/adapters.md: vitest in devDependencies, no node_modules yet -> `absent`."""
    manifest = {"name": "web", "devDependencies": {"vitest": "^2.0.0"}}
    root = make_repo(tmp_path / "ws", {"package.json": json.dumps(manifest)})
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    code, doc, _ = _check(root, capsys)
    vitest = _by_tool(doc).get("vitest")
    assert vitest is not None and vitest["status"] == "absent", doc
    assert "node_modules/.bin/vitest" in vitest["message"]
    assert code == 0 and doc["status"] == "ok"  # absent is not drift
    assert "jest" not in _by_tool(doc)  # a package the manifest does not name is not checked


def test_a_package_json_that_is_a_fifo_is_not_waited_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A planted FIFO named package.json: read as no manifest, never blocked on."""
    import os

    root = make_repo(tmp_path / "ws", {"README": "x\n"})
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    os.mkfifo(root / "package.json")
    code, doc, _ = _check(root, capsys)
    assert code == 0 and "vitest" not in _by_tool(doc)


def test_prove_reports_the_recorded_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """prove runs only what the wiring names, so it consults what `adapters check` recorded."""
    root = make_repo(
        tmp_path / "ws", {"README": "x\n", ".gitignore": ".changeloop/\nnode_modules\n"}
    )
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [lint]\n",
        'version: 1\nproviders:\n  lint:\n    adapter: command\n    command: ["true"]\n',
    )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "change")
    _fake_vitest(root, "  --reporter <name>   Specify reporters\n")
    assert _check(root, capsys)[0] == 2
    code, doc, err = run(["prove", "c1", "--root", str(root), "--json"], capsys)
    assert code == 0 and doc is not None, err
    [finding] = doc["findings"]
    assert finding["kind"] == "tool-contract-drift" and finding["severity"] == "warning"
    assert "vitest 0.0.1" in finding["message"] and "--outputFile" in finding["message"]
    assert "warning: self: vitest 0.0.1" in err
    # the tool replaced (its package.json changed): the record no longer speaks
    pkg = root / "node_modules/vitest/package.json"
    pkg.write_text('{"name": "vitest", "version": "0.0.2"}')
    code, doc, err = run(["prove", "c1", "--root", str(root), "--json", "--no-cache"], capsys)
    assert doc is not None, err
    assert doc.get("findings", []) == [], doc.get("findings")


def test_unittest_contract_in_a_python_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"pyproject.toml": "[project]\nname = 'x'\n"})
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    code, doc, err = _check(root, capsys)
    assert code == 0, err
    unittest = _by_tool(doc)["unittest"]
    assert unittest["status"] == "ok"
    assert unittest["checked"] == ["-v", "-k", "-s", "-p", "-t"]
    assert unittest["version"].count(".") == 2  # the interpreter's own version


# -- the conformance matrix: every contract against several installed versions ------------
@pytest.mark.timeout(1800)  # the first run installs the matrix (npm, pip)
def test_matrix_over_installed_versions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = matrix_folder()
    code, doc, err = run(["adapters", "check", "--matrix", str(folder), "--json"], capsys)
    assert code == 0 and doc is not None, err
    rows = {(r["tool"], r["version"]): r["status"] for r in doc["matrix"]}
    versions: dict[str, set[str]] = {}
    for tool, version in rows:
        versions.setdefault(tool, set()).add(version)
    assert len(versions["vitest"]) >= 2 and len(versions["pytest"]) >= 2, rows
    assert {"jest", "jest-junit", "unittest"} <= set(versions)
    assert set(rows.values()) == {"ok"}
    assert "tool         install" in err  # the table, for people
    # an install whose tool lacks a capability: drift, exit 2, the row says what
    drifted = tmp_path / "matrix"
    drifted.mkdir()
    (drifted / "vitest@4.1.12").symlink_to(folder / "vitest@4.1.12")
    _fake_vitest(drifted / "vitest@0.0.1", "  --reporter <name>   Specify reporters\n")
    code, doc, err = run(["adapters", "check", "--matrix", str(drifted), "--json"], capsys)
    assert code == 2 and doc is not None
    by_install = {r["install"]: r for r in doc["matrix"]}
    assert by_install["vitest@4.1.12"]["status"] == "ok"
    assert by_install["vitest@0.0.1"]["status"] == "drift"
    assert [m["name"] for m in by_install["vitest@0.0.1"]["missing"]] == ["--outputFile"]


def test_matrix_of_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f").write_text("x")
    code, doc, _ = run(["adapters", "check", "--matrix", str(tmp_path / "f"), "--json"], capsys)
    assert code == 2 and doc is not None
    assert doc["errors"][0]["code"] == "matrix_not_a_directory"


def test_pytest_in_the_projects_own_venv_resolves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interpreter asked is the one prove's derived `python` runs: the repository's
    `.venv` (a real one, here seeing this suite's pytest through a .pth file), even when
    PATH's pythons cannot import pytest."""
    import site
    import subprocess
    import sys

    root = make_repo(
        tmp_path / "ws",
        {
            "pyproject.toml": '[project]\nname = "x"\nversion = "0"\n\n[tool.pytest.ini_options]\n',
            ".gitignore": ".venv/\n",
        },
    )
    make_change(root, "c1", "version: 3\nrequires: [test]\n")
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    venv_site = next((root / ".venv" / "lib").glob("python3*/site-packages"))
    (venv_site / "suite.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    bare = tmp_path / "bin"  # PATH's python3 is one that has no pytest
    bare.mkdir()
    (bare / "python3").symlink_to(base)
    monkeypatch.setenv("PATH", f"{bare}:/usr/bin:/bin")
    code, doc, err = _check(root, capsys)
    pytest_report = _by_tool(doc)["pytest"]
    assert pytest_report["status"] == "ok", (pytest_report, err)
    assert pytest_report["path"].startswith(".venv/bin/python")
    assert code == 0 and "not resolved" not in err
