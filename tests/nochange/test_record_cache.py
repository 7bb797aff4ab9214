"""The record binds the cache entries a re-prove would reuse: exactly this run's receipts.

The record is written from the receipt bytes the run holds; each provider's cache
entry is read once and must hold exactly those envelopes. These tests change an
entry between the run's writing it and the record being made (the window a
concurrent process has): an entry holding other bytes leaves no record, and an
entry holding the same envelopes in another serialisation is still recognised.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import make_change, make_repo, prove_json
from repo_helpers import commit_all

from changeloop.caching import local as cache
from changeloop.cli.prove import full, nochange
from changeloop.nochange.key import record_path

EXECUTION = """\
version: 1
providers:
  a:
    adapter: command
    command: [sh, -c, "exit 0"]
    inputs: ["src/a/**"]
  b:
    adapter: command
    command: [sh, -c, "exit 0"]
    inputs: ["src/b/**"]
"""

Edit = Callable[[Path, str, list[bytes], list[bytes]], None]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = make_repo(
        tmp_path / "ws",
        {"src/a/m.py": "A = 1\n", "src/b/m.py": "B = 1\n", ".gitignore": ".changeloop/\n"},
    )
    make_change(root, "c", "version: 3\nrequires: [a, b]\n", EXECUTION)
    commit_all(root, "change")
    return root


def _decision(root: Path, doc: dict[str, Any]) -> str | None:
    run = json.loads((root / ".changeloop" / "runs" / doc["runId"] / "run.json").read_text())
    found: str | None = run.get("decision")
    return found


def _normal(doc: dict[str, Any]) -> dict[str, Any]:
    normal: dict[str, Any] = json.loads(json.dumps(doc).replace(doc["runId"], "RUN"))
    return normal


def _edit_b_before_the_record(monkeypatch: pytest.MonkeyPatch, edit: Edit) -> None:
    """Run ``edit`` on b's cache entry after the run wrote it, before the record is made."""
    remember = nochange.remember  # what the full path calls, as full.remember

    def edited(plan: Any, options: Any, result: Any, config: Any, steps: Any) -> None:
        fp = result.observed.fingerprints["b"]
        own = [e.envelope for e in result.providers["b"].receipts]
        other = [e.envelope for e in result.providers["a"].receipts]
        edit(cache.entry_path(result.observed.state / "cache", fp), fp, own, other)
        remember(plan, options, result, config, steps)

    monkeypatch.setattr(full, "remember", edited)


def _entry(fp: str, envelopes: list[bytes], *, indent: int | None = None) -> str:
    encoded = [base64.b64encode(e).decode() for e in envelopes]
    return json.dumps({"envelopes": encoded, "fingerprint": fp}, indent=indent)


def test_an_entry_holding_other_receipts_leaves_no_record(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def swap(path: Path, fp: str, _own: list[bytes], other: list[bytes]) -> None:
        path.write_text(_entry(fp, other))  # a pass signed by this key, but a's

    _edit_b_before_the_record(monkeypatch, swap)
    code, _doc = prove_json(ws, "c", capsys=capsys)
    assert code == 0
    record = record_path(ws / ".changeloop", "c")
    assert record is not None and not record.exists()
    monkeypatch.undo()
    code, doc = prove_json(ws, "c", capsys=capsys)
    assert code == 0 and _decision(ws, doc) is None  # the full path, as it must be


def test_an_entry_holding_the_same_receipts_otherwise_written_is_recognised(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def reformat(path: Path, fp: str, own: list[bytes], _other: list[bytes]) -> None:
        assert cache.load(path.parent, fp) == own  # the entry the run wrote holds them
        path.write_text(_entry(fp, own, indent=2))  # other bytes, the same envelopes

    _edit_b_before_the_record(monkeypatch, reformat)
    code, _doc = prove_json(ws, "c", capsys=capsys)
    assert code == 0
    monkeypatch.undo()
    code, fast = prove_json(ws, "c", capsys=capsys)
    assert code == 0 and _decision(ws, fast) == "no-change"
    assert {p["state"] for p in fast["providers"]} == {"cached"}
    record = record_path(ws / ".changeloop", "c")
    assert record is not None
    record.unlink()
    code, slow = prove_json(ws, "c", capsys=capsys)
    assert code == 0 and _decision(ws, slow) is None
    assert _normal(fast) == _normal(slow)


def test_an_entry_rewritten_after_the_record_is_not_believed(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The record keeps the status of the entry it compared: a later rewrite, even of the
    same bytes, is a file the record does not name (the full path answers)."""
    prove_json(ws, "c", capsys=capsys)
    code, doc = prove_json(ws, "c", capsys=capsys)
    assert code == 0 and _decision(ws, doc) == "no-change"
    entries = sorted((ws / ".changeloop" / "cache").iterdir())
    assert len(entries) == 2
    data = entries[0].read_bytes()
    entries[0].unlink()
    entries[0].write_bytes(data)  # a new inode holding the same bytes
    code, doc = prove_json(ws, "c", capsys=capsys)
    assert code == 0 and _decision(ws, doc) is None
