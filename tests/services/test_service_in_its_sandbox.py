"""A service of another repository runs in that repository's sandbox, never in the user's checkout."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from port_helpers import free_port
from prove_helpers import git, make_change, make_repo, prove_json

from changeloop.sandboxes.place import sandbox_place

SERVER = """\
import http.server, os, sys
open(sys.argv[2], "w").write(os.getcwd())
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"review-a-api")
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_service_runs_in_its_repository_sandbox(tmp_path: Path, capsys: Any) -> None:
    port = free_port()
    where = tmp_path / "where.txt"
    api = make_repo(tmp_path / "api", {"srv.py": SERVER})
    web = make_repo(tmp_path / "web", {"a.txt": "a\n"})
    make_change(
        web,
        "c1",
        """\
        version: 3
        repositories: {web: ., api: ../api}
        requires: {check: [web]}
        """,
        f"""\
        version: 1
        providers:
          check:
            adapter: command
            repository: web
            command: [{sys.executable}, -c, "import urllib.request as u; u.urlopen('http://127.0.0.1:{port}/')"]
            services: [apisrv]
        services:
          apisrv:
            repository: api
            command: [{sys.executable}, srv.py, "{port}", "{where}"]
            readiness:
              url: http://127.0.0.1:{port}/
              expect: {{body: review-a-api}}
              timeoutMs: 20000
        """,
    )
    git(web, "add", "-A")
    git(web, "commit", "-q", "-m", "change")
    code, doc = prove_json(web, "c1", "--sandbox", "worktree", capsys=capsys)
    assert code == 0, doc
    ran_in = Path(where.read_text())
    assert ran_in.resolve() != api.resolve()
    assert sandbox_place(web).path in ran_in.resolve().parents
    assert len(git(api, "worktree", "list").splitlines()) == 1  # its sandbox is gone again
