"""build_plan: merging, defaults, resources; graph: order and cycles."""

from __future__ import annotations

from pathlib import Path

import pytest
from config_helpers import VALID_EXECUTION, git_init, make_workspace, plan_for

from changeloop.model import Provider
from changeloop.plan import build_plan
from changeloop.scheduling.graph import CycleError, topological_order


def test_defaults_without_execution(tmp_path: Path) -> None:
    plan = plan_for(tmp_path)
    assert list(plan.repositories) == ["self"]
    assert plan.repositories["self"].path == tmp_path.resolve()
    assert plan.repositories["self"].path.is_absolute()
    assert plan.providers == {}
    assert plan.execution is None
    assert plan.evidence.requires == {"test": None}


def test_configured_providers_resolve_defaults(tmp_path: Path) -> None:
    head, services = VALID_EXECUTION.split("services:")
    plan = plan_for(
        tmp_path,
        execution=head
        + """\
  custom-check:
    adapter: test-discovery
    command: [x]
    report: other.xml
    discoveryProvider: custom-discovery
  static-analysis:
    command: [mypy]
    resources: [workspace-write:self, database:test]
services:"""
        + services,
    )
    test = plan.providers["test"]
    assert test.repository == "self"
    assert test.capability == "test"
    assert test.resources == ("workspace-read:self",)
    assert not test.resources_declared
    assert test.keys == frozenset({"adapter", "command", "report"})
    assert test.location is not None and test.location.line == 3
    assert plan.providers["lint"].capability == "lint"  # command → its own name
    assert plan.providers["custom-check"].capability == "test"  # adapter default
    static = plan.providers["static-analysis"]
    assert static.capability == "static-analysis"  # a known capability name
    assert static.resources == ("workspace-write:self", "database:test")
    assert static.adapter == "command"
    web = plan.services["web"]
    assert web.repository == "self"
    assert web.readiness is not None and web.readiness.port == 4173


def test_execution_overrides_derived_by_name(tmp_path: Path) -> None:
    ref = make_workspace(tmp_path, execution=VALID_EXECUTION)
    derived = {
        "test": Provider(
            name="test",
            adapter="command",
            capability="test",
            command=("make", "test"),
            origin="derived",
        ),
        "docs": Provider(
            name="docs",
            adapter="command",
            capability="docs",
            command=("make", "docs"),
            origin="derived",
        ),
    }
    plan = build_plan(tmp_path.resolve(), ref, derived=derived)
    assert list(plan.providers) == ["test", "lint", "docs"]
    assert plan.providers["test"].adapter == "test-discovery"  # replaced entirely
    assert plan.providers["test"].origin == "configured"
    docs = plan.providers["docs"]
    assert docs.origin == "derived"
    assert docs.repository == "self"
    assert docs.resources == ("workspace-read:self",)


def test_repositories_and_setup(tmp_path: Path) -> None:
    git_init(tmp_path / "ws")
    git_init(tmp_path / "api")
    ref = make_workspace(
        tmp_path / "ws",
        evidence="""\
version: 3
repositories: {web: ., api: ../api}
requires: {test: [web, api], static-analysis: [web]}
claims:
  c: {requires: [test], repository: api, ref: 4411}
""",
        execution="""\
version: 1
repositories:
  api: {setup: [[npm, ci], [npm, run, build]]}
providers:
  lint: {command: [x], repository: web}
  contract:
    adapter: contract-digest
    contract: {web: a.json, api: b.json}
  orphan: {command: [x]}
""",
    )
    plan = build_plan((tmp_path / "ws").resolve(), ref)
    assert plan.repositories["api"].path == (tmp_path / "api").resolve()
    assert plan.repositories["api"].relpath == "../api"
    assert plan.repositories["api"].setup == (("npm", "ci"), ("npm", "run", "build"))
    assert plan.repositories["web"].setup == ()
    assert plan.evidence.requires == {"test": ("web", "api"), "static-analysis": ("web",)}
    assert plan.evidence.claims["c"].ref == "4411"
    assert plan.providers["contract"].repository is None
    assert plan.providers["contract"].capability == "cross-repo-contract"
    assert plan.providers["orphan"].repository is None  # several repositories: preflight's job
    assert plan.providers["orphan"].resources == ()


def test_external_trusted_keys_and_max_age(tmp_path: Path) -> None:
    ref = make_workspace(
        tmp_path,
        execution="""\
version: 1
providers:
  review:
    adapter: external
    claims: [greeting]
    ci: {issuer: github-actions, publicKeyFile: keys/ci.pub}
    authority: {name: security-team, publicKey: "inline-pem"}
    maxAge: 7d
""",
    )
    (ref.path / "keys").mkdir()
    (ref.path / "keys" / "ci.pub").write_text("file-pem")
    plan = build_plan(tmp_path.resolve(), ref)
    review = plan.providers["review"]
    assert review.capability == "review"
    assert review.max_age_s == 7 * 86400
    assert review.issuer == "github-actions"
    ci, authority = review.trusted_keys
    assert (ci.role, ci.name, ci.public_key_pem) == ("ci", "github-actions", "file-pem")
    assert ci.source.endswith("keys/ci.pub")
    assert (authority.role, authority.name, authority.source) == (
        "authority",
        "security-team",
        "inline",
    )


def test_unknown_adapter_does_not_crash_build_plan(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, execution="version: 1\nproviders:\n  x: {adapter: magic}\n")
    assert plan.providers["x"].adapter == "magic"
    assert plan.providers["x"].capability == "x"
    assert plan.providers["x"].resources == ()


def test_env_values_become_strings(tmp_path: Path) -> None:
    plan = plan_for(
        tmp_path,
        execution="version: 1\nproviders:\n  t:\n    command: [x, 4173]\n"
        "    env: {PORT: 4173, DEBUG: true, NAME: a}\n",
    )
    assert plan.providers["t"].command == ("x", "4173")
    assert plan.providers["t"].env == {"PORT": "4173", "DEBUG": "true", "NAME": "a"}


def test_topological_order_is_deterministic() -> None:
    edges = {"e2e": ["test", "build"], "test": ["build"], "lint": [], "build": []}
    assert topological_order(edges) == ["build", "lint", "test", "e2e"]
    assert topological_order({}) == []
    assert topological_order({"a": ["not-a-node"]}) == ["a"]


@pytest.mark.parametrize(
    ("edges", "cycle"),
    [
        ({"a": ["b"], "b": ["c"], "c": ["a"]}, ["a", "b", "c", "a"]),
        ({"x": ["x"]}, ["x", "x"]),
        ({"ok": [], "c": ["b"], "b": ["c"], "z": ["b"]}, ["b", "c", "b"]),
    ],
)
def test_cycle_error_carries_the_cycle(edges: dict[str, list[str]], cycle: list[str]) -> None:
    with pytest.raises(CycleError) as caught:
        topological_order(edges)
    assert caught.value.cycle == cycle
    assert " → ".join(cycle) in str(caught.value)
