"""The environment each command of a run gets, and what its fingerprint binds of it.

The environment is read once when a run starts and cut per provider (its
``passEnv`` and ``envFrom``): providers wired differently in one run must each
see exactly their own cut, and a later run in the same process must see the
environment as it is then, not a copy kept from an earlier run.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import make_change, make_repo, prove_json, receipts_of

from changeloop.passenv import Snapshot, strict_environ

DUMP = "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w'))"
EVIDENCE = "version: 3\nrequires: [see]\n"
PROVIDERS = {  # name -> extra wiring
    "passes": "    passEnv: [MODE]\n",
    "secret": "    envFrom: [DB_URL]\n",
    "plain": "",
}


def _workspace(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "ws", {"README.md": "x\n", ".gitignore": ".changeloop/\n"})
    body = "".join(
        f"  {name}:\n    capability: see\n"
        f"    command: [{json.dumps(sys.executable)}, -c, {json.dumps(DUMP)},"
        f" {json.dumps(str(tmp_path / f'{name}.json'))}]\n{extra}"
        for name, extra in PROVIDERS.items()
    )
    make_change(root, "c", EVIDENCE, f"version: 1\nproviders:\n{body}")
    return root


def _run(
    root: Path, tmp_path: Path, capsys: Any
) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """What each provider's command saw, and each provider's fingerprint, for one clean run."""
    code, doc = prove_json(root, "c", "--no-cache", "--sandbox", "none", capsys=capsys)
    assert code == 0, doc
    seen: dict[str, dict[str, str]] = {}
    fingerprints: dict[str, str] = {}
    for name in PROVIDERS:
        seen[name] = json.loads((tmp_path / f"{name}.json").read_text())
        path = root / receipts_of(doc, name)["see"]["path"]
        payload = json.loads(base64.b64decode(json.loads(path.read_text())["payload"]))
        fingerprints[name] = payload["predicate"]["changeloop"]["fingerprint"]
    return seen, fingerprints


def test_each_provider_sees_its_own_cut_of_the_environment_as_it_is_at_each_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _workspace(tmp_path)
    monkeypatch.setenv("MODE", "first")
    monkeypatch.setenv("DB_URL", "postgres://one")
    monkeypatch.setenv("UNNAMED", "never")
    seen, first = _run(root, tmp_path, capsys)
    for name, env in seen.items():
        assert "UNNAMED" not in env, name  # no provider names it
        assert env["PATH"] == os.environ["PATH"], name  # the fixed set passes
        assert env["PYTHONDONTWRITEBYTECODE"] == "1", name
    assert seen["passes"]["MODE"] == "first" and "DB_URL" not in seen["passes"]
    assert seen["secret"]["DB_URL"] == "postgres://one" and "MODE" not in seen["secret"]
    assert "MODE" not in seen["plain"] and "DB_URL" not in seen["plain"]

    # A passEnv value changed between runs in the same process: only its provider's
    # command sees it, and only its fingerprint moves.
    monkeypatch.setenv("MODE", "second")
    seen, second = _run(root, tmp_path, capsys)
    assert seen["passes"]["MODE"] == "second"
    assert second["passes"] != first["passes"]
    assert second["secret"] == first["secret"] and second["plain"] == first["plain"]

    # An envFrom value changed: the same for the secret's provider.
    monkeypatch.setenv("DB_URL", "postgres://two")
    seen, third = _run(root, tmp_path, capsys)
    assert seen["secret"]["DB_URL"] == "postgres://two"
    assert third["secret"] != second["secret"]
    assert third["passes"] == second["passes"] and third["plain"] == second["plain"]

    # A variable no provider names changes nothing; one removed is gone from every command.
    monkeypatch.setenv("UNNAMED", "changed")
    monkeypatch.delenv("MODE")
    seen, fourth = _run(root, tmp_path, capsys)
    assert "MODE" not in seen["passes"]
    assert fourth["plain"] == third["plain"] and fourth["secret"] == third["secret"]
    assert fourth["passes"] != third["passes"]


def test_a_snapshot_cut_is_strict_environ_of_the_copy_made_once_and_read_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MODE", "ok")
    monkeypatch.setenv("DB_URL", "postgres://x")
    monkeypatch.setenv("UNNAMED", "never")
    snapshot = Snapshot(os.environ)
    cut = snapshot.cut(("MODE",), ("DB_URL",))
    assert dict(cut) == strict_environ(os.environ, ("MODE",), ("DB_URL",))
    assert snapshot.cut(("MODE",), ("DB_URL",)) is cut  # made once per wiring
    assert dict(snapshot.cut()) == strict_environ(os.environ)  # another wiring, its own cut
    monkeypatch.setenv("MODE", "later")  # the copy is the environment as the run found it
    assert snapshot.cut(("MODE",), ("DB_URL",))["MODE"] == "ok"
    assert snapshot.environ["MODE"] == "ok"
    with pytest.raises(TypeError):
        cut["MODE"] = "changed"  # type: ignore[index]
