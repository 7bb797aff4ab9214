"""The no-change answer stays cheap without deciding anything differently.

What a re-prove answered from its record may import is checked in a fresh
interpreter (the only honest place: pytest has imported everything already);
the content check that runs on a thread of its own must still give the content's
verdict first and hand its trees to the full path.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from prove_helpers import git, make_change, make_repo, prove_json

from changeloop.cli.board import FLUSH_S, Progress
from changeloop.cli.main import main
from changeloop.nochange.key import record_path

EXECUTION = """\
version: 1
providers:
  alpha:
    adapter: command
    command: [sh, -c, "exit 0"]
    inputs: ["src/a/**"]
  beta:
    adapter: command
    command: [sh, -c, "exit 0"]
    inputs: ["src/b/**"]
"""

# Imported by a full prove, never needed to answer from the record.
NOT_ON_THE_FAST_PATH = (
    "asyncio",  # the board's timer needs a running loop, which a no-change answer never has
    "anyio",  # only ending a process group needs it, which an answer never does
    "anyio._backends._asyncio",
    "decimal",  # RFC 8785 needs it for floats only; the record holds none
    "changeloop.records",  # writing a record needs the run's records; answering does not
    "rich",
    "changeloop.run.engine",
    "changeloop.model",  # two dozen dataclasses; finding the change needs only ChangeRef
    "changeloop.plan",
    "changeloop.detect",
    "changeloop.sandboxes",
    "changeloop.run.carried",  # the inputs digests are handed on only on a miss
    "changeloop.cli.evidence",  # other verbs' parsers
    "jsonschema",
    "cryptography",  # the record's seal is an HMAC of the workspace key's seed
)

DRIVER = """\
import json, sys
from changeloop.cli.main import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as fh:
    json.dump({"code": code, "modules": sorted(sys.modules)}, fh)
"""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = make_repo(
        tmp_path / "ws",
        {"src/a/mod.py": "A = 1\n", "src/b/mod.py": "B = 1\n", ".gitignore": ".changeloop/\n"},
    )
    make_change(root, "c", "version: 3\nrequires: [alpha, beta]\n", EXECUTION)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    return root


def _prove_err(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    code = main(["prove", "c", "--root", str(root), "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def _handed_trees(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    """The content trees each full path is handed by the no-change check, as they come."""
    import changeloop.cli.prove.full as full

    handed: list[dict[str, str]] = []
    real = full.prove_full

    def spy(*args: Any, **kwargs: Any) -> int:
        handed.append(dict(args[3]))
        return real(*args, **kwargs)

    monkeypatch.setattr(full, "prove_full", spy)
    return handed


def _decision(root: Path, doc: dict[str, Any]) -> str | None:
    run = json.loads((root / ".changeloop" / "runs" / doc["runId"] / "run.json").read_text())
    found: str | None = run.get("decision")
    return found


def test_a_no_change_answer_imports_nothing_a_full_run_needs(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, first = prove_json(ws, "c", capsys=capsys)
    assert code == 0 and {p["state"] for p in first["providers"]} == {"ran"}
    out = tmp_path / "modules.json"
    env = {k: v for k, v in os.environ.items() if k != "CHANGELOOP_EXPLAIN_NOCHANGE"}
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(out), "prove", "c", "--root", str(ws), "--json"],
        env=env,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    doc = json.loads(proc.stdout)
    assert _decision(ws, doc) == "no-change"
    modules = set(json.loads(out.read_text())["modules"])
    assert "changeloop.nochange" in modules  # the driver did answer from the record
    imported = [name for name in NOT_ON_THE_FAST_PATH if name in modules]
    assert imported == [], f"a no-change answer imported {imported}"


def test_progress_lines_still_wait_for_the_event_loops_timer() -> None:
    """Without importing asyncio itself, the board still batches lines on a running loop."""
    stub = cast("Any", SimpleNamespace(providers=dict.fromkeys(["a", "b", "c"])))

    def event(name: str, kind: str) -> Any:
        return SimpleNamespace(provider=name, kind=kind, detail=None)

    async def run() -> tuple[str, str]:
        buffer = io.StringIO()
        progress = Progress(stub, buffer)
        progress.event(event("a", "started"))  # the first line is written at once
        progress.event(event("b", "started"))  # the next one waits for the timer
        before = buffer.getvalue()
        await asyncio.sleep(FLUSH_S * 4)
        return before, buffer.getvalue()

    before, after = asyncio.run(run())
    assert "a running" in before and "b running" not in before
    assert "b running" in after


def test_outside_an_event_loop_every_line_is_written_at_once() -> None:
    stub = cast("Any", SimpleNamespace(providers=dict.fromkeys(["a", "b"])))
    buffer = io.StringIO()
    progress = Progress(stub, buffer)
    for name in ("a", "b"):
        progress.event(cast("Any", SimpleNamespace(provider=name, kind="started", detail=None)))
    assert "a running" in buffer.getvalue() and "b running" in buffer.getvalue()


def test_the_content_verdict_comes_first_and_its_tree_reaches_the_full_path(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Content and a cache entry both changed: the content is named (checked on its own
    thread while the cache is checked here) and only the edited provider runs."""
    code, first = prove_json(ws, "c", capsys=capsys)
    assert code == 0
    (ws / "src" / "a" / "mod.py").write_text("A = 2\n")
    cache = ws / ".changeloop" / "cache"
    entries = sorted(p for p in cache.iterdir() if p.is_file())
    assert entries
    entries[0].write_bytes(entries[0].read_bytes() + b" ")  # size and mtime change
    monkeypatch.setenv("CHANGELOOP_EXPLAIN_NOCHANGE", "1")
    code, doc, err = _prove_err(ws, capsys)
    assert "no-change record not used: the content of repository self changed" in err, err
    assert _decision(ws, doc) is None
    assert {p["name"]: p["state"] for p in doc["providers"]}["alpha"] == "ran"
    # The run directory laid out while the content was checked is gone: the first run's
    # and the full path's are the only ones, each complete.
    runs = sorted(p for p in (ws / ".changeloop" / "runs").iterdir() if p.is_dir())
    assert [p.name for p in runs] == sorted([first["runId"], doc["runId"]])
    assert all((p / "run.json").is_file() for p in runs)


