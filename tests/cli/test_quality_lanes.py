"""`changeloop quality run`: consumer-quality lanes, each judged alone, the worst deciding."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from gate_helpers import run
from prove_helpers import make_change, make_repo


def _workspace(tmp_path: Path, lanes: dict[str, Any], evidence: str | None = None) -> Path:
    root = make_repo(tmp_path / "ws", {"README": "x\n"})
    make_change(root, "c1", evidence or "version: 3\nrequires: [static-analysis]\n")
    quality = root / "quality" / "foundation-quality.json"
    quality.parent.mkdir()
    quality.write_text(json.dumps({"version": 1, "lanes": lanes}, indent=2))
    return root


def _quality(
    root: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, Any] | None, str]:
    return run(["quality", "run", "--change", "c1", "--root", str(root), *extra], capsys)


def test_each_lane_keeps_its_own_result_and_the_worst_decides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(
        tmp_path,
        {
            "lint": {"command": ["sh", "-c", "echo lint-ok"]},
            "types": {
                "command": ["sh", "-c", 'echo type""-error-here >&2; exit 2'],
                "repositories": ["self"],
            },
            "e2e": {"command": ["sh", "-c", "exit 9"], "repositories": ["other"]},
        },
    )
    code, doc, err = _quality(root, capsys, "--json")
    assert code == 1
    assert doc is not None and doc["status"] == "fail" and doc["change"] == "c1"
    lanes = {lane["lane"]: lane for lane in doc["lanes"]}
    assert set(lanes) == {"lint", "types"}  # e2e is for a repository the change does not have
    assert lanes["lint"]["status"] == "pass" and lanes["lint"]["exitCode"] == 0
    assert lanes["types"]["status"] == "fail" and lanes["types"]["exitCode"] == 2
    assert "score" not in json.dumps(doc) and "average" not in json.dumps(doc)
    # Each lane's details are in the command log (stderr), not in the summary document.
    assert "lint-ok" in err and "type-error-here" in err
    assert "type-error-here" not in json.dumps(doc)


def test_all_green_passes_and_stdout_is_empty_without_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path, {"lint": {"command": ["sh", "-c", "echo fine"]}})
    capsys.readouterr()
    from changeloop.cli.main import main

    assert main(["quality", "run", "--change", "c1", "--root", str(root)]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "quality: pass" in err


def test_lanes_run_in_parallel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each lane waits for the other's marker: run one after the other, both would time out."""
    wait = "touch {me}; i=0; while [ ! -e {other} ]; do i=$((i+1)); [ $i -gt 200 ] && exit 7; sleep 0.05; done"
    root = _workspace(
        tmp_path,
        {
            "a": {"command": ["sh", "-c", wait.format(me="a.mark", other="b.mark")]},
            "b": {"command": ["sh", "-c", wait.format(me="b.mark", other="a.mark")]},
        },
    )
    code, doc, err = _quality(root, capsys, "--json")
    assert code == 0, err
    assert doc is not None and [lane["status"] for lane in doc["lanes"]] == ["pass", "pass"]


def test_plain_runner_leaves_no_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _workspace(tmp_path, {"lint": {"command": ["true"]}})
    assert _quality(root, capsys)[0] == 0
    assert not (root / ".changeloop").exists()


def test_a_missing_tool_and_a_timeout_fail_their_lane_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(
        tmp_path,
        {
            "ok": {"command": ["true"]},
            "ghost": {"command": ["no-such-tool-xyz"]},
            "slow": {"command": ["sleep", "30"], "timeoutMs": 200},
        },
    )
    code, doc, _ = _quality(root, capsys, "--json")
    assert code == 1 and doc is not None
    lanes = {lane["lane"]: lane for lane in doc["lanes"]}
    assert lanes["ok"]["status"] == "pass"
    assert lanes["ghost"]["status"] == "fail" and "no-such-tool-xyz" in lanes["ghost"]["reason"]
    assert lanes["slow"]["status"] == "fail" and "timed out" in lanes["slow"]["reason"]


def test_no_lane_for_the_change_is_not_a_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path, {"lint": {"command": ["true"], "repositories": ["web"]}})
    code, doc, err = _quality(root, capsys, "--json")
    assert code == 1 and doc is not None and doc["status"] == "inconclusive"
    assert doc["lanes"] == [] and "not a pass" in err


