"""runs/<id>/run.json: what the report's timeline is drawn from (slot, start/end, state, origin)."""

from __future__ import annotations

import itertools
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import make_change, make_repo

from changeloop.cli.main import main
from changeloop.errors import ChangeloopError
from changeloop.run import runlog

PY = sys.executable


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _workspace(tmp: Path) -> Path:
    root = make_repo(tmp / "ws", {"a.txt": "a\n"})
    sleep = f'["{PY}", -c, "import time; time.sleep(0.2)"]'
    make_change(
        root,
        "c1",
        "version: 3\nclaims:\n  x: {requires: [test]}\n",
        f"""
        version: 1
        providers:
          first: {{adapter: command, capability: test, command: {sleep}, claims: [x]}}
          second: {{adapter: command, capability: build, command: {sleep}}}
          third: {{adapter: command, capability: pack, command: {sleep}, dependsOn: [first]}}
          broken: {{adapter: command, capability: lint, command: ["{PY}", -c, "raise SystemExit(1)"]}}
          after-broken: {{adapter: command, capability: docs, command: {sleep}, dependsOn: [broken]}}
        """,
    )
    return root


def _run_json(root: Path) -> dict[str, Any]:
    runs = [json.loads((r / "run.json").read_text()) for r in (root / ".changeloop/runs").iterdir()]
    out: dict[str, Any] = max(runs, key=lambda r: r["startedOn"])
    return out


def test_run_json_records_slots_times_states_and_dependencies(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    assert main(["prove", "c1", "--root", str(root), "--jobs", "2"]) == 0  # lint is not required
    doc = _run_json(root)
    assert doc["schema"] == "changeloop/run@1" and doc["change"] == "c1" and doc["slots"] == 2
    providers = doc["providers"]  # keyed by provider name
    assert set(providers) == {"first", "second", "third", "broken", "after-broken"}
    for name in ("first", "second", "third", "broken"):
        p = providers[name]
        assert p["state"] == "ran" and p["origin"] == "local", p
        assert p["slot"] in (0, 1)  # never more slots than --jobs
        assert _when(p["start"]) <= _when(p["end"])
        assert p["receipts"] and (root / p["receipts"][0]).is_file()
    assert providers["third"]["dependencies"] == ["first"]
    assert _when(providers["third"]["start"]) >= _when(providers["first"]["end"])
    skipped = providers["after-broken"]
    assert skipped["state"] == "not-run" and skipped["slot"] is None and skipped["start"] is None
    assert "broken" in skipped["reason"]
    # Two providers holding the same slot never overlap in time.
    spans = sorted(
        (p["slot"], _when(p["start"]), _when(p["end"])) for p in providers.values() if p["start"]
    )
    for (slot_a, _, end_a), (slot_b, start_b, _) in itertools.pairwise(spans):
        if slot_a == slot_b:
            assert start_b >= end_a


def test_cached_providers_are_recorded_as_cached_from_the_cache(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    main(["prove", "c1", "--root", str(root), "--jobs", "2"])
    main(["prove", "c1", "--root", str(root), "--jobs", "2"])
    providers = _run_json(root)["providers"]
    assert providers["first"]["state"] == "cached" and providers["first"]["origin"] == "cache"
    assert providers["first"]["durationMs"] is None
    assert providers["broken"]["state"] == "ran"


def test_a_missing_or_foreign_run_json_is_a_clear_refusal(tmp_path: Path) -> None:
    with pytest.raises(ChangeloopError) as missing:
        runlog.load(tmp_path)
    assert "run.json does not exist" in missing.value.problems[0].message
    (tmp_path / "run.json").write_text('{"schema": "other"}')
    with pytest.raises(ChangeloopError) as foreign:
        runlog.load(tmp_path)
    assert foreign.value.problems[0].code == "run_record_unreadable"
