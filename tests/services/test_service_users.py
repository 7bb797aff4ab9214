"""Service users are counted in one place (the manager, from the plan): a shared service starts once.

With the count left to the engine, a miscount stops a service after its first
user and starts it again for the next one; the start log tells.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from port_helpers import free_port
from prove_helpers import make_change, make_repo, prove_json

from changeloop.model import Provider
from changeloop.services import users_of

PY = sys.executable


def test_a_service_shared_by_three_providers_starts_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    starts = tmp_path / "starts.log"
    root = make_repo(tmp_path / "ws", {"www/index.html": "svc-id\n"})
    serve = (
        f"open({str(starts)!r}, 'a').write('S'); import runpy, sys;"
        f" sys.argv = ['http.server', '{port}', '--bind', '127.0.0.1', '--directory', 'www'];"
        " runpy.run_module('http.server', run_name='__main__')"
    )
    probe = f'import urllib.request; urllib.request.urlopen("http://127.0.0.1:{port}/").read()'
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [a, b, c]\n",
        f"""
        version: 1
        providers:
          a: {{adapter: command, command: ["{PY}", -c, '{probe}'], services: [web]}}
          b: {{adapter: command, command: ["{PY}", -c, '{probe}'], services: [web], dependsOn: [a]}}
          c: {{adapter: command, command: ["{PY}", -c, '{probe}'], services: [web], dependsOn: [b]}}
        services:
          web:
            command: ["{PY}", -c, "{serve}"]
            readiness: {{url: "http://127.0.0.1:{port}/", expect: {{body: svc-id}}, timeoutMs: 20000}}
        """,
    )
    code, doc = prove_json(root, "c1", "--jobs", "1", capsys=capsys)
    assert code == 0, json.dumps(doc["providers"])[:3000] + json.dumps(doc.get("errors"))
    assert starts.read_text() == "S"  # one start for three users


def test_users_are_counted_once_per_provider() -> None:
    from changeloop.model import Evidence, Plan
    from changeloop.workspace.changeref import ChangeRef

    providers = {
        name: Provider(name=name, adapter="command", capability=name, services=services)
        for name, services in {"a": ("web",), "b": ("web", "db"), "c": ()}.items()
    }
    plan = Plan(
        root=Path("."),
        change=ChangeRef(id="c", path=Path(".")),
        evidence=Evidence(path=Path("e"), version=3, repositories={}, requires={}, claims={}),
        execution=None,
        repositories={},
        providers=providers,
        services={},
    )
    assert users_of(plan) == {"web": 2, "db": 1}
