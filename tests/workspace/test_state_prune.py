"""``.changeloop/`` stays bounded: runs pruned as ``prove`` goes, the cache by age, a verb to see it.

Real proves of a real repository. Before, nothing was ever removed: every prove
added a run directory (and every edit a cache entry) for good.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import make_change, make_repo, prove_json
from repo_helpers import commit_all

from changeloop.cli.main import main
from changeloop.workspace.state import StateDir

EVIDENCE = """\
version: 3
claims:
  greeting:
    statement: says hello
    requires: [check]
"""
EXECUTION = """\
version: 1
providers:
  test:
    adapter: command
    capability: check
    claims: [greeting]
    command: [sh, -c, "cat app.txt"]
"""


def _workspace(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "ws", {"app.txt": "v1\n"})
    make_change(root, "c1", EVIDENCE, EXECUTION)
    make_change(root, "c2", EVIDENCE, EXECUTION)
    commit_all(root, "changes")
    return root


def _runs_of(root: Path, change: str) -> set[str]:
    runs = root / ".changeloop" / "runs"
    return {
        r.name
        for r in runs.iterdir()
        if json.loads((r / "run.json").read_text()).get("change") == change
    }


def test_prove_keeps_the_last_runs_of_its_change_and_no_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHANGELOOP_KEEP_RUNS", "3")
    root = _workspace(tmp_path)
    code, other = prove_json(root, "c2", capsys=capsys)
    assert code == 0
    seen: list[str] = []
    for n in range(7):
        code, doc = prove_json(root, "c1", *(["--no-cache"] if n % 2 else []), capsys=capsys)
        assert code == 0, doc
        seen.append(doc["runId"])
        assert _runs_of(root, "c1") == set(seen[-3:])  # the last three, the newest included
    assert _runs_of(root, "c2") == {other["runId"]}  # another change's runs are its own


def test_answers_from_the_record_keep_the_count_of_runs_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # an answer makes room for its run before it knows it holds: hit or miss, the count stays
    monkeypatch.setenv("CHANGELOOP_KEEP_RUNS", "2")
    root = _workspace(tmp_path)
    seen: list[str] = []
    decisions: list[str | None] = []
    for n in range(6):
        if n == 4:
            (root / "app.txt").write_text("v2\n")  # a miss: the full path runs and prunes
        code, doc = prove_json(root, "c1", capsys=capsys)
        assert code == 0, doc
        seen.append(doc["runId"])
        run = json.loads((root / ".changeloop" / "runs" / doc["runId"] / "run.json").read_text())
        decisions.append(run.get("decision"))
        assert _runs_of(root, "c1") == set(seen[-2:])
    assert decisions[2:4] == ["no-change", "no-change"], decisions
    assert decisions[4] != "no-change", decisions


def test_an_answer_laid_out_in_a_run_due_for_removal_holds_only_its_own_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the oldest run (a full one: logs, a report, its receipts) is due when the answer comes;
    # the answer takes its directory over: nothing of the old run may be left in it
    monkeypatch.setenv("CHANGELOOP_KEEP_RUNS", "2")
    root = _workspace(tmp_path)
    runs = root / ".changeloop" / "runs"
    code, first = prove_json(root, "c1", "--no-cache", capsys=capsys)
    assert code == 0
    old = {p.relative_to(runs / first["runId"]) for p in (runs / first["runId"]).rglob("*")}
    assert any(p.suffix == ".log" for p in old), old  # a full run's files are there to leave
    (runs / first["runId"] / "test" / "stray.txt").write_text("left by someone\n")
    (runs / first["runId"] / "elsewhere").mkdir()
    folder = (runs / first["runId"] / "test").stat().st_ino
    assert prove_json(root, "c1", "--no-cache", capsys=capsys)[0] == 0
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0
    run = runs / doc["runId"]
    assert json.loads((run / "run.json").read_text()).get("decision") == "no-change"
    assert not (runs / first["runId"]).exists()
    assert (run / "test").stat().st_ino == folder  # taken over: no directory made anew
    held = {str(p.relative_to(root)) for p in run.rglob("*") if p.is_file()}
    receipts = {r["path"] for entry in doc["providers"] for r in entry["receipts"]}
    assert held == receipts | {str((run / "run.json").relative_to(root))}
    assert {p.name for p in run.iterdir() if p.is_dir()} == {e["name"] for e in doc["providers"]}
    latest = root / ".changeloop" / "receipts" / "c1"
    for path in receipts:
        assert (root / path).read_bytes() == (latest / Path(path).name).read_bytes()


def test_a_spare_run_is_never_emptied_through_a_link(tmp_path: Path) -> None:
    # a link planted where the run due for removal was, or as one of its provider folders:
    # the take-over removes the link and never what it points to
    root = tmp_path / "ws"
    state = StateDir(root)
    state.runs.mkdir(parents=True)
    outside = tmp_path / "outside"
    (outside / "test").mkdir(parents=True)
    (outside / "test" / "keep.txt").write_text("not ours\n")
    spare = state.runs / "20200101T000000Z-aaaaaa"
    spare.symlink_to(outside, target_is_directory=True)
    run_id, run = state.new_run_dir("20200101T000001Z-bbbbbb", spare=spare, folders=["test"])
    assert run.is_dir() and not run.is_symlink() and list(run.iterdir()) == []
    assert (outside / "test" / "keep.txt").read_text() == "not ours\n"
    spare = state.runs / "20200101T000002Z-cccccc"
    spare.mkdir()
    (spare / "test").symlink_to(outside / "test", target_is_directory=True)
    run_id, run = state.new_run_dir("20200101T000003Z-dddddd", spare=spare, folders=["test"])
    assert run_id == "20200101T000003Z-dddddd" and list(run.iterdir()) == []
    assert (outside / "test" / "keep.txt").read_text() == "not ours\n"


def _age(path: Path, days: float) -> None:
    then = time.time() - days * 86400
    os.utime(path, (then, then))


def _age_access(path: Path, days: float) -> None:
    """Last used ``days`` ago, its modification time (checked by the record) kept."""
    os.utime(path, ns=(time.time_ns() - int(days * 86400e9), path.stat().st_mtime_ns))


def _cache(root: Path) -> set[str]:
    return {p.name for p in (root / ".changeloop" / "cache").glob("*.json")}


def test_prune_drops_unused_cache_entries_never_what_receipts_or_the_record_need(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _workspace(tmp_path)
    prove_json(root, "c1", capsys=capsys)  # v1's entry
    old = _cache(root)
    _content(root, "v2\n")
    prove_json(root, "c1", capsys=capsys)  # v2's entry
    (current,) = _cache(root) - old
    for name in old | {current}:  # both written 40 days ago, as far as their times say
        _age(root / ".changeloop" / "cache" / name, 40)
    code, doc = prove_json(root, "c1", capsys=capsys)  # cached: the no-change record is written
    assert code == 0 and {p["state"] for p in doc["providers"]} == {"cached"}
    _age_access(root / ".changeloop" / "cache" / current, 40)  # only record answers since
    capsys.readouterr()
    assert main(["state", "prune", "--root", str(root), "--json"]) == 0
    pruned: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert pruned["removed"]["cache"] == sorted(old)  # v1's: nothing refers to it any more
    assert _cache(root) == {current}  # v2's: the latest receipts and the record name it
    code, doc = prove_json(root, "c1", capsys=capsys)
    assert code == 0
    run = json.loads((root / ".changeloop" / "runs" / doc["runId"] / "run.json").read_text())
    assert run.get("decision") == "no-change"  # the record still answers: nothing it needs went


def _content(root: Path, text: str) -> None:
    (root / "app.txt").write_text(text)
    commit_all(root, text.strip())


def test_a_reused_entry_counts_as_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Reuse sets the entry's access time (its modification time, which the no-change record
    checks, stays): an entry reused lately is kept though nothing refers to it any more."""
    root = _workspace(tmp_path)
    prove_json(root, "c1", capsys=capsys)
    (v1,) = _cache(root)
    _content(root, "v2\n")
    prove_json(root, "c1", capsys=capsys)
    for name in _cache(root):
        _age(root / ".changeloop" / "cache" / name, 40)
    entry = root / ".changeloop" / "cache" / v1
    mtime = entry.stat().st_mtime_ns
    _content(root, "v1\n")
    _code, doc = prove_json(root, "c1", capsys=capsys)
    assert {p["state"] for p in doc["providers"]} == {"cached"}  # v1's entry, reused
    assert entry.stat().st_mtime_ns == mtime and time.time() - entry.stat().st_atime < 3600
    _content(root, "v2\n")  # the latest receipts move on: v1's entry is referred to no more
    prove_json(root, "c1", capsys=capsys)
    capsys.readouterr()
    assert main(["state", "prune", "--root", str(root), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["removed"]["cache"] == []
    assert entry.is_file()


def test_state_shows_what_is_held(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _workspace(tmp_path)
    for change in ("c1", "c1", "c2"):
        prove_json(root, change, capsys=capsys)
    capsys.readouterr()
    assert main(["state", "--root", str(root), "--json"]) == 0
    held = json.loads(capsys.readouterr().out)
    assert held["root"] == str(root) and held["state"] == ".changeloop"
    assert held["parts"]["runs"]["perChange"] == {"c1": 2, "c2": 1}
    assert held["parts"]["cache"]["files"] >= 1 and held["parts"]["cache"]["unused"] == 0
    assert held["total"]["bytes"] == sum(p["bytes"] for p in held["parts"].values())
    assert held["policy"] == {"keepRuns": 5, "cacheDays": 30.0}
    assert main(["state", "prune", "--root", str(root), "--keep-runs", "1", "--json"]) == 0
    pruned = json.loads(capsys.readouterr().out)
    assert len(pruned["removed"]["runs"]) == 1 and pruned["freed"]["files"] > 0


def _loose_objects(root: Path) -> set[str]:
    objects = root / ".git" / "objects"
    return {f"{d.name}{f.name}" for d in objects.iterdir() if len(d.name) == 2 for f in d.iterdir()}


def test_re_proves_of_unchanged_content_add_nothing_to_the_users_git_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The content identity writes the objects ``git add`` would, once per content."""
    root = _workspace(tmp_path)
    (root / "notes.txt").write_text("untracked, not ignored\n")
    assert prove_json(root, "c1", "--no-cache", capsys=capsys)[0] == 0
    first = _loose_objects(root)
    for _ in range(3):
        assert prove_json(root, "c1", "--no-cache", capsys=capsys)[0] == 0
    assert _loose_objects(root) == first
    (root / "app.txt").write_text("v2\n")
    assert prove_json(root, "c1", "--no-cache", capsys=capsys)[0] == 0
    grown = _loose_objects(root) - first
    assert 0 < len(grown) <= 4  # the edited file's blob and the trees above it
