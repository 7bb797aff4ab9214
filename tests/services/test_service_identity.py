"""Readiness belongs to the service: real servers, real ports, real ``changeloop prove`` processes.

- An impostor that binds the port after the port-free check answers with the
  service's very identity: it is named (``port-in-use``, its pid), never taken
  for the service, so the change is never PROVEN.
- Two checkouts of one project prove at once, one with bad content, their
  services on one literal port: the second waits for the first's service to
  end (a lock across processes) instead of probing the other's server; 20
  rounds, no false pass, no false fail.
- A service killed while its provider runs fails that provider, naming the
  service and its exit.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from port_helpers import free_port
from prove_helpers import make_change, make_repo, provider_entry, receipts_of
from repo_helpers import commit_all
from repo_paths import REPO_ROOT

from changeloop.services.ports import port_holder

# A dev server that waits for its port (as many do) and serves its checkout's page.
SERVER = """\
import http.server, os, pathlib, sys, time
port, page = int(sys.argv[1]), pathlib.Path(sys.argv[2]).read_bytes()
pathlib.Path("server.pid").write_text(str(os.getpid()))
class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(page)
    def log_message(self, *args): pass
while True:
    try:
        server = http.server.HTTPServer(("127.0.0.1", port), Page)
        break
    except OSError:
        time.sleep(0.05)
server.serve_forever()
"""
# The provider: the page its service serves must say hello.
CHECK = "import sys, urllib.request as u; sys.exit(b'hello' not in u.urlopen(sys.argv[1]).read())"

EVIDENCE = """\
version: 3
claims:
  greeting:
    statement: the page says hello
    requires: [browser]
"""


def _execution(port: int, service_command: str, check: str = CHECK) -> str:
    return textwrap.dedent(f"""\
        version: 1
        providers:
          page:
            adapter: command
            capability: browser
            claims: [greeting]
            command: [{sys.executable}, -c, {json.dumps(check)}, "http://127.0.0.1:{port}/"]
            services: [web]
        services:
          web:
            command: {service_command}
            readiness:
              url: http://127.0.0.1:{port}/
              expect: {{body: changeloop-web}}
              timeoutMs: 20000
        """)


def _checkout(path: Path, port: int, page: str, service_command: str | None = None) -> Path:
    root = make_repo(path, {"server.py": SERVER, "page.html": page, ".gitignore": "server.pid\n"})
    command = service_command or json.dumps([sys.executable, "server.py", str(port), "page.html"])
    make_change(root, "greet", EVIDENCE, _execution(port, command))
    commit_all(root, "change")
    return root


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def _prove(root: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "changeloop",
            "prove",
            "greet",
            "--root",
            str(root),
            "--json",
            *extra,
        ],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _answer(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any], str]:
    out, err = proc.communicate(timeout=180)
    assert "Traceback" not in err, err
    return proc.returncode, json.loads(out), err


def _findings(root: Path, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The findings of the ``page`` provider's receipts, read from the signed files."""
    found: list[dict[str, Any]] = []
    for receipt in provider_entry(doc, "page")["receipts"]:
        envelope = json.loads((root / receipt["path"]).read_bytes())
        statement = json.loads(base64.b64decode(envelope["payload"]))
        found += statement["predicate"]["changeloop"]["findings"]
    return found


IMPOSTOR = """\
import http.server, sys
class Same(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"changeloop-web hello")
    def log_message(self, *args): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Same).serve_forever()
"""


