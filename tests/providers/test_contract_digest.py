"""contract-digest: bytes are bytes; escapes are failures naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from receipts_helpers import T0, make_workspace, run_context, write_files

from changeloop.model import Plan
from changeloop.outcome import Outcome
from changeloop.plan import build_plan
from changeloop.providers import contract_digest
from changeloop.workspace import discovery as workspace

PROVIDER = (
    "  contract:\n    adapter: contract-digest\n    claims: [auth-boundary]\n"
    "    contract: {web: contract.json, api: contract.json}\n"
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    make_workspace(tmp_path, extra_provider=PROVIDER)
    return tmp_path


def plan_of(root: Path) -> Plan:
    return build_plan(root, workspace.find_change(root, "add-review"))


def run(root: Path) -> Outcome:
    [out] = anyio.run(contract_digest.run, run_context(plan_of(root), "contract", now=T0))
    return out


def test_agreeing_copies_pass_and_record_both_digests(ws: Path) -> None:
    out = run(ws)
    assert out.status == "pass" and out.claims == {"auth-boundary": "credited"}
    assert set(out.details) == {"api", "web"}
    assert out.details["web"]["path"] == "contract.json"
    assert out.details["web"]["sha256"] == out.details["api"]["sha256"]


@pytest.mark.parametrize(
    ("web_bytes", "api_bytes"),
    [
        (b'{"v": 1}\n', b'{"v": 2}\n'),  # one byte differs
        (b'{"v": 1}\r\n', b'{"v": 1}\n'),  # CRLF vs LF: bytes are bytes
    ],
)
def test_differing_copies_fail_showing_both_digests(
    ws: Path, web_bytes: bytes, api_bytes: bytes
) -> None:
    write_files(ws, {"web/contract.json": web_bytes, "api/contract.json": api_bytes})
    out = run(ws)
    assert out.status == "fail"
    assert out.findings[0].kind == "contract-drift"
    for repo in ("api", "web"):
        assert f"{repo}:contract.json sha256 {out.details[repo]['sha256'][:12]}" in (
            out.reason or ""
        )


def test_missing_file_and_directory(ws: Path) -> None:
    (ws / "api/contract.json").unlink()
    out = run(ws)
    assert out.status == "fail" and "api:contract.json is missing" in (out.reason or "")
    (ws / "api/contract.json").mkdir()
    out = run(ws)
    assert "api:contract.json is a directory" in (out.reason or "")


def test_symlink_escaping_the_repository_fails_at_run_time(ws: Path) -> None:
    outside = ws / "secret.json"
    outside.write_bytes(b'{"v": 1}\n')
    (ws / "api/contract.json").unlink()
    os.symlink(outside, ws / "api/contract.json")
    out = run(ws)
    assert out.status == "fail"
    assert "symlink pointing outside the repository" in (out.reason or "")


def test_symlink_inside_the_repository_is_fine(ws: Path) -> None:
    (ws / "api/contract.json").rename(ws / "api/real.json")
    os.symlink("real.json", ws / "api/contract.json")
    assert run(ws).status == "pass"


@pytest.mark.parametrize(
    ("path", "why"), [("../web/contract.json", "'..'"), ("/etc/passwd", "absolute")]
)
def test_traversal_is_refused_in_preflight_and_at_run_time(
    tmp_path: Path, path: str, why: str
) -> None:
    provider = PROVIDER.replace("api: contract.json", f"api: {path}")
    make_workspace(tmp_path, extra_provider=provider)
    plan = plan_of(tmp_path)
    problems = contract_digest.preflight(plan.providers["contract"], plan)
    assert [p.code for p in problems] == ["path_escape"] and why in problems[0].message
    out = run(tmp_path)
    assert out.status == "fail" and f"api:{path} the path" in (out.reason or "")


def test_preflight_needs_two_known_repositories(tmp_path: Path) -> None:
    make_workspace(
        tmp_path, extra_provider=PROVIDER.replace(", api: contract.json", ", nope: c.json")
    )
    plan = plan_of(tmp_path)
    codes = [p.code for p in contract_digest.preflight(plan.providers["contract"], plan)]
    assert codes == ["contract_unknown_repository"]
    make_workspace(tmp_path / "one", extra_provider=PROVIDER.replace(", api: contract.json", ""))
    plan = plan_of(tmp_path / "one")
    assert [p.code for p in contract_digest.preflight(plan.providers["contract"], plan)] == [
        "contract_needs_two"
    ]


def test_adapter_surface(ws: Path) -> None:
    plan = plan_of(ws)
    provider = plan.providers["contract"]
    assert contract_digest.repositories(provider, plan) == ("api", "web")
    assert provider.resources == ("workspace-read:api", "workspace-read:web")
    assert contract_digest.fingerprint_inputs(provider) == {
        "contract": {"api": "contract.json", "web": "contract.json"}
    }
    assert contract_digest.RUNS_COMMAND is False
