"""A cached provider stays cached while a service this run started holds the port."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from port_helpers import free_port
from prove_helpers import make_change, make_repo, prove_json, provider_entry

PY = sys.executable


def test_own_running_service_is_not_a_leftover(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    root = make_repo(
        tmp_path / "ws", {"a.txt": "a\n", "b.txt": "b\n", "www/index.html": "svc-id\n"}
    )
    probe = f'import urllib.request; urllib.request.urlopen("http://127.0.0.1:{port}/").read()'
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [a, b]\n",
        f"""
        version: 1
        providers:
          a: {{adapter: command, command: ["{PY}", -c, '{probe}; import time; time.sleep(0.5)'],
              services: [web], inputs: [a.txt]}}
          b: {{adapter: command, command: ["{PY}", -c, '{probe}'], services: [web], inputs: [b.txt]}}
        services:
          web:
            command: ["{PY}", -m, http.server, "{port}", --bind, 127.0.0.1, --directory, www]
            readiness: {{url: "http://127.0.0.1:{port}/", expect: {{body: svc-id}}, timeoutMs: 20000}}
        """,
    )
    code, first = prove_json(root, "c1", capsys=capsys)
    assert code == 0, first
    (root / "a.txt").write_text("changed\n")
    # one slot: a (the longer one last time) runs first and starts the service; b finds it up
    code, second = prove_json(root, "c1", "--jobs", "1", capsys=capsys)
    assert code == 0, second
    assert provider_entry(second, "a")["state"] == "ran"
    assert provider_entry(second, "b")["state"] == "cached"
