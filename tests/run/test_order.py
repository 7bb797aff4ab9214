"""The scheduler's hint of which providers will be reused (``run.order.likely_cached``).

After one input changed, the verified no-change record says which providers' inputs
are unchanged; those are hinted as reused without computing their fingerprints first,
so the provider that must run starts at once. A hint only orders the run: what is
reused is still decided by each provider's own fingerprint and verified cache entry.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import inputs_change, make_repo, prove_json

from changeloop.cli.main import main

PROVIDERS = {"pa": "src/a/**", "pb": "src/b/**", "pc": "src/c/**"}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    files = {f"src/{n[1]}/m.py": f"{n} = 1\n" for n in PROVIDERS}
    root = make_repo(tmp_path / "ws", {**files, ".gitignore": ".changeloop/\n"})
    inputs_change(root, "c", {name: [glob] for name, glob in PROVIDERS.items()})
    return root


def _states(doc: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["state"] for p in doc["providers"]}


def _decision(root: Path, doc: dict[str, Any]) -> str | None:
    run = json.loads((root / ".changeloop" / "runs" / doc["runId"] / "run.json").read_text())
    found: str | None = run.get("decision")
    return found


def _entry_of(root: Path, doc: dict[str, Any], provider: str) -> Path:
    """The cache entry holding ``provider``'s receipt (found by its bytes)."""
    from changeloop.caching import local as cache

    (receipt,) = next(p for p in doc["providers"] if p["name"] == provider)["receipts"]
    data = (root / receipt["path"]).read_bytes()
    cache_dir = root / ".changeloop" / "cache"
    for path in cache_dir.iterdir():
        if cache.load(cache_dir, "sha256:" + path.stem) == [data]:
            return path
    raise AssertionError(f"no cache entry holds {provider}'s receipt")


def test_a_provider_hinted_as_reused_still_runs_when_its_entry_is_gone(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pa's inputs are unchanged since the record (the hint says reused), but its cache
    entry is gone: it runs, exactly as a re-prove without the record would have it."""
    code, first = prove_json(ws, "c", capsys=capsys)
    assert code == 0
    code, again = prove_json(ws, "c", capsys=capsys)
    assert code == 0 and _decision(ws, again) == "no-change"  # the record holds
    _entry_of(ws, first, "pa").unlink()
    (ws / "src/c/m.py").write_text("pc = 2\n")  # the record misses; pa and pb are carried
    capsys.readouterr()
    code = main(["prove", "c", "--root", str(ws), "--json"])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert code == 0 and _decision(ws, doc) is None
    assert _states(doc) == {"pa": "ran", "pb": "cached", "pc": "ran"}
    started = [ln.split("▶ ")[1].split()[0] for ln in captured.err.splitlines() if "▶ " in ln]
    assert started == ["pc", "pa"], captured.err  # pc first: the hint put pa with the reused


def test_without_a_record_the_hint_is_each_fingerprint(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No record to carry from (deleted): the hint reads each provider's cache entry by its
    fingerprint, and the provider whose input changed is still the one started."""
    from changeloop.nochange.key import record_path

    assert prove_json(ws, "c", capsys=capsys)[0] == 0
    record = record_path(ws / ".changeloop", "c")
    assert record is not None and record.exists()
    record.unlink()
    (ws / "src/b/m.py").write_text("pb = 2\n")
    capsys.readouterr()
    code = main(["prove", "c", "--root", str(ws), "--json"])
    captured = capsys.readouterr()
    assert code == 0
    assert _states(json.loads(captured.out)) == {"pa": "cached", "pb": "ran", "pc": "cached"}
    started = [ln.split("▶ ")[1].split()[0] for ln in captured.err.splitlines() if "▶ " in ln]
    assert started == ["pb"], captured.err
