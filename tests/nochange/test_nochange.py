"""The no-change decision: a re-prove answered from one signed record.

Every test drives the real CLI in-process on a real git workspace. Which path
answered is read from the run's ``run.json`` (``"decision": "no-change"`` only
when the record answered); what was answered is compared with a full re-prove
forced by deleting the record, so the record can never say anything the full
path would not.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from prove_helpers import git, make_change, make_repo, prove_json, provider_entry

from changeloop.cli.main import main
from changeloop.cli.prove import command as prove_cli
from changeloop.fingerprints import environment
from changeloop.nochange.key import record_path
from changeloop.signing.keys import generate_private_key, private_pem

TOOL = "#!/bin/sh\nexit 0\n"
EVIDENCE = "version: 3\nrequires: [alpha, beta]\n"
EXECUTION = """\
version: 1
providers:
  alpha:
    adapter: command
    command: [nctool]
    inputs: ["src/a/**"]
    envFrom: [NC_TOKEN]
  beta:
    adapter: command
    command: [sh, -c, "exit 0"]
    inputs: ["src/b/**"]
"""


def _tool(directory: Path, body: str = TOOL) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    tool = directory / "nctool"
    tool.write_text(body, encoding="utf-8")
    tool.chmod(0o755)
    return tool


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = make_repo(
        tmp_path / "ws",
        {
            "src/a/mod.py": "A = 1\n",
            "src/b/mod.py": "B = 1\n",
            "notes.txt": "notes\n",
            ".gitignore": ".changeloop/\nignored/\n",
        },
    )
    make_change(root, "c", EVIDENCE, EXECUTION)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    _tool(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NC_TOKEN", "a-long-enough-secret")
    return root


def _prove(
    root: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, Any]]:
    return prove_json(root, "c", *extra, capsys=capsys)


def _decision(root: Path, doc: dict[str, Any]) -> str | None:
    run = json.loads((root / ".changeloop" / "runs" / doc["runId"] / "run.json").read_text())
    found: str | None = run.get("decision")
    return found


def _record(root: Path) -> Path:
    path = record_path(root / ".changeloop", "c")
    assert path is not None
    return path


def _normal(doc: dict[str, Any]) -> dict[str, Any]:
    """The document with its run id taken out: the only thing a re-prove may change."""
    text = json.dumps(doc).replace(doc["runId"], "RUN")
    normal: dict[str, Any] = json.loads(text)
    return normal


def _full(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    """A full re-prove: the record deleted first (how bench/incremental.py forces it)."""
    _record(root).unlink(missing_ok=True)
    code, doc = _prove(root, capsys)
    assert _decision(root, doc) is None
    return code, doc


def _states(doc: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["state"] for p in doc["providers"]}


def _fast_again(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, doc = _prove(root, capsys)
    assert code == 0 and _decision(root, doc) == "no-change"
    return doc


# -- the fast path ---------------------------------------------------------------
def test_a_re_prove_with_nothing_changed_is_answered_from_the_record(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, first = _prove(ws, capsys)
    assert code == 0 and _states(first) == {"alpha": "ran", "beta": "ran"}
    assert _record(ws).is_file()
    # Right after the run that filled the cache: answered as a cached re-prove would be.
    capsys.readouterr()
    code, fast = _prove(ws, capsys)
    assert code == 0 and _decision(ws, fast) == "no-change"
    assert fast["runId"] != first["runId"]
    code_full, full = _full(ws, capsys)
    assert code_full == code and _states(full) == {"alpha": "cached", "beta": "cached"}
    assert _normal(fast) == _normal(full)
    # The run directory holds the same receipts, byte for byte, as the full path's.
    for entry in fast["providers"]:
        for receipt in entry["receipts"]:
            ours = (ws / receipt["path"]).read_bytes()
            theirs = ws / receipt["path"].replace(fast["runId"], full["runId"])
            assert ours == theirs.read_bytes()
    run = json.loads((ws / ".changeloop" / "runs" / fast["runId"] / "run.json").read_text())
    assert {p["state"] for p in run["providers"].values()} == {"cached"}


def test_the_human_board_is_the_full_paths(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _prove(ws, capsys)
    boards = []
    for force in (False, True):
        if force:
            _record(ws).unlink()
        capsys.readouterr()
        assert main(["prove", "c", "--root", str(ws)]) == 0
        err = capsys.readouterr().err
        run_id = err.rsplit(".changeloop/runs/", 1)[1].split()[0]
        lines = [line.split("]", 1)[-1] for line in err.replace(run_id, "RUN").splitlines()]
        # progress lines: the same lines, the scheduler's order (and so the counts) aside
        boards.append(sorted(re.sub(r"\(\d+/", "(", line) for line in lines))
    assert boards[0] == boards[1]


def test_a_failing_change_leaves_no_record(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _tool(Path(os.environ["PATH"].split(os.pathsep)[0]), "#!/bin/sh\nexit 3\n")
    code, doc = _prove(ws, capsys)
    assert code == 1 and not _record(ws).exists()
    code, doc = _prove(ws, capsys)
    assert code == 1 and _decision(ws, doc) is None and _states(doc)["alpha"] == "ran"


# -- each invalidator on its own falls back to the full path ------------------------
def _edit_input(root: Path) -> None:
    (root / "src" / "a" / "mod.py").write_text("A = 2\n")


def _edit_outside(root: Path) -> None:
    (root / "notes.txt").write_text("other notes\n")


def _untracked(root: Path) -> None:
    (root / "new.txt").write_text("new\n")


def _execution(root: Path) -> None:
    path = root / "openspec" / "changes" / "c" / "execution.yaml"
    path.write_text(path.read_text() + "    timeoutMs: 60000\n")


def _replace_tool(_root: Path) -> None:
    _tool(Path(os.environ["PATH"].split(os.pathsep)[0]), TOOL + "# another build\n")


@pytest.mark.parametrize(
    ("edit", "ran"),
    [
        (_edit_input, {"alpha"}),
        (_edit_outside, set()),
        (_untracked, set()),
        (_execution, {"beta"}),
        (_replace_tool, {"alpha"}),
    ],
    ids=["input-byte", "byte-outside-inputs", "untracked-file", "execution-yaml", "tool-replaced"],
)
def test_a_change_falls_back_to_the_full_path(
    ws: Path, capsys: pytest.CaptureFixture[str], edit: Any, ran: set[str]
) -> None:
    _prove(ws, capsys)
    _fast_again(ws, capsys)
    edit(ws)
    code, doc = _prove(ws, capsys)
    assert code == 0 and _decision(ws, doc) is None
    assert {n for n, s in _states(doc).items() if s == "ran"} == ran
    # The full path wrote the record again: the next re-prove is answered from it.
    assert _normal(_fast_again(ws, capsys)) == _normal(_full(ws, capsys)[1])


def test_why_the_record_was_not_used_is_said_on_request(
    ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _prove(ws, capsys)
    _edit_input(ws)
    _prove(ws, capsys)
    assert "no-change record not used" not in capsys.readouterr().err
    _edit_outside(ws)
    monkeypatch.setenv("CHANGELOOP_EXPLAIN_NOCHANGE", "1")
    capsys.readouterr()
    assert main(["prove", "c", "--root", str(ws)]) == 0
    err = capsys.readouterr().err
    assert "no-change record not used: the content of repository self changed" in err


def test_a_path_change_that_resolves_another_tool_falls_back(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _prove(ws, capsys)
    _fast_again(ws, capsys)
    # PATH is a value every command gets (a script resolves its own tools through it):
    # bound by value, so another PATH plans afresh even where argv[0] resolves the same
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    _code, doc = _prove(ws, capsys)
    assert _decision(ws, doc) is None and _states(doc) == {"alpha": "ran", "beta": "ran"}
    _fast_again(ws, capsys)
    _tool(tmp_path / "shadow", TOOL + "# shadow\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'shadow'}{os.pathsep}{os.environ['PATH']}")
    _code, doc = _prove(ws, capsys)
    assert _decision(ws, doc) is None and _states(doc) == {"alpha": "ran", "beta": "ran"}


def test_an_env_from_variable_removed_or_changed_falls_back(
    ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _prove(ws, capsys)
    _fast_again(ws, capsys)
    monkeypatch.setenv("NC_TOKEN", "another-long-secret")
    code, doc = _prove(ws, capsys)
    assert code == 0 and _decision(ws, doc) is None and _states(doc)["alpha"] == "ran"
    _fast_again(ws, capsys)
    monkeypatch.delenv("NC_TOKEN")
    code, doc = _prove(ws, capsys)
    assert code == 1 and _decision(ws, doc) is None
    assert provider_entry(doc, "alpha")["receipts"][0]["status"] == "fail"
    assert "NC_TOKEN" not in json.dumps(_record_text(ws))  # no record of a failing answer


def _record_text(root: Path) -> str:
    path = _record(root)
    return path.read_text() if path.exists() else ""


@pytest.mark.parametrize(
    "option", [["--issuer", "ci"], ["--sandbox", "copy"], ["--fail-fast"], ["--url", "https://x"]]
)
def test_another_command_line_option_falls_back(
    ws: Path, capsys: pytest.CaptureFixture[str], option: list[str]
) -> None:
    _prove(ws, capsys)
    _fast_again(ws, capsys)
    code, doc = _prove(ws, capsys, *option)
    assert code == 0 and _decision(ws, doc) is None


@pytest.mark.parametrize("option", [["--no-cache"], ["--report"], ["--jobs", "1"]])
def test_options_that_bypass_the_cache_bypass_the_record(
    ws: Path, capsys: pytest.CaptureFixture[str], option: list[str]
) -> None:
    _prove(ws, capsys)
    _fast_again(ws, capsys)
    _code, doc = _prove(ws, capsys, *option)
    if option == ["--jobs", "1"]:  # nothing runs either way: --jobs is not part of the key
        assert _decision(ws, doc) == "no-change"
        return
    assert _decision(ws, doc) is None
    if option == ["--no-cache"]:
        assert set(_states(doc).values()) == {"ran"}


def test_a_deleted_cache_entry_or_latest_receipt_falls_back(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _prove(ws, capsys)
    _fast_again(ws, capsys)
    for entry in (ws / ".changeloop" / "cache").iterdir():
        entry.unlink()
    code, doc = _prove(ws, capsys)
    assert _decision(ws, doc) is None and set(_states(doc).values()) == {"ran"}
    _fast_again(ws, capsys)
    latest = ws / ".changeloop" / "receipts" / "c" / "beta.beta.json"
    latest.unlink()
    code, doc = _prove(ws, capsys)
    assert code == 0 and _decision(ws, doc) is None and _states(doc)["beta"] == "cached"
    _fast_again(ws, capsys)
    original = latest.read_bytes()
    latest.write_bytes(original.replace(b'"', b"'", 1))  # other bytes under the same name
    code, doc = _prove(ws, capsys)
    assert code == 0 and _decision(ws, doc) is None
    run_copy = ws / provider_entry(doc, "beta")["receipts"][0]["path"]
    assert run_copy.read_bytes() == original == latest.read_bytes()


# -- a record that is not ours is ignored, or refused like the cache -----------------
def test_a_tampered_record_is_ignored(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _prove(ws, capsys)
    path = _record(ws)
    envelope = json.loads(path.read_bytes())
    import base64

    payload = json.loads(base64.b64decode(envelope["payload"]))
    payload["answer"]["proven"] = False  # any edit of the signed bytes
    envelope["payload"] = base64.b64encode(json.dumps(payload).encode()).decode()
    path.write_text(json.dumps(envelope))
    code, doc = _prove(ws, capsys)
    assert code == 0 and _decision(ws, doc) is None
    data = bytearray(_record(ws).read_bytes())
    data[len(data) // 2] ^= 0x01
    _record(ws).write_bytes(bytes(data))
    code, doc = _prove(ws, capsys)
    assert code == 0 and _decision(ws, doc) is None


def test_the_record_is_sealed_with_the_workspace_keys_secret(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The seal, recomputed here from the key file with the standard library and
    cryptography's own reading of the key: HMAC-SHA256 of DSSE's PAE, keyed by a hash of
    the seed. A seal made with any other key (or none) answers nothing."""
    import base64
    import hashlib
    import hmac

    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    _prove(ws, capsys)
    envelope = json.loads(_record(ws).read_bytes())
    payload = base64.b64decode(envelope["payload"])
    kind = envelope["payloadType"].encode()
    pae = b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload)
    key = load_pem_private_key((ws / ".changeloop" / "keys" / "local.key").read_bytes(), None)
    seed = key.private_bytes_raw()  # type: ignore[union-attr]
    mac_key = hashlib.sha256(b"changeloop no-change record\0" + seed).digest()
    (signature,) = envelope["signatures"]
    assert base64.b64decode(signature["sig"]) == hmac.digest(mac_key, pae, "sha256")
    for other in (hashlib.sha256(b"another").digest(), seed):  # another key; the bare seed
        signature["sig"] = base64.b64encode(hmac.digest(other, pae, "sha256")).decode()
        _record(ws).write_text(json.dumps(envelope))
        code, doc = _prove(ws, capsys)
        assert code == 0 and _decision(ws, doc) is None
        code, doc = _prove(ws, capsys)  # the full path wrote a record of its own again
        assert code == 0 and _decision(ws, doc) == "no-change"
        envelope = json.loads(_record(ws).read_bytes())
        (signature,) = envelope["signatures"]


