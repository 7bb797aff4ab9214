"""ServiceManager against real servers on loopback: identity, leftover port, early death, sharing."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import anyio
import pytest
from browser_helpers import alive, assert_clean, make_plan, pids_of, service
from port_helpers import free_port

from changeloop.model import Service
from changeloop.outcome import Finding
from changeloop.services import ServiceManager


def _manager(
    tmp: Path, services: dict[str, Service], users: dict[str, int], **kw: object
) -> ServiceManager:
    plan = make_plan(tmp, services=services)
    return ServiceManager(
        plan,
        workdirs={"self": tmp},
        env={"PATH": "/usr/bin:/bin"},
        log_dir=tmp / "logs",
        users=users,
        **kw,  # type: ignore[arg-type]
    )


def _lease_once(
    tmp: Path, svc: Service, **kw: object
) -> tuple[list[Finding], list[tuple[str, str]]]:
    seen: list[Finding] = []

    async def main() -> list[tuple[str, str]]:
        async with _manager(tmp, {svc.name: svc}, {svc.name: 1}, **kw) as services:
            async with services.lease([svc.name]) as problems:
                seen.extend(problems)
            return services.events

    return seen, anyio.run(main)


def test_ready_only_with_identity_and_stopped_after(tmp_path: Path) -> None:
    port = free_port()
    svc = service(tmp_path, "web", port, header=("X-App", "ident"), env={"X_APP": "ident"})
    bodies: list[str] = []

    async def main() -> list[tuple[str, str]]:
        async with _manager(tmp_path, {"web": svc}, {"web": 1}) as services:
            async with services.lease(["web"]) as problems:
                assert problems == []
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/") as resp:
                    bodies.append(resp.read().decode())
                assert all(alive(p) for p in pids_of(tmp_path, "web"))
            return services.events

    events = anyio.run(main)
    assert bodies == ["hello changeloop-test-app"]
    assert events == [("start", "web"), ("ready", "web"), ("stop", "web")]
    assert_clean(tmp_path, ["web"], [port])


def test_leftover_server_on_the_port_is_named_and_service_never_starts(tmp_path: Path) -> None:
    port = free_port()
    decoy = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        svc = service(tmp_path, "web", port)
        findings, events = _lease_once(tmp_path, svc)
    finally:
        decoy.terminate()
        decoy.wait()
    assert [f.kind for f in findings] == ["port-in-use"]
    assert f"port {port}" in findings[0].message
    assert f"pid {decoy.pid}" in findings[0].message
    assert "http.server" in findings[0].message
    assert events == [("refused", "web")]
    assert pids_of(tmp_path, "web") == []  # the command never ran


def test_service_that_dies_early_fails_with_its_log_tail(tmp_path: Path) -> None:
    port = free_port()
    svc = service(tmp_path, "web", port, env={"DIE_NOW": "1"})
    findings, events = _lease_once(tmp_path, svc)
    assert [f.kind for f in findings] == ["service-not-ready"]
    assert "exited with code 3" in findings[0].message
    assert "fatal: cannot start" in findings[0].message  # the log tail
    assert ("ready", "web") not in events
    assert_clean(tmp_path, ["web"], [port])


def test_wrong_body_on_the_port_is_never_ready(tmp_path: Path) -> None:
    port = free_port()
    svc = service(tmp_path, "web", port, body="some other app", timeout_ms=1500)
    findings, events = _lease_once(tmp_path, svc)
    assert [f.kind for f in findings] == ["service-not-ready"]
    message = findings[0].message
    assert "never showed its identity" in message
    assert "'changeloop-test-app'" in message and "answered 200" in message
    assert events == [("start", "web"), ("stop", "web")]
    assert_clean(tmp_path, ["web"], [port])


def test_two_providers_share_one_start_and_one_stop(tmp_path: Path) -> None:
    port = free_port()
    svc = service(tmp_path, "web", port, env={"DELAY_S": "0.3"})
    inside: list[int] = []

    async def provider(services: ServiceManager) -> None:
        async with services.lease(["web"]) as problems:
            assert problems == []
            inside.append(len(pids_of(tmp_path, "web")))
            await anyio.sleep(0.2)

    async def main() -> list[tuple[str, str]]:
        async with _manager(tmp_path, {"web": svc}, {"web": 3}) as services:
            async with anyio.create_task_group() as tg:
                tg.start_soon(provider, services)
                tg.start_soon(provider, services)
            assert ("stop", "web") not in services.events  # a third user is still to come
            services.release_unused(["web"])  # ...but it will never run
            await anyio.sleep(0)
            return services.events

    events = anyio.run(main)
    assert len(pids_of(tmp_path, "web")) == 1
    assert inside == [1, 1]
    assert [e for e, _ in events] == ["start", "ready", "stop"]
    assert_clean(tmp_path, ["web"], [port])


def test_cancellation_leaves_no_process_and_no_port(tmp_path: Path) -> None:
    port = free_port()
    svc = service(tmp_path, "web", port)

    reached: list[bool] = []

    async def main() -> None:
        with anyio.CancelScope() as scope:
            async with _manager(tmp_path, {"web": svc}, {"web": 1}) as services:
                async with services.lease(["web"]) as problems:
                    assert problems == []
                    reached.append(True)
                    scope.cancel()  # what Ctrl-C does to the run's scope
                    await anyio.sleep(30)
        assert scope.cancelled_caught

    anyio.run(main)
    assert reached and pids_of(tmp_path, "web")
    assert_clean(tmp_path, ["web"], [port])


def test_env_from_secret_never_reaches_logs_or_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "s3cr3t-value-81f2"
    monkeypatch.setenv("SVC_TOKEN", secret)
    port = free_port()
    svc = service(tmp_path, "web", port, env={"DIE_NOW": "1"}, env_from=["SVC_TOKEN"])
    findings, _ = _lease_once(tmp_path, svc)
    assert "token=***" in findings[0].message  # the service printed it; we redacted it
    written = [p for p in (tmp_path / "logs").rglob("*") if p.is_file()]
    assert written
    for path in written:
        assert secret.encode() not in path.read_bytes(), path
    assert all(secret not in f.message for f in findings)