def test_unknown_key_is_refused_naming_file_line_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path, {})
    (root / "quality" / "foundation-quality.json").write_text(
        textwrap.dedent("""\
        {
          "version": 1,
          "lanes": {
            "lint": {
              "command": ["npm", "run", "lint"],
              "repos": ["web"]
            }
          }
        }
        """)
    )
    code, doc, err = _quality(root, capsys, "--json")
    assert code == 2 and doc is not None
    error = doc["errors"][0]
    assert error["path"] == "quality/foundation-quality.json"
    assert (error["line"], error["column"]) == (6, 7)
    assert "'repos'" in error["message"] and "repositories" in error["message"]
    assert "quality/foundation-quality.json:6:7" in err


def test_json_syntax_duplicate_keys_versions_and_types(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path, {})
    path = root / "quality" / "foundation-quality.json"
    cases = {
        '{\n  "version": 1,\n  "lanes": {,}\n}\n': ("json_syntax", 3),
        '{"version": 1, "version": 1, "lanes": {}}': ("duplicate_key", 1),
        # the second 'a' of one object, not the 'a' of another object (docs/design.md)
        '{"version": 1,\n "lanes": {"a": {"command": ["x"]},\n  "b": {"command": ["y"]},\n'
        '  "a": {"command": ["z"]}}}': ("duplicate_key", 4),
        '{"version": 2, "lanes": {"a": {"command": ["x"]}}}': ("version_newer", 1),
        '{"version": 1, "lanes": {"a": {"command": "npm run lint"}}}': ("command_not_list", 1),
        '{"version": 1}': ("missing_key", 1),
    }
    for text, (code_name, line) in cases.items():
        path.write_text(text)
        code, doc, _ = _quality(root, capsys, "--json")
        assert code == 2 and doc is not None, text
        assert doc["errors"][0]["code"] == code_name, (text, doc)
        assert doc["errors"][0].get("line") == line, (text, doc)


def test_the_schema_ships_in_the_package() -> None:
    from changeloop import schemas

    schema = schemas.load("foundation-quality-v1.json")
    assert schema["additionalProperties"] is False
    lane = schema["properties"]["lanes"]["additionalProperties"]
    assert lane["additionalProperties"] is False


def test_missing_file_is_a_refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_repo(tmp_path / "ws", {"README": "x\n"})
    make_change(root, "c1", "version: 3\nrequires: [static-analysis]\n")
    code, doc, _ = _quality(root, capsys, "--json")
    assert code == 2 and doc is not None and doc["errors"][0]["code"] == "quality_file_missing"


def test_init_previews_the_lanes_and_doctor_says_pilot_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path, {"lint": {"command": ["true"]}})
    code, doc, _ = run(["evidence", "init", "c1", "--root", str(root), "--json"], capsys)
    assert code == 0 and doc is not None
    assert "command: [changeloop, quality, run, --change, c1]" in doc["diff"]
    assert "static-analysis:" in doc["diff"] and "adapter: command" in doc["diff"]
    code, doc, _ = run(["evidence", "doctor", "c1", "--root", str(root), "--json"], capsys)
    assert doc is not None
    kinds = {f["kind"]: f for f in doc["findings"]}
    finding = kinds["quality-lanes-not-configured"]
    assert "pilot" in finding["suggested_action"]
    assert finding["playbook_command"] == "changeloop quality run --change c1"
    # Configured: doctor is satisfied.
    assert run(["evidence", "init", "c1", "--root", str(root), "--write"], capsys)[0] == 0
    code, doc, _ = run(["evidence", "doctor", "c1", "--root", str(root), "--json"], capsys)
    assert doc is not None
    assert "quality-lanes-not-configured" not in {f["kind"] for f in doc["findings"]}


def test_without_the_file_or_the_capability_nothing_is_derived(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(
        tmp_path, {"lint": {"command": ["true"]}}, evidence="version: 3\nrequires: [test]\n"
    )
    _code, doc, _ = run(["evidence", "init", "c1", "--root", str(root), "--json"], capsys)
    assert doc is not None and "quality" not in doc["diff"]
    _code, doc, _ = run(["evidence", "doctor", "c1", "--root", str(root), "--json"], capsys)
    assert doc is not None
    assert "quality-lanes-not-configured" not in {f["kind"] for f in doc["findings"]}