def test_a_record_signed_by_another_key_is_ignored(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _prove(ws, capsys)
    saved = _record(ws).read_bytes()
    keys = ws / ".changeloop" / "keys"
    (keys / "local.key").write_bytes(private_pem(generate_private_key()))
    _record(ws).write_bytes(saved)  # the old key's record, the new key in place
    code, doc = _prove(ws, capsys)
    assert code == 0 and _decision(ws, doc) is None and set(_states(doc).values()) == {"ran"}


def test_a_symlink_planted_at_the_record_is_never_followed(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _prove(ws, capsys)
    elsewhere = tmp_path / "elsewhere.json"
    shutil.move(_record(ws), elsewhere)
    _record(ws).symlink_to(elsewhere)
    code, doc = _prove(ws, capsys)
    assert code == 0 and _decision(ws, doc) is None
    assert not _record(ws).is_symlink()  # replaced by the full path's own record


def test_a_symlinked_or_tracked_decisions_directory_is_refused(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _prove(ws, capsys)
    decisions = _record(ws).parent
    shutil.move(decisions, tmp_path / "planted")
    decisions.symlink_to(tmp_path / "planted")
    code, doc = _prove(ws, capsys)
    assert code == 2 and str(decisions) in doc["errors"][0]["message"]
    decisions.unlink()
    shutil.move(tmp_path / "planted", decisions)
    git(ws, "add", "-f", str(_record(ws)))
    code, doc = _prove(ws, capsys)
    assert code == 2 and "git tracks" in doc["errors"][0]["message"]


def test_a_change_with_an_external_provider_is_never_recorded(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """external re-reads receipts/ (imports land there) and ages with maxAge on every run:
    a change that has one is always proven by the full path."""
    assert main(["keygen", "--out", str(tmp_path / "ci")]) == 0
    shutil.copy(tmp_path / "ci" / "changeloop.pub", ws / "openspec" / "changes" / "c" / "ci.pub")
    path = ws / "openspec" / "changes" / "c" / "execution.yaml"
    path.write_text(
        path.read_text() + "  review:\n    adapter: external\n    capability: review\n"
        "    ci: {issuer: github-actions, publicKeyFile: ci.pub}\n    maxAge: 1h\n"
    )
    (ws / "openspec" / "changes" / "c" / "evidence.yaml").write_text(
        "version: 3\nrequires: [alpha, beta, review]\n"
    )
    for _ in range(2):
        _code, doc = _prove(ws, capsys)
        assert _decision(ws, doc) is None
    assert not _record(ws).exists()


# -- pieces ------------------------------------------------------------------------------
def test_the_sandbox_choices_are_the_sandboxes_modes() -> None:
    from typing import get_args

    from changeloop import sandboxes
    from changeloop.model import SandboxMode

    assert prove_cli.SANDBOX_MODES == get_args(SandboxMode)  # the order --help shows
    assert set(prove_cli.SANDBOX_MODES) == set(sandboxes.MODES)
    assert prove_cli.DEFAULT_SANDBOX == sandboxes.DEFAULT_MODE


def test_an_interpreter_is_asked_once_across_processes(tmp_path: Path) -> None:
    """Its distributions are remembered in .changeloop/interpreters.json."""
    log = tmp_path / "asked.log"
    fake = tmp_path / "bin" / "python3"
    fake.parent.mkdir()
    report = json.dumps(
        {"executable": str(fake), "version": "3.99.0", "distributions": ["x==1"], "path": []}
    )
    fake.write_text(f"#!/bin/sh\necho asked >> {log}\necho '{report}'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    state = tmp_path / ".changeloop"
    first = environment.part((str(fake), "-c", "pass"), tmp_path, state)
    environment._PYTHON_SEEN.clear()  # a new process: only the file remembers
    second = environment.part((str(fake), "-c", "pass"), tmp_path, state)
    assert first == second and first["python"]["version"] == "3.99.0"
    assert log.read_text().splitlines() == ["asked"]
    (state / environment.PYTHONS_FILE).write_text("{not json")  # damaged: asked again
    environment._PYTHON_SEEN.clear()
    assert environment.part((str(fake), "-c", "pass"), tmp_path, state) == first
    assert log.read_text().splitlines() == ["asked", "asked"]


def test_help_lists_every_verb(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for verb in ("prove", "evidence", "receipt", "keygen", "gate", "summary", "report"):
        assert verb in out


@pytest.mark.parametrize("where", ["", "sub"])
def test_a_tree_from_the_check_completes_to_the_full_identity(tmp_path: Path, where: str) -> None:
    """The full path starts from the trees the no-change check computed (identity_of_tree):
    the same identity as computing it afresh, clean or dirty, at the top or in a subdir."""
    from changeloop.git.identity import content_identity, content_tree, identity_of_tree

    top = make_repo(
        tmp_path / "r",
        {"sub/a.py": "A\n", "sub/openspec/x.md": "x\n", "openspec/y.md": "y\n", "b.txt": "b\n"},
    )
    repo = top / where if where else top
    for edit in (None, "a.py", "new.txt"):
        if edit is not None:
            (repo / edit).write_text("changed\n")
        for untracked in (True, False):
            tree = content_tree(repo, include_untracked=untracked)
            assert identity_of_tree(repo, tree) == content_identity(
                repo, include_untracked=untracked
            )


def test_touching_a_tool_without_changing_it_keeps_the_record(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The environment part hashes the executable: a new mtime alone changes nothing."""
    _prove(ws, capsys)
    tool = Path(os.environ["PATH"].split(os.pathsep)[0]) / "nctool"
    os.utime(tool, (tool.stat().st_atime + 5, tool.stat().st_mtime + 5))
    fast = _fast_again(ws, capsys)
    assert _normal(fast) == _normal(_full(ws, capsys)[1])


def test_a_leftover_server_on_a_service_port_falls_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The full path reports a port held by someone else even when every provider is cached."""
    import socket
    import sys

    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        port = int(probe_socket.getsockname()[1])
    py = sys.executable
    root = make_repo(tmp_path / "ws", {"a.txt": "a\n", "www/index.html": "svc-id\n"})
    probe = f'import urllib.request; urllib.request.urlopen("http://127.0.0.1:{port}/").read()'
    make_change(
        root,
        "c",
        "version: 3\nrequires: [a]\n",
        f"""
        version: 1
        providers:
          a: {{adapter: command, command: ["{py}", -c, '{probe}'], services: [web], inputs: [a.txt]}}
        services:
          web:
            command: ["{py}", -m, http.server, "{port}", --bind, 127.0.0.1, --directory, www]
            readiness: {{url: "http://127.0.0.1:{port}/", expect: {{body: svc-id}}, timeoutMs: 20000}}
        """,
    )
    code, _ = _prove(root, capsys)
    assert code == 0 and _record(root).is_file()
    _fast_again(root, capsys)
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        code, doc = _prove(root, capsys)
    assert code == 1 and _decision(root, doc) is None
    assert "port-in-use" in json.dumps(doc) or "in use" in json.dumps(doc)


def test_a_valid_configuration_is_remembered_and_any_edit_is_validated_again(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """config.schema's memo: the same data against the same schema is not validated twice,
    other data always is; a damaged or planted memo is no memo."""
    from changeloop.config.validation_memo import MEMO_FILE

    _prove(ws, capsys)
    memo = ws / ".changeloop" / MEMO_FILE
    assert len(json.loads(memo.read_text())) == 2  # evidence.yaml and execution.yaml
    execution = ws / "openspec" / "changes" / "c" / "execution.yaml"
    execution.write_text(execution.read_text() + "    timeoutMs: soon\n")
    code, doc = _prove(ws, capsys)
    assert code == 2 and "timeoutMs" in json.dumps(doc["errors"])
    assert len(json.loads(memo.read_text())) == 2  # a refusal is never remembered
    execution.write_text(EXECUTION)
    for damage in ("{not json", "directory", "symlink"):
        memo.unlink() if memo.is_file() or memo.is_symlink() else shutil.rmtree(memo)
        if damage == "directory":
            memo.mkdir()
        elif damage == "symlink":
            (tmp_path / "elsewhere.json").write_text("[]")
            memo.symlink_to(tmp_path / "elsewhere.json")
        else:
            memo.write_text(damage)
        code, doc = _prove(ws, capsys)
        assert code == 0, doc


def test_a_change_requiring_static_analysis_is_answered_until_a_linter_config_appears(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Derived static analysis reads a few top-level files (pyproject.toml, ruff.toml,
    # mypy.ini, …). The record keeps their digests, ignored or absent ones included, so a
    # change that configures its static-analysis provider is answered; a new linter
    # configuration — even an ignored file, which no content tree holds — is the full path.
    root = make_repo(
        tmp_path / "ws",
        # ruff.toml derives `static-analysis`, which the configured provider replaces
        {"a.py": "A = 1\n", "ruff.toml": "", ".gitignore": ".changeloop/\nmypy.ini\n"},
    )
    execution = (
        "version: 1\nproviders:\n  static-analysis:\n    adapter: command\n"
        '    command: [sh, -c, "exit 0"]\n'
    )
    make_change(root, "c", "version: 3\nrequires: [static-analysis]\n", execution)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    code, first = _prove(root, capsys)
    assert code == 0 and _states(first) == {"static-analysis": "ran"}
    fast = _fast_again(root, capsys)
    _, full = _full(root, capsys)
    assert _normal(fast) == _normal(full)
    _fast_again(root, capsys)

    (root / "mypy.ini").write_text("[mypy]\nfiles = a.py\n")  # ignored: not in any tree
    code, doc = _prove(root, capsys)
    assert _decision(root, doc) is None
    # the tree is unchanged (mypy.ini is ignored): the recorded digests caught it
    assert "static-analysis-mypy" in _states(doc)  # a second linter: derived beside ours
