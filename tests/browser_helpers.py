"""Shared pieces for the services and Playwright tests: plans, servers, contexts, hygiene."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from adapter_helpers import adapter_context

from changeloop.model import (
    Claim,
    Evidence,
    InputMode,
    Plan,
    Provider,
    Readiness,
    Repository,
    Service,
)
from changeloop.providers.base import RunContext
from changeloop.services.ports import port_holder
from changeloop.workspace.changeref import ChangeRef

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_WEB = REPO / "examples" / "web"
CHROMIUM = Path("/usr/bin/chromium")

# A tiny HTTP server: argv = port body pidfile; env X_APP sets a header; DIE_AFTER_S exits early.
SERVER = r"""
import http.server, os, sys, time
port, body, pidfile = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3]
with open(pidfile, "a") as fh:
    fh.write(f"{os.getpid()}\n")
print("starting; token=" + os.environ.get("SVC_TOKEN", ""), flush=True)
if os.environ.get("DIE_NOW"):
    print("fatal: cannot start", flush=True)
    sys.exit(3)
time.sleep(float(os.environ.get("DELAY_S", "0")))
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("X-App", os.environ.get("X_APP", "none"))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def server_script(tmp: Path) -> Path:
    path = tmp / "server.py"
    path.write_text(SERVER)
    return path


def service(
    tmp: Path,
    name: str,
    port: int,
    *,
    body: str = "hello changeloop-test-app",
    expect_body: str | None = "changeloop-test-app",
    header: tuple[str, str] | None = None,
    timeout_ms: int = 10_000,
    env: Mapping[str, str] | None = None,
    env_from: Sequence[str] = (),
) -> Service:
    """A service running :data:`SERVER`; its pids are appended to ``tmp/<name>.pids``."""
    script = server_script(tmp)
    readiness = Readiness(
        url=f"http://127.0.0.1:{port}/",
        port=port,
        body=expect_body,
        header=header,
        timeout_ms=timeout_ms,
    )
    return Service(
        name=name,
        repository="self",
        command=(sys.executable, str(script), str(port), body, str(tmp / f"{name}.pids")),
        readiness=readiness,
        env=dict(env or {}),
        env_from=tuple(env_from),
    )


def pids_of(tmp: Path, name: str) -> list[int]:
    path = tmp / f"{name}.pids"
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def assert_clean(tmp: Path, names: Sequence[str], ports: Sequence[int]) -> None:
    """No process a service started survives, and nothing listens on its port."""
    for name in names:
        for pid in pids_of(tmp, name):
            assert not alive(pid), f"service {name} pid {pid} still running"
    for port in ports:
        assert port_holder(port) is None, f"port {port} still in use"


def make_plan(
    root: Path,
    *,
    services: Mapping[str, Service] | None = None,
    claims: Mapping[str, Sequence[str]] | None = None,
    claim_input_modes: Mapping[str, InputMode] | None = None,
    providers: Mapping[str, Provider] | None = None,
) -> Plan:
    modes = claim_input_modes or {}
    evidence = Evidence(
        path=root / "openspec/changes/c/evidence.yaml",
        version=3,
        repositories={"self": "."},
        requires={},
        claims={
            cid: Claim(id=cid, requires=tuple(req), input_mode=modes.get(cid))
            for cid, req in (claims or {}).items()
        },
    )
    return Plan(
        root=root,
        change=ChangeRef("c", root / "openspec/changes/c"),
        evidence=evidence,
        execution=None,
        repositories={"self": Repository("self", root, ".")},
        providers=dict(providers or {}),
        services=dict(services or {}),
    )


def playwright_provider(name: str = "browser", **kw: Any) -> Provider:
    kw.setdefault("command", ("npx", "playwright", "test"))
    kw.setdefault("project", "chromium")
    return Provider(name=name, adapter="playwright", capability="browser", repository="self", **kw)


def make_ctx(plan: Plan, provider: Provider, workdir: Path, run_dir: Path) -> RunContext:
    """A RunContext running its job with the LocalExecutor (no engine needed)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    return adapter_context(
        plan,
        provider,
        workdirs={"self": workdir},
        run_dir=run_dir,
        env={**os.environ, **provider.env, "FORCE_COLOR": "0"},
    )


def require_browser() -> None:
    """Skip (or, with CHANGELOOP_REQUIRE_BROWSER=1 as in CI, fail) without Chromium + npm deps."""
    missing = []
    if not CHROMIUM.exists():
        missing.append(f"{CHROMIUM} (apt-get install chromium)")
    if not (EXAMPLE_WEB / "node_modules" / "@playwright" / "test").is_dir():
        missing.append(f"{EXAMPLE_WEB}/node_modules (run `npm ci` there)")
    if shutil.which("npx") is None:
        missing.append("npx (Node.js)")
    if not missing:
        return
    reason = "browser test needs " + ", ".join(missing)
    if os.environ.get("CHANGELOOP_REQUIRE_BROWSER") == "1":
        pytest.fail(reason + " — CHANGELOOP_REQUIRE_BROWSER=1 makes this a failure")
    pytest.skip(reason)


PW_CONFIG = """
const { defineConfig } = require("@playwright/test");
module.exports = defineConfig({
  testDir: "./tests",
  timeout: 15000,
  workers: 1,
  retries: 1,
  projects: [{
    name: "chromium",
    use: { browserName: "chromium", launchOptions: {
      executablePath: "/usr/bin/chromium",
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    } },
  }],
});
"""


def playwright_project(root: Path, specs: Mapping[str, str]) -> Path:
    """A Playwright project sharing examples/web/node_modules through a symlink."""
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "node_modules").symlink_to(EXAMPLE_WEB / "node_modules")
    (root / "playwright.config.js").write_text(PW_CONFIG)
    for name, text in specs.items():
        (root / "tests" / name).write_text(text)
    return root
