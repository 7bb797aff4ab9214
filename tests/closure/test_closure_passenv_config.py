"""``passEnv`` as a user writes it, derives it and is told about it.

The filter itself (``changeloop.passenv``), the execution.yaml key and its
refusals, ``evidence init`` deriving it for a runner known to need one, and
``evidence doctor`` naming a variable CI sets that no provider gets.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bootstrap_helpers import CHANGE, workspace
from prove_helpers import make_change, make_repo

from changeloop.cli.main import main
from changeloop.detect.context import derived_for
from changeloop.passenv import passed_values, passes, secret_like, strict_environ
from changeloop.workspace.discovery import find_change

ENVIRON = {
    "PATH": "/bin",
    "HOME": "/h",
    "LC_ALL": "C",
    "MODE": "ok",
    "APP_X": "1",
    "AWS_SECRET_ACCESS_KEY": "k",
    "DB_URL": "postgres://",
}


def test_only_the_fixed_set_and_what_the_wiring_names_pass() -> None:
    assert strict_environ(ENVIRON) == {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C"}
    got = strict_environ(ENVIRON, ("MODE", "APP_*"), ("DB_URL",))
    assert set(got) == {"PATH", "HOME", "LC_ALL", "MODE", "APP_X", "DB_URL"}
    assert not passes("AWS_SECRET_ACCESS_KEY") and passes("LC_CTYPE") and passes("CI")
    assert not passes("PATHX") and not passes("xPATH")  # whole names only


def test_passed_values_bind_plain_values_and_hmac_secret_like_ones() -> None:
    env = {"MODE": "ok", "API_TOKEN": "tok-123456789", "PATH": "/bin"}
    one = passed_values(env, ("MODE", "API_TOKEN"), b"k1")
    assert one["MODE"] == "ok" and one["PATH"] == "/bin"
    assert one["API_TOKEN"].startswith("hmac:") and "tok-123456789" not in json.dumps(one)
    assert passed_values(env, ("MODE", "API_TOKEN"), b"k2")["API_TOKEN"] != one["API_TOKEN"]
    assert secret_like("API_TOKEN") and secret_like("db_password") and not secret_like("MODE")


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_a_malformed_pass_env_is_refused_by_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "ws", {"a": "1\n"})
    make_change(
        root,
        "c",
        "version: 3\nrequires: [check]\n",
        "version: 1\nproviders:\n  check:\n    command: ['true']\n    passEnv: ['MODE=1']\n",
    )
    code, doc = _cli(capsys, "prove", "c", "--root", str(root), "--json")
    assert code == 2
    [error] = doc["errors"]
    assert "passEnv" in json.dumps(error) and error["line"] == 5


def test_init_derives_pass_env_for_a_playwright_run(tmp_path: Path) -> None:
    root = workspace(
        tmp_path,
        {"package.json": '{"devDependencies": {"@playwright/test": "1.65.1"}}'},
        evidence="version: 3\nclaims:\n  c:\n    requires: [browser]\n",
    )
    [provider] = derived_for(root, find_change(root, CHANGE)).values()
    assert provider.pass_env == ("PLAYWRIGHT_BROWSERS_PATH",)
    assert main(["evidence", "init", CHANGE, "--write", "--root", str(root)]) == 0
    written = (root / "openspec" / "changes" / CHANGE / "execution.yaml").read_text()
    assert "passEnv: [PLAYWRIGHT_BROWSERS_PATH]" in written


def test_doctor_names_a_variable_ci_sets_that_no_provider_gets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workflow = (
        "on: push\nenv:\n  NODE_ENV: test\njobs:\n  test:\n    runs-on: ubuntu-latest\n"
        "    env:\n      API_TOKEN: ${{ secrets.API_TOKEN }}\n      MODE: strict\n"
        "    steps:\n      - run: make test\n        env: {LANG: C.UTF-8}\n"
    )
    root = make_repo(tmp_path / "ws", {".github/workflows/ci.yml": workflow, "a": "1\n"})
    make_change(
        root,
        "c",
        "version: 3\nrequires: [check]\n",
        "version: 1\nproviders:\n  check:\n    command: ['true']\n    passEnv: [MODE]\n",
    )
    code, doc = _cli(capsys, "evidence", "doctor", "c", "--json", "--root", str(root))
    found = {f["message"].split()[2]: f for f in doc["findings"] if f["kind"] == "env-not-passed"}
    assert sorted(found) == ["API_TOKEN", "NODE_ENV"]  # MODE is passed, LANG always is
    assert "`passEnv: [NODE_ENV]`" in found["NODE_ENV"]["suggested_action"]
    assert "`envFrom: [API_TOKEN]`" in found["API_TOKEN"]["suggested_action"]
    assert all(f["severity"] == "info" for f in found.values())
    assert code == 0  # informational: nothing unresolved
