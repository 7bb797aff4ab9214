"""Writing alone: records in, files on disk (run directory, latest/, cache), failures named."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from changeloop.caching import local as cache
from changeloop.records import ProviderReport, ReceiptEntry
from changeloop.run.writer import ReceiptWriter
from changeloop.verdict import ReceiptView
from changeloop.workspace.state import StateDir

FP = "sha256:" + "c" * 64


def _entry(envelope: bytes, *, cached: bool = False) -> ReceiptEntry:
    view = ReceiptView(
        provider="unit",
        capability="test",
        status="pass",
        repositories=("self",),
        reason=None,
        claims={},
        input_mode=None,
        citations={},
    )
    return ReceiptEntry(
        "test",
        "unit",
        "pass",
        None,
        "sha256:x",
        ".changeloop/runs/r1/unit/unit.test.json",
        view,
        envelope=envelope,
        cached=cached,
    )


def _state(tmp_path: Path) -> tuple[StateDir, Path]:
    root = tmp_path / "ws"
    root.mkdir()
    state = StateDir(root)
    run_dir = root / ".changeloop" / "runs" / "r1"
    run_dir.mkdir(parents=True)
    return state, run_dir


def test_receipts_go_to_the_run_and_latest_and_passes_to_the_cache(tmp_path: Path) -> None:
    state, run_dir = _state(tmp_path)
    writer = ReceiptWriter(state, run_dir, "demo")
    report = ProviderReport(
        "unit", "command", "self", state="ran", receipts=(_entry(b'{"e":1}'),), cache=True
    )
    writer.write(report, FP)
    assert anyio.run(writer.drain) == {}
    assert (run_dir / "unit" / "unit.test.json").read_bytes() == b'{"e":1}'
    assert (state.latest("demo") / "unit.test.json").read_bytes() == b'{"e":1}'
    assert cache.entry_path(state.cache, FP).is_file()


def test_a_provider_that_may_not_be_cached_leaves_no_cache_entry(tmp_path: Path) -> None:
    state, run_dir = _state(tmp_path)
    writer = ReceiptWriter(state, run_dir, "demo")
    writer.write(ProviderReport("unit", "command", "self", receipts=(_entry(b"{}"),)), FP)
    anyio.run(writer.drain)
    assert not cache.entry_path(state.cache, FP).exists()


def test_a_reused_receipt_already_in_latest_is_not_written_there_again(tmp_path: Path) -> None:
    state, run_dir = _state(tmp_path)
    latest = state.latest("demo")
    latest.mkdir(parents=True)
    (latest / "unit.test.json").write_bytes(b'{"e":1}')
    before = os.stat(latest / "unit.test.json").st_ino
    writer = ReceiptWriter(state, run_dir, "demo")
    writer.write(
        ProviderReport("unit", "command", "self", receipts=(_entry(b'{"e":1}', cached=True),))
    )
    anyio.run(writer.drain)
    assert os.stat(latest / "unit.test.json").st_ino == before  # untouched, not replaced
    assert (run_dir / "unit" / "unit.test.json").read_bytes() == b'{"e":1}'


def test_a_directory_in_the_way_makes_drain_name_the_provider(tmp_path: Path) -> None:
    state, run_dir = _state(tmp_path)
    # a file where the provider's run directory must go: the write fails whoever runs it
    (run_dir / "unit").write_text("in the way")
    writer = ReceiptWriter(state, run_dir, "demo")
    writer.write(ProviderReport("unit", "command", "self", receipts=(_entry(b"{}"),)))
    lost = anyio.run(writer.drain)
    assert set(lost) == {"unit"} and isinstance(lost["unit"], OSError)
