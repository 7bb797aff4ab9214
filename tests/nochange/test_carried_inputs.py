"""Inputs digests carried from the no-change record (``run.carried``).

When one input changed, the full path takes each provider's inputs digest from
the signed record unless a changed path matches its globs, and lists only the
directories a changed provider's globs can reach. Every test compares with the
full computation: the record deleted, a full re-prove must compute the very same
fingerprints (each provider then reuses what the carried run stored — a wrong
carried digest would make it run), and exactly the providers whose inputs changed ran.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git, inputs_change, make_repo, prove_json

from changeloop.cli.main import main
from changeloop.fingerprints import fingerprint
from changeloop.fingerprints.fingerprint import InputsIndex, literal_dirs, subtree_entries
from changeloop.nochange.key import record_path

PROVIDERS = {
    "pa": ["src/a/**"],
    "pb": ["src/b/*.py"],
    "pc": ["src/c"],
    "pd": ["lib/**", "src/a/x.txt"],
    "pe": ["src/**/*.txt"],
    "pf": ["top.txt"],
    "pl": ["links/**"],
}
FILES = {
    "src/a/mod.py": "A = 1\n",
    "src/a/x.txt": "x\n",
    "src/b/mod.py": "B = 1\n",
    "src/b/data.json": "{}\n",
    "src/c/c.py": "C = 1\n",
    "lib/l.py": "L = 1\n",
    "top.txt": "top\n",
    "links/real.txt": "real\n",
    "other/o.py": "O = 1\n",
    ".gitignore": ".changeloop/\n",
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "ws", FILES)
    inputs_change(root, "c", PROVIDERS)
    return root


def _prove(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, doc = prove_json(root, "c", capsys=capsys)
    assert code == 0, doc
    return doc


def _fingerprints(root: Path, doc: dict[str, Any]) -> dict[str, str]:
    out = {}
    for entry in doc["providers"]:
        (receipt,) = entry["receipts"]
        envelope = json.loads((root / receipt["path"]).read_text())
        payload = json.loads(base64.b64decode(envelope["payload"]))
        out[entry["name"]] = payload["predicate"]["changeloop"]["fingerprint"]
    return out


def _ran(doc: dict[str, Any]) -> set[str]:
    return {p["name"] for p in doc["providers"] if p["state"] == "ran"}


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def _dir_to_file(root: Path) -> None:
    (root / "src/c/c.py").unlink()
    (root / "src/c").rmdir()
    (root / "src/c").write_text("now a file\n")


EDITS: dict[str, tuple[Callable[[Path], None], set[str]]] = {
    "matched file edited": (lambda r: _write(r, "src/a/mod.py", "A = 2\n"), {"pa"}),
    "file of three providers": (lambda r: _write(r, "src/a/x.txt", "y\n"), {"pa", "pd", "pe"}),
    "matched file added": (lambda r: _write(r, "src/b/new.py", "N = 1\n"), {"pb"}),
    "unmatched file added": (lambda r: _write(r, "src/b/new.md", "n\n"), set()),
    "matched file deleted": (lambda r: (r / "src/c/c.py").unlink(), {"pc"}),
    "mode changed": (lambda r: (r / "lib/l.py").chmod(0o755), {"pd"}),
    "symlink added": (lambda r: os.symlink("real.txt", r / "links/ln"), {"pl"}),
    "outside every input": (lambda r: _write(r, "other/o.py", "O = 2\n"), set()),
    "top-level glob": (lambda r: _write(r, "top.txt", "top 2\n"), {"pf"}),
    "directory became a file": (_dir_to_file, {"pc"}),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_carried_digests_are_the_full_computations(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, edit: str
) -> None:
    _prove(ws, capsys)  # fills the cache and writes the record
    change, expected = EDITS[edit]
    change(ws)
    listings: list[str] = []
    original = InputsIndex._from_tree

    def counted(self: InputsIndex, tree: str) -> Any:
        listings.append(tree)
        return original(self, tree)

    monkeypatch.setattr(InputsIndex, "_from_tree", counted)
    carried = _prove(ws, capsys)
    assert _ran(carried) == expected
    # only a top-level glob needs the whole tree listed; everything else is carried or partial
    assert len(listings) == (1 if "pf" in expected else 0)
    monkeypatch.undo()

    path = record_path(ws / ".changeloop", "c")
    assert path is not None
    path.unlink()
    full = _prove(ws, capsys)
    assert _ran(full) == set(), "a carried digest differed from the full computation"
    assert _fingerprints(ws, full) == _fingerprints(ws, carried)


def test_the_record_holds_each_providers_digest_over_its_tree(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _prove(ws, capsys)
    path = record_path(ws / ".changeloop", "c")
    assert path is not None
    payload = json.loads(base64.b64decode(json.loads(path.read_text())["payload"]))
    (repo,) = payload["repositories"].values()
    assert repo["gitlinks"] is False
    index = InputsIndex(ws, tree=repo["tree"])
    assert repo["inputs"] == {
        json.dumps(sorted(globs)): index.digest(globs) for globs in PROVIDERS.values()
    }


@pytest.mark.parametrize(
    "globs",
    [["src/a/**"], ["src/b/*.py"], ["src/**/*.txt"], ["lib/**", "src/a/x.txt"], ["src/c"]],
)
def test_a_partial_listing_digests_as_the_whole_tree(ws: Path, globs: list[str]) -> None:
    tree = git(ws, "write-tree").strip()
    dirs = literal_dirs(globs)
    assert dirs is not None
    entries = subtree_entries(ws, tree, dirs)
    assert entries is not None
    whole = InputsIndex(ws, tree=tree)
    assert InputsIndex.of_entries(ws, entries).digest(globs) == whole.digest(globs)
    assert len(entries) < len(whole.matches(["**"]))


def test_a_top_level_glob_or_a_missing_directory_lists_the_whole_tree(ws: Path) -> None:
    tree = git(ws, "write-tree").strip()
    assert literal_dirs(["top.txt"]) is None
    assert literal_dirs(["*.py"]) is None
    assert subtree_entries(ws, tree, [b"nowhere/"]) is None
    assert fingerprint.literal_dirs(["src/a/**", "src/**/*.txt"]) == [b"src/"]


def test_a_link_leaving_the_repository_is_seen_though_no_digest_changed(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The new tree's links come from the diff: an added link that leaves opens the identity
    (docs/threat-model.md), so nothing is reused, as on the full path."""
    _prove(ws, capsys)
    (tmp_path / "outside.txt").write_text("outside\n")
    os.symlink(tmp_path / "outside.txt", ws / "other" / "away")
    carried = _prove(ws, capsys)
    assert _ran(carried) == set(PROVIDERS)
    path = record_path(ws / ".changeloop", "c")
    assert path is not None
    path.unlink(missing_ok=True)
    assert _ran(_prove(ws, capsys)) == set(PROVIDERS)


