"""Each wiring or content edit changes exactly the affected providers' fingerprints."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import changed, fingerprints, make_repo, write

from changeloop.fingerprints import fingerprint
from changeloop.model import Provider, Readiness, Service

SECRET = "s3cr3t-value-never-in-clear"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    web = make_repo(
        tmp_path / "web",
        {"src/app.py": "a\n", "src/util.py": "u\n", "README.md": "r\n", "openspec/x.md": "x\n"},
    )
    api = make_repo(tmp_path / "api", {"main.rs": "fn main() {}\n"})
    providers = {
        "lint": Provider(
            name="lint",
            adapter="command",
            capability="static-analysis",
            repository="web",
            command=("ruff", "check"),
            env={"MODE": "strict"},
            env_from=("TOKEN",),
        ),
        "unit": Provider(
            name="unit",
            adapter="command",
            capability="test",
            repository="web",
            command=("pytest",),
            inputs=("src/**/*.py",),
        ),
        "after-lint": Provider(
            name="after-lint",
            adapter="command",
            capability="review",
            repository="web",
            command=("true",),
            depends_on=("lint",),
        ),
        "api-test": Provider(
            name="api-test",
            adapter="command",
            capability="test",
            repository="api",
            command=("cargo", "test"),
        ),
        "api-e2e": Provider(
            name="api-e2e",
            adapter="command",
            capability="browser",
            repository="api",
            command=("e2e",),
            services=("srv",),
        ),
    }
    services = {
        "srv": Service(
            name="srv",
            repository="api",
            command=("serve", "--port", "4173"),
            readiness=Readiness(url="http://127.0.0.1:4173/", port=4173, body="ok"),
            env={"A": "1"},
            env_from=("DB",),
        )
    }
    return {
        "repos": {"web": web, "api": api},
        "providers": providers,
        "services": services,
        "env": {"TOKEN": SECRET, "DB": "db1"},
    }


def fps(world: dict[str, Any], **over: object) -> dict[str, str]:
    return fingerprints(
        world["repos"],
        world["providers"],
        env_values=world["env"],
        services=world["services"],
        **over,  # type: ignore[arg-type]
    )


def edit_provider(world: dict[str, Any], name: str, **changes: object) -> None:
    world["providers"][name] = replace(world["providers"][name], **changes)


def test_stable_when_nothing_changes(world: dict[str, Any]) -> None:
    first = fps(world)
    assert fps(world) == first
    assert len(set(first.values())) == len(first)
    assert all(v.startswith("sha256:") and len(v) == 71 for v in first.values())


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ("env_value", {"lint", "after-lint"}),
        ("env_added", {"lint", "after-lint"}),
        ("env_removed", {"lint", "after-lint"}),
        ("env_from_value", {"lint", "after-lint"}),
        ("command", {"api-test"}),
        ("timeout", {"unit"}),
        ("resources", {"api-test"}),
        ("service_wiring", {"api-e2e"}),
        ("service_env_from_value", {"api-e2e"}),  # a service's secrets decide its answers
        ("file_in_inputs", {"lint", "unit", "after-lint"}),
        ("file_outside_inputs", {"lint", "after-lint"}),
        ("openspec_only", set()),
        ("untracked_file_in_inputs", {"lint", "unit", "after-lint"}),
        ("second_repository", {"api-test", "api-e2e"}),
        ("schema_version", {"lint", "unit", "after-lint", "api-test", "api-e2e"}),
        ("inputs_globs", {"unit"}),
        ("chmod_in_inputs", {"lint", "unit", "after-lint"}),
    ],
)
def test_edit_changes_exactly_the_affected(
    world: dict[str, Any], edit: str, expected: set[str]
) -> None:
    before = fps(world)
    over: dict[str, object] = {}
    web, api = world["repos"]["web"], world["repos"]["api"]
    match edit:
        case "env_value":
            edit_provider(world, "lint", env={"MODE": "lenient"})
        case "env_added":
            edit_provider(world, "lint", env={"MODE": "strict", "EXTRA": "1"})
        case "env_removed":
            edit_provider(world, "lint", env={})
        case "env_from_value":
            world["env"]["TOKEN"] = "another"
        case "command":
            edit_provider(world, "api-test", command=("cargo", "test", "--release"))
        case "timeout":
            edit_provider(world, "unit", timeout_ms=1000)
        case "resources":
            edit_provider(world, "api-test", resources=("workspace-write:api",))
        case "service_wiring":
            world["services"]["srv"] = replace(world["services"]["srv"], env={"A": "2"})
        case "service_env_from_value":
            world["env"]["DB"] = "db2"
        case "file_in_inputs":
            write(web, {"src/app.py": "changed\n"})
        case "file_outside_inputs":
            write(web, {"README.md": "changed\n"})
        case "openspec_only":
            write(web, {"openspec/x.md": "changed\n", "openspec/changes/c/receipts/r.json": "{}"})
        case "untracked_file_in_inputs":
            write(web, {"src/new.py": "n\n"})
        case "second_repository":
            write(api, {"main.rs": "fn main() { println!(); }\n"})
        case "schema_version":
            over["schema"] = "changeloop/receipt@2"
        case "inputs_globs":
            edit_provider(world, "unit", inputs=("src/**/*.py", "pyproject.toml"))
        case "chmod_in_inputs":
            (web / "src/util.py").chmod(0o755)
    after = fps(world, **over)
    assert changed(before, after) == expected


def test_upstream_fingerprint_counts(world: dict[str, Any]) -> None:
    """A provider's fingerprint takes its upstream's as computed after it ran."""
    p = world["providers"]["after-lint"]
    args = dict(
        provider=p,
        adapter_inputs={},
        effective_command=p.command,
        trees={"web": "t"},
        inputs_digest=None,
        env_from_values={},
        hmac_key=b"k",
        services=[],
        schema_version="s",
    )
    one = fingerprint.compute(upstream={"lint": "sha256:" + "1" * 64}, **args)
    two = fingerprint.compute(upstream={"lint": "sha256:" + "2" * 64}, **args)
    assert one != two


def test_env_from_values_never_in_clear_and_keyed(world: dict[str, Any]) -> None:
    p = world["providers"]["lint"]
    common = dict(
        provider=p,
        adapter_inputs={},
        effective_command=p.command,
        trees={"web": "t"},
        inputs_digest=None,
        upstream={},
        env_from_values={"TOKEN": SECRET},
        services=[],
        schema_version="s",
    )
    doc = fingerprint.document(hmac_key=b"key-1", **common)
    assert SECRET not in json.dumps(doc)
    assert set(doc["envFrom"]) == {"TOKEN"}
    a = fingerprint.compute(hmac_key=b"key-1", **common)
    b = fingerprint.compute(hmac_key=b"key-2", **common)
    assert a != b  # another workspace's key: no shared dictionary of secret hashes


def test_inputs_digest_outside_git_matches_inside(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"src/a.py": "a", "src/b/c.py": "c", "x.txt": "x"})
    plain = tmp_path / "plain"
    write(plain, {"src/a.py": "a", "src/b/c.py": "c", "x.txt": "x"})
    globs = ["src/**/*.py"]
    assert fingerprint.inputs_digest(repo, globs) == fingerprint.inputs_digest(plain, globs)
    write(plain, {"src/b/c.py": "C"})
    assert fingerprint.inputs_digest(repo, globs) != fingerprint.inputs_digest(plain, globs)


def test_ignored_files_never_count_in_inputs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {".gitignore": "build/\n", "src/a.py": "a"})
    before = fingerprint.inputs_digest(repo, ["**/*.py"])
    write(repo, {"build/gen.py": "generated"})
    assert fingerprint.inputs_digest(repo, ["**/*.py"]) == before
    (repo / "src/a.py").unlink()
    assert fingerprint.inputs_digest(repo, ["**/*.py"]) != before


@pytest.mark.parametrize(
    "pattern",
    [
        "src/**/*.py",
        "**/*.py",
        "src/*.py",
        "src/**",
        "src/b/?.py",
        "src/[ab]*.py",
        "*.txt",
        "x.txt",
    ],
)
def test_glob_matching_agrees_with_git(tmp_path: Path, pattern: str) -> None:
    from sandbox_helpers import git

    from changeloop.fingerprints.fingerprint import InputsIndex

    repo = make_repo(
        tmp_path / "r",
        {
            "src/a.py": "a",
            "src/b/c.py": "c",
            "src/b/d/e.py": "e",
            "src/ab.txt": "t",
            "x.txt": "x",
            "docs/z.py": "z",
        },
    )
    expected = git(repo, "ls-files", "--", f":(glob){pattern}").splitlines()
    assert InputsIndex(repo).matches([pattern]) == sorted(expected)