def test_a_git_failure_on_the_content_thread_falls_back_without_a_traceback(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The thread's error is raised where the decision is made: a fallback, then the full
    path's own answer (here its refusal: git cannot read the repository's index)."""
    code, _ = prove_json(ws, "c", capsys=capsys)
    assert code == 0
    record = record_path(ws / ".changeloop", "c")
    assert record is not None and record.is_file()
    (ws / ".git" / "index").write_bytes(b"not an index")
    monkeypatch.setenv("CHANGELOOP_EXPLAIN_NOCHANGE", "1")
    code, doc, err = _prove_err(ws, capsys)
    assert "no-change record not used:" in err, err
    assert "Traceback" not in err
    assert code == 2, (code, doc)
    assert doc["errors"] and doc["errors"][0]["code"] == "git_failed"


def test_a_recorded_tree_pruned_by_git_gc_is_not_handed_to_the_full_path(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorded tree's object is gone (pruned) and something else missed: the tree the
    check hands on to the full path is one it wrote itself, so the full path can read it."""
    code, first = prove_json(ws, "c", capsys=capsys)
    assert code == 0
    record = record_path(ws / ".changeloop", "c")
    assert record is not None
    from changeloop.signing.dsse import parse_envelope

    payload = json.loads(parse_envelope(record.read_bytes()).payload)
    (tree,) = [r["tree"] for r in payload["repositories"].values()]
    loose = ws / ".git" / "objects" / tree[:2] / tree[2:]
    assert loose.is_file()
    loose.unlink()  # as `git gc --prune` does to an unreachable tree
    cache = ws / ".changeloop" / "cache"
    next(p for p in sorted(cache.iterdir()) if p.is_file()).unlink()  # a miss elsewhere
    monkeypatch.setenv("CHANGELOOP_EXPLAIN_NOCHANGE", "1")
    code, doc, err = _prove_err(ws, capsys)
    assert "no-change record not used: cache entry" in err, err
    assert code == 0, doc.get("errors")
    assert sorted(p["state"] for p in doc["providers"]) == ["cached", "ran"]
    assert doc["runId"] != first["runId"]