def test_the_provider_that_will_run_is_started_first(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Providers with a cache entry for their fingerprint are estimated at no time
    (run.order.likely_cached): the one that must run starts before them and they are
    reused while it runs."""
    _prove(ws, capsys)
    _write(ws, "src/c/c.py", "C = 2\n")
    capsys.readouterr()
    code = main(["prove", "c", "--root", str(ws), "--json"])
    err = capsys.readouterr().err
    assert code == 0
    started = [line.split("▶ ")[1].split()[0] for line in err.splitlines() if "▶ " in line]
    assert started == ["pc"], err  # the others are reused, never announced as running


@pytest.mark.parametrize("forged", ["adapter external", "predicate not an object"])
def test_a_signed_cache_entry_that_is_never_reusable_runs_the_provider(
    ws: Path, capsys: pytest.CaptureFixture[str], forged: str
) -> None:
    """The sink decodes each cached payload once and makes cache.load's checks itself:
    even an entry signed with the workspace key is not reused when its adapter's
    results never are, or its extension is not an object."""
    from changeloop.caching import local as cache
    from changeloop.signing.dsse import sign_envelope
    from changeloop.signing.keys import workspace_key

    doc = _prove(ws, capsys)
    fp = _fingerprints(ws, doc)["pa"]
    cache_dir = ws / ".changeloop" / "cache"
    (old,) = cache.load(cache_dir, fp) or []
    envelope = json.loads(old)
    payload = json.loads(base64.b64decode(envelope["payload"]))
    if forged == "adapter external":
        payload["predicate"]["changeloop"]["adapter"] = "external"
    else:
        payload["predicate"]["changeloop"] = ["not", "an", "object"]
    data = json.dumps(payload).encode()
    new = sign_envelope(data, envelope["payloadType"], workspace_key(ws))
    entry = {"fingerprint": fp, "envelopes": [base64.b64encode(new).decode()]}
    cache.entry_path(cache_dir, fp).write_text(json.dumps(entry))
    assert _ran(_prove(ws, capsys)) == {"pa"}
