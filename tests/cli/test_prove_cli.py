"""`changeloop prove` end to end: real git repositories, real processes, real receipts."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from port_helpers import free_port
from prove_helpers import (
    make_change,
    make_repo,
    prove_json,
    provider_entry,
    receipts_of,
)

from changeloop.cli.main import main

PY = sys.executable


def _workspace(tmp_path: Path, evidence: str, execution: str | None, change: str = "c1") -> Path:
    root = make_repo(tmp_path / "ws", {"src/app.py": "print('hi')\n"})
    make_change(root, change, evidence, execution)
    return root


def test_proves_a_change_and_receipts_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(
        tmp_path,
        """
        version: 3
        requires: [static-analysis]
        claims:
          hello: {statement: it greets, requires: [test]}
        """,
        f"""
        version: 1
        providers:
          test: {{adapter: command, command: ["{PY}", -c, "print('ok')"], claims: [hello]}}
          static-analysis: {{adapter: command, command: ["{PY}", -m, py_compile, src/app.py]}}
        """,
    )
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0
    assert doc["status"] == "proven"
    assert doc["version"] == "1" and doc["change"] == "c1" and doc["root"] == str(root)
    assert doc["claims"]["hello"] == {"status": "proven", "reasons": []}
    assert doc["requires"] == {"static-analysis": {"self": "pass"}}
    test = receipts_of(doc, "test")["test"]
    assert test["status"] == "pass" and test["id"].startswith("sha256:")
    path = root / test["path"]
    assert path.is_file() and not Path(test["path"]).is_absolute()
    capsys.readouterr()
    verify = main(
        [
            "receipt",
            "verify",
            str(path),
            "--public-key",
            str(root / ".changeloop" / "keys" / "local.pub"),
            "--change",
            "c1",
        ]
    )
    assert verify == 0
    latest = root / ".changeloop" / "receipts" / "c1"
    assert sorted(p.name for p in latest.iterdir()) == [
        "static-analysis.static-analysis.json",
        "test.test.json",
    ]


def test_failing_provider_exits_1_with_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(
        tmp_path,
        "version: 3\nclaims:\n  hello: {requires: [test]}\n",
        f"""
        version: 1
        providers:
          test:
            adapter: command
            command: ["{PY}", -c, "import sys; sys.stderr.write('boom happened\\\\n'); sys.exit(3)"]
            claims: [hello]
        """,
    )
    capsys.readouterr()
    code = main(["prove", "c1", "--root", str(root)])
    err = capsys.readouterr().err
    assert code == 1
    assert "change c1: NOT PROVEN" in err
    assert "exited 3: boom happened" in err
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert doc["claims"]["hello"]["status"] == "failed"
    assert provider_entry(doc, "test")["state"] == "ran"  # failures are never reused


def test_dependents_of_a_failure_are_inconclusive_and_others_continue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(
        tmp_path,
        "version: 3\nrequires: [build, test, lint]\n",
        f"""
        version: 1
        providers:
          build: {{adapter: command, command: ["{PY}", -c, "raise SystemExit(1)"]}}
          test: {{adapter: command, command: ["{PY}", -c, "pass"], dependsOn: [build]}}
          lint: {{adapter: command, command: ["{PY}", -c, "pass"]}}
        """,
    )
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 1
    assert receipts_of(doc, "build")["build"]["status"] == "fail"
    skipped = receipts_of(doc, "test")["test"]
    assert skipped["status"] == "inconclusive"
    assert "build" in skipped["reason"]
    assert provider_entry(doc, "test")["state"] == "not-run"
    assert receipts_of(doc, "lint")["lint"]["status"] == "pass"


def test_fail_fast_starts_nothing_new(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _workspace(
        tmp_path,
        "version: 3\nrequires: [a, b, c]\n",
        f"""
        version: 1
        providers:
          a: {{adapter: command, command: ["{PY}", -c, "raise SystemExit(1)"]}}
          b: {{adapter: command, command: ["{PY}", -c, "pass"], dependsOn: [a]}}
          c: {{adapter: command, command: ["{PY}", -c, "pass"], dependsOn: [a]}}
        """,
    )
    code, doc = prove_json(root, "c1", "--fail-fast", "--jobs", "1", capsys=capsys)
    assert code == 1
    states = {p["name"]: p["state"] for p in doc["providers"]}
    assert states == {"a": "ran", "b": "not-run", "c": "not-run"}


def test_second_run_reuses_the_same_receipt_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(
        tmp_path,
        "version: 3\nrequires: [test]\n",
        f'version: 1\nproviders:\n  test: {{adapter: command, command: ["{PY}", -c, "pass"]}}\n',
    )
    _, first = prove_json(root, "c1", capsys=capsys)
    _, second = prove_json(root, "c1", capsys=capsys)
    assert provider_entry(second, "test")["state"] == "cached"
    a, b = receipts_of(first, "test")["test"], receipts_of(second, "test")["test"]
    assert a["id"] == b["id"]
    assert (root / a["path"]).read_bytes() == (root / b["path"]).read_bytes()
    # editing the change's docs re-runs nothing; editing code does
    (root / "openspec" / "changes" / "c1" / "proposal.md").write_text("why\n")
    _, third = prove_json(root, "c1", capsys=capsys)
    assert provider_entry(third, "test")["state"] == "cached"
    (root / "src" / "app.py").write_text("print('changed')\n")
    _, fourth = prove_json(root, "c1", capsys=capsys)
    assert provider_entry(fourth, "test")["state"] == "ran"
    _, fifth = prove_json(root, "c1", "--no-cache", capsys=capsys)
    assert provider_entry(fifth, "test")["state"] == "ran"


def test_missing_executable_is_a_fail_receipt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(
        tmp_path,
        "version: 3\nrequires: [test]\n",
        "version: 1\nproviders:\n  test: {adapter: command, command: [no-such-tool-xyz, run]}\n",
    )
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 1
    receipt = receipts_of(doc, "test")["test"]
    assert receipt["status"] == "fail"
    assert "no-such-tool-xyz" in receipt["reason"]


def test_nothing_to_prove_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _workspace(tmp_path, "version: 3\n", None)
    capsys.readouterr()
    assert main(["prove", "c1", "--root", str(root)]) == 1
    assert "nothing to prove" in capsys.readouterr().err


def test_unknown_change_exits_2_listing_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path, "version: 3\nrequires: [test]\n", None)
    capsys.readouterr()
    code = main(["--root", str(root), "prove", "nope", "--json"])
    captured = capsys.readouterr()
    assert code == 2
    doc = json.loads(captured.out)
    assert doc["errors"][0]["code"] == "unknown_change"
    assert "c1" in doc["errors"][0]["message"]


def test_preflight_refusal_exits_2_with_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(
        tmp_path,
        "version: 3\nrequires: [a]\n",
        """\
        version: 1
        providers:
          a: {adapter: command, command: ["true"], dependsOn: [b]}
          b: {adapter: command, command: ["true"], dependsOn: [a]}
        """,
    )
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 2
    cycle = [e for e in doc["errors"] if "→" in e["message"]]
    assert cycle and cycle[0]["path"].endswith("execution.yaml") and cycle[0]["line"] >= 3
    capsys.readouterr()
    assert main(["prove", "c1", "--root", str(root), "--dry-run"]) == 2


def test_dry_run_prints_plan_and_runs_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(
        tmp_path,
        "version: 3\nrequires: [a, b]\n",
        """\
        version: 1
        providers:
          a: {adapter: command, command: [touch, ran-a]}
          b: {adapter: command, command: [touch, ran-b], dependsOn: [a]}
        """,
    )
    code, doc = prove_json(root, "c1", "--dry-run", capsys=capsys)
    assert code == 0
    assert doc["order"] == ["a", "b"]
    assert not (root / "ran-a").exists()


def test_secret_values_never_reach_any_file_or_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "s3cr3t-VALUE-4242"
    monkeypatch.setenv("API_TOKEN", secret)
    root = _workspace(
        tmp_path,
        "version: 3\nrequires: [test]\n",
        f"""
        version: 1
        providers:
          test:
            adapter: command
            envFrom: [API_TOKEN]
            command: ["{PY}", -c, "import os,sys; t=os.environ['API_TOKEN']; print(t); sys.stderr.write(t); sys.exit(1)"]
        """,
    )
    capsys.readouterr()
    code = main(["prove", "c1", "--root", str(root), "--json"])
    out, err = capsys.readouterr()
    assert code == 1
    assert secret not in out and secret not in err
    written = [p for p in (root / ".changeloop").rglob("*") if p.is_file()]
    assert any(p.suffix == ".log" for p in written)
    for path in written:
        assert secret.encode() not in path.read_bytes(), path


def test_two_repositories_writer_and_reader_run_concurrently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"README": "ws\n"})
    make_repo(root / "a", {"a.txt": "a\n"})
    make_repo(root / "b", {"b.txt": "b\n"})
    marker = tmp_path / "marks"
    marker.mkdir()
    step = textwrap.dedent(
        f"""
        import os, sys, time, pathlib
        d = pathlib.Path({str(marker)!r})
        name = sys.argv[1]
        (d / (name + '.start')).write_text('')
        deadline = time.time() + 20
        other = sys.argv[2]
        while not (d / (other + '.start')).exists() and time.time() < deadline:
            time.sleep(0.02)
        (d / (name + '.saw')).write_text(str((d / (other + '.start')).exists()))
        """
    )
    (tmp_path / "step.py").write_text(step)
    make_change(
        root,
        "c1",
        "version: 3\nrepositories: {a: a, b: b}\nrequires: {write: [a], read: [b]}\n",
        f"""
        version: 1
        providers:
          write:
            adapter: command
            repository: a
            resources: ["workspace-write:a"]
            command: ["{PY}", "{tmp_path / "step.py"}", w, r]
          read:
            adapter: command
            repository: b
            command: ["{PY}", "{tmp_path / "step.py"}", r, w]
        """,
    )
    code, doc = prove_json(root, "c1", "--jobs", "2", capsys=capsys)
    assert code == 0, doc
    # each saw the other one start while it was running: they overlapped
    assert (marker / "w.saw").read_text() == "True"
    assert (marker / "r.saw").read_text() == "True"


_GRANDCHILD = textwrap.dedent(
    """
    import os, signal, socket, subprocess, sys, time
    port = int(sys.argv[1])
    if len(sys.argv) > 2:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port)); s.listen()
        open(sys.argv[2], "w").write(str(os.getpid()))
        time.sleep(600)
    else:
        subprocess.Popen([sys.executable, __file__, str(port), os.environ["PIDFILE"]])
        time.sleep(600)
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_ctrl_c_of_changeloop_leaves_no_process_no_port_no_receipt(tmp_path: Path) -> None:
    port = free_port()
    pidfile = tmp_path / "grandchild.pid"
    (tmp_path / "spawn.py").write_text(_GRANDCHILD)
    root = _workspace(
        tmp_path,
        "version: 3\nrequires: [test]\n",
        f"""
        version: 1
        providers:
          test:
            adapter: command
            command: ["{PY}", "{tmp_path / "spawn.py"}", "{port}"]
            passEnv: [PIDFILE]
        """,
    )
    env = {**os.environ, "PIDFILE": str(pidfile)}
    proc = subprocess.Popen(
        ["changeloop", "prove", "c1", "--root", str(root)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 30
    while not pidfile.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert pidfile.exists(), (
        (proc.stderr.read() if proc.stderr else b"") if proc.poll() is not None else "no grandchild"
    )
    time.sleep(0.2)
    grandchild = int(pidfile.read_text())
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)  # reads and closes both pipes
    assert proc.returncode == 130
    deadline = time.time() + 10
    while _alive(grandchild) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
    assert not list((root / ".changeloop" / "runs").rglob("*.test.json"))
    assert not (root / ".changeloop" / "receipts" / "c1").exists()


def test_a_cache_entry_edited_on_disk_is_not_reused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(
        tmp_path,
        "version: 3\nrequires: [test]\n",
        f'version: 1\nproviders:\n  test: {{adapter: command, command: ["{PY}", -c, "pass"]}}\n',
    )
    prove_json(root, "c1", capsys=capsys)
    (entry,) = (root / ".changeloop" / "cache").glob("*.json")
    doc = json.loads(entry.read_text())
    envelope = json.loads(base64.b64decode(doc["envelopes"][0]))
    signature = envelope["signatures"][0]
    signature["sig"] = ("A" if signature["sig"][0] != "A" else "B") + signature["sig"][1:]
    doc["envelopes"][0] = base64.b64encode(json.dumps(envelope).encode()).decode()
    entry.write_text(json.dumps(doc))
    _, again = prove_json(root, "c1", capsys=capsys)
    assert provider_entry(again, "test")["state"] == "ran"


def test_dry_run_shows_the_command_the_adapter_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Audit: the web example showed `npx playwright test`, not what runs (its reporter and
    project added); --json keeps `command` as configured and adds `effectiveCommand`."""
    import shutil

    from repo_helpers import make_repo
    from repo_paths import EXAMPLES

    web = tmp_path / "web"
    skip = shutil.ignore_patterns(".changeloop", "node_modules")
    shutil.copytree(EXAMPLES / "web", web, ignore=skip)
    make_repo(web, {}, commit=True)
    code, doc = prove_json(web, "add-greeting", "--dry-run", capsys=capsys)
    assert code == 0
    [browser] = doc["providers"]
    assert browser["command"] == ["npx", "playwright", "test"]
    assert browser["effectiveCommand"][:3] == ["npx", "playwright", "test"]
    assert "--reporter=json" in browser["effectiveCommand"]
    assert main(["prove", "add-greeting", "--root", str(web), "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "$ npx playwright test --reporter=json" in err and "(1 provider)" in err