TWO_REPOS_EXECUTION = """\
version: 1
providers:
  alpha:
    adapter: command
    repository: other
    command: [sh, -c, "exit 0"]
  beta:
    adapter: command
    repository: self
    command: [sh, -c, "exit 0"]
"""


@pytest.mark.parametrize("edited", ["self", "other", "both"])
def test_two_repositories_each_miss_is_named_and_the_record_answers_again(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    edited: str,
) -> None:
    """The workspace root's identity starts before the state checks, the other
    repository's after them: either repository's edit is a miss naming the first
    changed one in the record's order, and the re-recorded answer holds again."""
    root = make_repo(tmp_path / "ws", {"app.py": "A\n", ".gitignore": ".changeloop/\nother/\n"})
    make_repo(root / "other", {"api.py": "B\n"})
    make_change(
        root,
        "c",
        "version: 3\nrepositories: {other: other, self: .}\n"
        "requires: {alpha: [other], beta: [self]}\n",
        TWO_REPOS_EXECUTION,
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    code, _ = prove_json(root, "c", capsys=capsys)
    assert code == 0
    code, doc, err = _prove_err(root, capsys)
    assert code == 0 and _decision(root, doc) == "no-change", err
    record = record_path(root / ".changeloop", "c")
    assert record is not None
    from changeloop.signing.dsse import parse_envelope

    order = list(json.loads(parse_envelope(record.read_bytes()).payload)["repositories"])
    assert sorted(order) == ["other", "self"]
    if edited in ("self", "both"):
        (root / "app.py").write_text("A2\n")
    if edited in ("other", "both"):
        (root / "other" / "api.py").write_text("B2\n")
    monkeypatch.setenv("CHANGELOOP_EXPLAIN_NOCHANGE", "1")
    code, doc, err = _prove_err(root, capsys)
    first = order[0] if edited == "both" else edited
    assert f"no-change record not used: the content of repository {first} changed" in err, err
    assert code == 0 and _decision(root, doc) is None
    ran = {p["name"] for p in doc["providers"] if p["state"] == "ran"}
    assert ran == {"self": {"beta"}, "other": {"alpha"}, "both": {"alpha", "beta"}}[edited]
    monkeypatch.delenv("CHANGELOOP_EXPLAIN_NOCHANGE")
    code, doc, _ = _prove_err(root, capsys)
    assert code == 0 and _decision(root, doc) == "no-change"


@pytest.mark.parametrize(
    "repositories",
    [
        "not a mapping",
        {"self": {"path": 5}},
        {"self": "not a mapping"},
        {"self": {"path": "ROOT"}},  # no tree
        {"self": {"path": "ROOT", "tree": "0" * 40, "symlinks": []}},  # forged, unsigned
        {"self": {"path": "/nonexistent/elsewhere", "tree": "0" * 40, "symlinks": []}},
        {"other": {"path": "OTHER", "tree": "0" * 40, "symlinks": []}},  # a real repository
    ],
)
def test_a_forged_record_of_any_shape_is_a_quiet_miss(
    ws: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    repositories: Any,
) -> None:
    """Its repository paths are looked at before its signature is checked: whatever they
    hold, the answer is the full path's, never a traceback."""
    import base64

    from changeloop.nochange.key import PAYLOAD_TYPE, SCHEMA

    code, _ = prove_json(ws, "c", capsys=capsys)
    assert code == 0
    record = record_path(ws / ".changeloop", "c")
    assert record is not None
    other = make_repo(ws.parent / "other", {"x.txt": "x\n"})
    shape = json.loads(
        json.dumps(repositories).replace("ROOT", str(ws)).replace("OTHER", str(other))
    )
    payload = json.dumps({"schema": SCHEMA, "repositories": shape}).encode()
    record.write_text(
        json.dumps(
            {
                "payloadType": PAYLOAD_TYPE,
                "payload": base64.b64encode(payload).decode(),
                "signatures": [{"keyid": "", "sig": base64.b64encode(b"x" * 64).decode()}],
            }
        )
    )
    handed = _handed_trees(monkeypatch)
    monkeypatch.setenv("CHANGELOOP_EXPLAIN_NOCHANGE", "1")
    code, doc, err = _prove_err(ws, capsys)
    assert "no-change record not used:" in err, err
    assert "Traceback" not in err and "unexpected error" not in err
    assert code == 0 and _decision(ws, doc) is None
    assert [set(trees) - {str(ws.resolve())} for trees in handed] == [set()]  # the root's only
    assert {p["state"] for p in doc["providers"]} == {"cached"}


def test_without_a_thread_to_be_had_the_check_runs_in_place(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``can't start new thread`` (a process at its limit) is not a crash: the content
    is identified on the calling thread and the record still answers."""
    import threading

    code, _ = prove_json(ws, "c", capsys=capsys)
    assert code == 0

    def refuse(*_: object) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    code, doc, err = _prove_err(ws, capsys)
    assert code == 0 and _decision(ws, doc) == "no-change", err


BEGIN = """\
import argparse, json, sys
from pathlib import Path
from changeloop.cli.prove.nochange import config_before_plan
args = argparse.Namespace(root=Path(sys.argv[2]), change="c", sandbox="none")
before = config_before_plan(args, answering=True)
heavy = ("changeloop.nochange.answer", "changeloop.signing.dsse", "cryptography")
imported = [name for name in heavy if name in sys.modules]
began = len(before.content._threads)
before.content.verdict()  # raises the content's miss, if any
with open(sys.argv[1], "w") as fh:
    json.dump({"imported": imported, "began": began, "trees": before.content._trees}, fh)
"""


def test_the_roots_git_work_begins_before_the_decision_is_imported(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once the change is known, the root's content identity is already under way on its
    own thread, while the verification and the rest of the decision are still to import."""
    code, _ = prove_json(ws, "c", capsys=capsys)
    assert code == 0
    out = tmp_path / "begun.json"
    proc = subprocess.run(
        [sys.executable, "-c", BEGIN, str(out), str(ws)], capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    found = json.loads(out.read_text())
    assert found["began"] == 1 and found["imported"] == []
    assert list(found["trees"]) == [str(ws.resolve())]


QUIET_THREAD = """\
import argparse, json, sys, threading
from pathlib import Path

class Seen:  # every import that reaches the finders, with the thread that asked
    found = []
    def find_spec(self, name, path=None, target=None):
        self.found.append((threading.current_thread().name, name))
        return None

sys.meta_path.insert(0, Seen())
from changeloop.cli.prove.nochange import config_before_plan
args = argparse.Namespace(root=Path(sys.argv[2]), change="c", sandbox="none")
before = config_before_plan(args, answering=True)
before.content.verdict()
with open(sys.argv[1], "w") as fh:
    json.dump([name for thread, name in Seen.found if thread == "changeloop-content"], fh)
"""


def test_the_content_thread_imports_nothing(ws: Path, tmp_path: Path) -> None:
    """Its code is imported before it starts: an import on it makes the main thread wait for
    the import lock inside a lock's weakref callback, where a signal's KeyboardInterrupt is
    swallowed ("Exception ignored in") and the interrupt lost."""
    out = tmp_path / "imports.json"
    proc = subprocess.run(
        [sys.executable, "-c", QUIET_THREAD, str(out), str(ws)], capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert json.loads(out.read_text()) == []


def test_a_record_that_does_not_verify_hands_on_only_the_roots_own_tree(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The root's git work begins before any record is read: the root is ours, so its tree
    is handed to the full path; a record signed with another key answers nothing and hands
    on nothing of its own (its repository paths were never believed)."""
    code, _ = prove_json(ws, "c", capsys=capsys)
    assert code == 0
    record = record_path(ws / ".changeloop", "c")
    assert record is not None
    envelope = json.loads(record.read_bytes())
    envelope["signatures"][0]["sig"] = "A" * 86 + "=="
    record.write_text(json.dumps(envelope))
    (ws / "src" / "a" / "mod.py").write_text("A = 3\n")
    handed = _handed_trees(monkeypatch)
    monkeypatch.setenv("CHANGELOOP_EXPLAIN_NOCHANGE", "1")
    code, doc, err = _prove_err(ws, capsys)
    assert "the record does not verify with the workspace key" in err, err
    assert [list(trees) for trees in handed] == [[str(ws.resolve())]]
    assert {p["name"]: p["state"] for p in doc["providers"]} == {"alpha": "ran", "beta": "cached"}
