"""The resource table on its own: parsing and lock semantics."""

from __future__ import annotations

from changeloop.scheduling.resources import Claim, ResourceTable, parse_resources


def test_parse_normalises_and_write_dominates() -> None:
    claims = parse_resources(
        [
            "workspace-read:api",
            "workspace-write:api",
            "port:3000",
            "port:3000",
            "workspace-read:web",
        ]
    )
    assert claims == (
        Claim("mutex:port:3000", "mutex", "port:3000"),
        Claim("workspace:api", "write", "workspace-write:api"),
        Claim("workspace:web", "read", "workspace-read:web"),
    )


def test_two_repositories_never_serialise_each_other() -> None:
    table = ResourceTable()
    table.acquire(parse_resources(["workspace-write:api"]))
    assert table.blocker(parse_resources(["workspace-write:web"])) is None
    assert table.blocker(parse_resources(["workspace-read:api"])) is not None


def test_readers_share_writer_excludes_and_waiting_writer_blocks_new_readers() -> None:
    table = ResourceTable()
    read = parse_resources(["workspace-read:a"])
    write = parse_resources(["workspace-write:a"])
    table.acquire(read)
    assert table.blocker(read) is None
    table.acquire(read)
    refused = table.blocker(write)
    assert refused is not None and refused.name == "workspace-write:a"
    table.writer_waits("workspace:a")
    assert table.blocker(read) is not None  # writer preference
    table.release(read)
    table.release(read)
    assert table.blocker(write) is None
    table.acquire(write)
    table.writer_done_waiting("workspace:a")
    assert table.blocker(read) is not None
    table.release(write)
    assert table.blocker(read) is None


def test_all_or_nothing_names_first_refused() -> None:
    table = ResourceTable()
    table.acquire(parse_resources(["browser:a"]))
    claims = parse_resources(["port:1", "browser:a"])
    blocked = table.blocker(claims)
    assert blocked is not None and blocked.name == "browser:a"
    assert table.blocker(parse_resources(["port:1"])) is None  # nothing was taken