def test_an_impostor_that_binds_after_the_port_check_is_named_and_never_proves(
    tmp_path: Path,
) -> None:
    port = free_port()
    flags = tmp_path / "flags"
    flags.mkdir()
    # The service announces that it started (the port check is behind it), then waits for
    # the impostor to hold the port before it tries the port itself.
    wait_then_serve = (
        f"touch {flags}/started; while [ ! -e {flags}/bound ]; do sleep 0.02; done; "
        f"exec {sys.executable} server.py {port} page.html"
    )
    root = _checkout(
        tmp_path / "ws",
        port,
        "<p>changeloop-web: goodbye</p>\n",  # the real service would not say hello
        json.dumps(["sh", "-c", wait_then_serve]),
    )
    (tmp_path / "impostor.py").write_text(IMPOSTOR)
    proc = _prove(root)
    impostor: subprocess.Popen[bytes] | None = None
    try:
        deadline = time.monotonic() + 120
        while not (flags / "started").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.01)
        impostor = subprocess.Popen([sys.executable, str(tmp_path / "impostor.py"), str(port)])
        while port_holder(port) is None:
            assert impostor.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        (flags / "bound").touch()
        code, doc, err = _answer(proc)
    finally:
        if impostor is not None:
            impostor.kill()
            impostor.wait()
    assert code == 1, (doc, err)
    assert doc["status"] == "not-proven"
    (receipt,) = receipts_of(doc, "page").values()
    assert receipt["status"] == "fail"
    (finding,) = _findings(root, doc)
    assert finding["kind"] == "port-in-use"
    assert f"pid {impostor.pid}" in finding["message"] and "impostor.py" in finding["message"]


ROUNDS = 8  # the race it guards was seen 1 round in 20 without the port lock; the lock is exact


def test_two_checkouts_proving_at_once_never_take_each_others_service(tmp_path: Path) -> None:
    """Bad content never proves, good content always does: the port is queued for, not raced."""
    port = free_port()
    good = _checkout(tmp_path / "good", port, "<p>changeloop-web: hello</p>\n")
    bad = _checkout(tmp_path / "bad", port, "<p>changeloop-web: goodbye</p>\n")
    outcomes: list[tuple[int, int]] = []
    for _ in range(ROUNDS):
        runs = [_prove(good, "--no-cache"), _prove(bad, "--no-cache")]
        (good_code, good_doc, good_err), (bad_code, bad_doc, bad_err) = map(_answer, runs)
        outcomes.append((good_code, bad_code))
        assert bad_code == 1 and bad_doc["status"] == "not-proven", (bad_doc, bad_err)
        assert good_code == 0 and good_doc["status"] == "proven", (good_doc, good_err)
    assert outcomes == [(0, 1)] * ROUNDS
    assert port_holder(port) is None


def test_a_service_killed_mid_run_fails_the_provider_using_it(tmp_path: Path) -> None:
    port = free_port()
    # The provider passes its check, then the service dies under it before it is done.
    check = (
        "import os, pathlib, signal, sys, time, urllib.request as u\n"
        "ok = b'hello' in u.urlopen(sys.argv[1]).read()\n"
        "os.kill(int(pathlib.Path('server.pid').read_text()), signal.SIGKILL)\n"
        "time.sleep(0.3)\n"
        "sys.exit(not ok)\n"
    )
    root = make_repo(
        tmp_path / "ws",
        {"server.py": SERVER, "page.html": "<p>changeloop-web: hello</p>\n"},
    )
    (root / ".gitignore").write_text("server.pid\n")
    command = json.dumps([sys.executable, "server.py", str(port), "page.html"])
    make_change(root, "greet", EVIDENCE, _execution(port, command, check))
    commit_all(root, "change")
    code, doc, err = _answer(_prove(root))
    assert code == 1, (doc, err)
    (receipt,) = receipts_of(doc, "page").values()
    assert receipt["status"] == "fail"
    (finding,) = _findings(root, doc)
    assert finding["kind"] == "service-not-ready"
    assert "service 'web' exited with code -9" in finding["message"]
    assert port_holder(port) is None


@pytest.fixture(autouse=True)
def _no_server_left(tmp_path: Path) -> Any:
    yield
    for pid_file in tmp_path.rglob("server.pid"):  # pragma: no cover - only after a failure
        try:
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        except (OSError, ValueError):
            pass
