"""The environment a provider, its setup and its services get: a fixed set plus what the
wiring names (``env``, ``envFrom``, ``passEnv``), every passed value bound.

Each agreement test: ``prove`` passes → the environment changes so the check fails
under a clean run → gate, the no-change answer and a cached ``prove`` agree with
``prove --no-cache``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from closure_helpers import answers, prove, state_of
from prove_helpers import make_change, make_repo
from repo_helpers import commit_all

EVIDENCE = "version: 3\nrequires: [check]\n"
SECRET = "AKIAverysecretvalue-0123456789"


def _workspace(tmp_path: Path, script: str, provider: str = "", more: str = "") -> Path:
    root = make_repo(tmp_path / "ws", {".gitignore": ".changeloop/\n", "check.sh": script})
    execution = "version: 1\nproviders:\n  check:\n    command: [sh, check.sh]\n" + provider + more
    make_change(root, "c", EVIDENCE, execution)
    commit_all(root, "change")
    return root


def test_a_variable_the_plan_does_not_name_never_reaches_the_provider(tmp_path: Path) -> None:
    root = _workspace(tmp_path, 'test "${MODE:-ok}" = ok\n')
    assert prove(root, "c", env={"MODE": "ok"})[0] == 0
    found = answers(root, "c", env={"MODE": "broken"})
    assert found.clean == "proven"  # MODE is not passed: the command never sees it
    assert found.agree(), found.why()


def test_pass_env_passes_a_variable_and_binds_its_value(tmp_path: Path) -> None:
    root = _workspace(tmp_path, 'test "${MODE:-ok}" = ok\n', "    passEnv: [MODE]\n")
    assert prove(root, "c", env={"MODE": "ok"})[0] == 0
    found = answers(root, "c", env={"MODE": "broken"})
    assert found.clean == "not-proven"
    assert found.agree(), found.why()
    assert prove(root, "c", env={"MODE": "ok"})[0] == 0


def test_pass_env_globs(tmp_path: Path) -> None:
    root = _workspace(tmp_path, 'test "${APP_MODE:-ok}" = ok\n', '    passEnv: ["APP_*"]\n')
    assert prove(root, "c", env={"APP_MODE": "ok"})[0] == 0
    found = answers(root, "c", env={"APP_MODE": "broken"})
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_a_fixed_set_variable_is_bound(tmp_path: Path) -> None:
    root = _workspace(tmp_path, 'test "${TZ:-UTC}" = UTC\n')
    assert prove(root, "c", env={"TZ": "UTC"})[0] == 0
    found = answers(root, "c", env={"TZ": "Asia/Tokyo"})
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_an_unnamed_secret_is_neither_passed_nor_written(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path, 'echo "seen=[$AWS_SECRET_ACCESS_KEY]"\ntest -z "$AWS_SECRET_ACCESS_KEY"\n'
    )
    code, doc = prove(root, "c", env={"AWS_SECRET_ACCESS_KEY": SECRET})
    assert code == 0, doc
    log = _log(root, doc)
    assert "seen=[]" in log
    assert not _anywhere(root / ".changeloop", SECRET)


def test_a_secret_like_pass_env_value_is_masked_and_bound_as_an_hmac(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path, 'echo "token=[$API_TOKEN]"\ntest -n "$API_TOKEN"\n', "    passEnv: [API_TOKEN]\n"
    )
    code, doc = prove(root, "c", env={"API_TOKEN": SECRET})
    assert code == 0, doc
    assert "token=[***]" in _log(root, doc)
    assert not _anywhere(root / ".changeloop", SECRET)
    code, doc = prove(root, "c", env={"API_TOKEN": SECRET + "-rotated"})
    assert code == 0 and state_of(doc, "check") == "ran"


def test_setup_gets_only_the_fixed_set(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path,
        "exit 0\n",
        more="repositories:\n  self:\n    setup: [[sh, -c, 'test -z \"$AWS_SECRET_ACCESS_KEY\"']]\n",
    )
    code, doc = prove(root, "c", "--sandbox", "copy", env={"AWS_SECRET_ACCESS_KEY": SECRET})
    assert code == 0, doc


def test_a_service_gets_only_the_fixed_set(tmp_path: Path) -> None:
    from port_helpers import free_port

    port = free_port()
    server = (
        "import http.server, os\n"
        "body = ('leak' if os.environ.get('AWS_SECRET_ACCESS_KEY') else 'clean').encode()\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(200); self.end_headers(); self.wfile.write(body)\n"
        "    def log_message(self, *a): pass\n"
        f"http.server.HTTPServer(('127.0.0.1', {port}), H).serve_forever()\n"
    )
    root = make_repo(
        tmp_path / "ws",
        {".gitignore": ".changeloop/\n", "server.py": server, "check.sh": "exit 0\n"},
    )
    execution = (
        "version: 1\nproviders:\n  check:\n    command: [sh, check.sh]\n    services: [web]\n"
        f"services:\n  web:\n    command: [{sys.executable}, server.py]\n"
        f"    readiness:\n      url: http://127.0.0.1:{port}/\n      expect: {{body: clean}}\n"
        "      timeoutMs: 20000\n"
    )
    make_change(root, "c", EVIDENCE, execution)
    commit_all(root, "change")
    code, doc = prove(root, "c", env={"AWS_SECRET_ACCESS_KEY": SECRET})
    assert code == 0, doc


def test_an_executable_rewritten_in_place_with_the_same_size_and_mtime_is_hashed_again(
    tmp_path: Path,
) -> None:
    tool = tmp_path / "tools" / "check-tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    root = make_repo(tmp_path / "ws", {".gitignore": ".changeloop/\n", "a.txt": "a\n"})
    make_change(root, "c", EVIDENCE, f"version: 1\nproviders:\n  check:\n    command: [{tool}]\n")
    commit_all(root, "change")
    assert prove(root, "c")[0] == 0
    before = tool.stat()
    with tool.open("r+b") as fh:  # the same inode, the same size
        fh.write(b"#!/bin/sh\nexit 1\n")
    os.utime(tool, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = tool.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_the_node_behind_npx_is_part_of_the_environment(tmp_path: Path) -> None:
    import json
    import shutil

    node, npx = shutil.which("node"), shutil.which("npx")
    if node is None or npx is None:
        import pytest

        pytest.skip("node is not installed")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "node"
    wrapper.write_text(f'#!/bin/sh\nexec {node} "$@"\n')
    wrapper.chmod(0o755)
    (bindir / "npx").symlink_to(npx)
    root = make_repo(
        tmp_path / "ws",
        {
            ".gitignore": ".changeloop/\nnode_modules/\n",
            "package.json": json.dumps({"name": "app", "version": "1.0.0"}),
            "node_modules/tool/package.json": json.dumps(
                {"name": "tool", "version": "1.0.0", "bin": {"tool": "cli.js"}}
            ),
            "node_modules/tool/cli.js": "#!/usr/bin/env node\nprocess.exit(0);\n",
        },
    )
    (root / "node_modules/.bin").mkdir()
    (root / "node_modules/.bin/tool").symlink_to("../tool/cli.js")
    (root / "node_modules/tool/cli.js").chmod(0o755)
    make_change(
        root,
        "c",
        EVIDENCE,
        "version: 1\nproviders:\n  check:\n    command: [npx, --no-install, tool]\n",
    )
    commit_all(root, "change")
    path = f"{bindir}:{os.environ['PATH']}"
    assert prove(root, "c", env={"PATH": path})[0] == 0
    wrapper.write_text("#!/bin/sh\nexit 1\n")
    found = answers(root, "c", env={"PATH": path})
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_the_interpreter_behind_a_console_script_is_part_of_the_environment(
    tmp_path: Path,
) -> None:
    """``pytest`` is a console script: what runs it is the interpreter its shebang names."""
    bindir = tmp_path / "tools" / "bin"
    bindir.mkdir(parents=True)
    python = bindir / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    script = bindir / "check-tests"
    script.write_text(f"#!{python}\nimport sys\nsys.exit(0)\n")
    script.chmod(0o755)
    root = make_repo(tmp_path / "ws", {".gitignore": ".changeloop/\n", "a.txt": "a\n"})
    make_change(root, "c", EVIDENCE, f"version: 1\nproviders:\n  check:\n    command: [{script}]\n")
    commit_all(root, "change")
    assert prove(root, "c")[0] == 0
    python.write_text("#!/bin/sh\nexit 1\n")  # another interpreter; the script is the same
    found = answers(root, "c")
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def _log(root: Path, doc: dict[str, object]) -> str:
    run = root / ".changeloop" / "runs" / str(doc["runId"]) / "check"
    return "".join(p.read_text(errors="replace") for p in sorted(run.glob("*.log")))


def _anywhere(directory: Path, value: str) -> list[str]:
    needle = value.encode()
    return [
        str(p)
        for p in directory.rglob("*")
        if p.is_file() and not p.is_symlink() and needle in p.read_bytes()
    ]
