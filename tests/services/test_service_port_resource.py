"""A service holds port:<n>: its users share it, anything naming port:<n> itself excludes them."""

from __future__ import annotations

from pathlib import Path

from prove_helpers import make_change, make_repo

from changeloop.scheduling.resources import ResourceTable, parse_resources
from changeloop.workspace.discovery import find_change


def test_users_of_a_service_share_its_port_and_exclude_a_port_holder() -> None:
    table = ResourceTable()
    user_a = parse_resources(["service-port:4173", "workspace-read:web"])
    user_b = parse_resources(["service-port:4173"])
    squatter = parse_resources(["port:4173"])
    assert table.blocker(user_a) is None
    table.acquire(user_a)
    assert table.blocker(user_b) is None  # shared among the service's users
    table.acquire(user_b)
    assert table.blocker(squatter) is not None
    table.release(user_a)
    table.release(user_b)
    assert table.blocker(squatter) is None
    table.acquire(squatter)
    assert table.blocker(user_a) is not None


def test_naming_the_port_too_takes_it_exclusively_without_deadlock() -> None:
    claims = parse_resources(["service-port:4173", "port:4173"])
    assert len(claims) == 1 and claims[0].mode == "mutex"


def test_plan_gives_service_users_the_shared_port(tmp_path: Path) -> None:
    from changeloop.plan import build_plan

    root = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    make_change(
        root,
        "c1",
        "version: 3\nrequires: [e2e, smoke]\n",
        """
        version: 1
        providers:
          e2e: {adapter: command, command: ["true"], services: [web]}
          smoke: {adapter: command, command: ["true"], services: [web], resources: [db:test]}
        services:
          web:
            command: [python3, -m, http.server, "4173"]
            readiness: {url: "http://127.0.0.1:4173/", expect: {body: ok}}
        """,
    )
    plan = build_plan(root, find_change(root, "c1"))
    assert plan.providers["e2e"].resources == ("workspace-read:self", "service-port:4173")
    # declared resources replace the defaults, but the service's port still comes along
    assert plan.providers["smoke"].resources == ("db:test", "service-port:4173")
