"""Every configuration refusal: its code, its words and the line it points at."""

from __future__ import annotations

from pathlib import Path

import pytest
from config_helpers import VALID_EVIDENCE, make_workspace

from changeloop.errors import ConfigError, Problem
from changeloop.plan import build_plan

EXEC_HEAD = "version: 1\nproviders:\n  test:\n    adapter: test-discovery\n"

# (id, evidence text or None for the valid one, execution text or None, code, words, line)
CASES: list[tuple[str, str | None, str | None, str, str, int]] = [
    (
        "unknown-top-evidence",
        "version: 3\nclaimz: {}\n",
        None,
        "unknown_key",
        "field(s) ['claimz'] are not defined by evidence version 3 — it defines "
        "[claims, repositories, requires, version]",
        2,
    ),
    (
        "unknown-claim-key",
        "version: 3\nclaims:\n  c1:\n    requires: [test]\n    owner: me\n",
        None,
        "unknown_key",
        "field(s) ['owner'] are not defined by evidence version 3 for claim "
        "'c1' — it defines [archetype, inputMode, ref, repository, requires, statement]",
        5,
    ),
    (
        "unknown-top-execution",
        None,
        "version: 1\nprovider: {}\n",
        "unknown_key",
        "field(s) ['provider'] are not defined by execution version 1 — it defines "
        "[providers, repositories, services, version]",
        2,
    ),
    (
        "unknown-provider-key",
        None,
        EXEC_HEAD + "    command: [pytest]\n    cmd: [x]\n",
        "unknown_key",
        "field(s) ['cmd'] are not defined by execution version 1 for provider "
        "'test' — it defines [accepts, adapter, allowFlaky,",
        6,
    ),
    (
        "unknown-service-key",
        None,
        "version: 1\nservices:\n  web:\n    command: [serve]\n    port: 80\n",
        "unknown_key",
        "for service 'web' — it defines [command, env, envFrom, passEnv, readiness, repository]",
        5,
    ),
    (
        "unknown-readiness-key",
        None,
        "version: 1\nservices:\n  web:\n    command: [serve]\n    readiness:\n"
        "      url: http://127.0.0.1:80/\n      status: 200\n",
        "unknown_key",
        "field(s) ['status'] are not defined by execution version 1 for readiness of service "
        "'web' — it defines [expect, timeoutMs, url]",
        7,
    ),
    (
        "unknown-repositories-key",
        None,
        "version: 1\nrepositories:\n  self:\n    install: [[npm, ci]]\n",
        "unknown_key",
        "for repository 'self' — it defines [entryPoints, setup]",
        4,
    ),
    (
        "unknown-ci-key",
        None,
        EXEC_HEAD.replace("test-discovery", "external")
        + "    ci: {issuer: gh, publicKey: x, subject: y}\n",
        "unknown_key",
        "for ci of provider 'test' — it defines [issuer, publicKey, publicKeyFile]",
        5,
    ),
    (
        "evidence-version-newer",
        "version: 4\n",
        None,
        "version_newer",
        "evidence.yaml version 4 is newer than this changeloop reads (reads: 3)",
        1,
    ),
    (
        "execution-version-newer",
        None,
        "# wiring\nversion: 2\n",
        "version_newer",
        "execution.yaml version 2 is newer than this changeloop reads (reads: 1)",
        2,
    ),
    (
        "evidence-version-older",
        "version: 2\n",
        None,
        "version_older",
        "evidence.yaml version 2 is older than this changeloop reads (reads: 3)",
        1,
    ),
    ("version-not-int", "version: three\n", None, "version_invalid", "must be an integer", 1),
    (
        "version-missing",
        "claims: {}\n",
        None,
        "version_missing",
        "evidence.yaml has no `version` (this changeloop reads: 3)",
        1,
    ),
    ("not-a-mapping", "- version: 3\n", None, "not_a_mapping", "must be a mapping", 1),
    (
        "string-command",
        None,
        EXEC_HEAD + "    command: npm test -- --run\n",
        "command_not_list",
        'provider \'test\': command must be an argv list, e.g. ["npm", "test", "--", "--run"]',
        5,
    ),
    (
        "string-setup",
        None,
        "version: 1\nrepositories:\n  self:\n    setup: [npm ci]\n",
        "command_not_list",
        'setup entry 0 must be an argv list, e.g. ["npm", "ci"]',
        4,
    ),
    (
        "duplicate-key",
        "version: 3\nclaims:\n  a: {requires: [test]}\n  b: {}\n  a: {}\n",
        None,
        "duplicate_key",
        "duplicate key 'a' (lines 3 and 5)",
        5,
    ),
    (
        "duplicate-top-key",
        None,
        "version: 1\nproviders: {}\nversion: 1\n",
        "duplicate_key",
        "duplicate key 'version' (lines 1 and 3)",
        3,
    ),
    (
        "yaml-syntax",
        "version: 3\nclaims:\n  a: [test\n",
        None,
        "yaml_syntax",
        "YAML syntax error",
        4,
    ),
    (  # found at the end of the file, opened on line 3: the message says where it began
        "yaml-unclosed-list",
        "version: 3\nclaims:\n  a: [test\n",
        None,
        "yaml_syntax",
        "(the [ list opened at line 3, column 6)",
        4,
    ),
    (
        "python-tag",
        "version: 3\nclaims: !!python/object/apply:os.system ['true']\n",
        None,
        "yaml_tag",
        "'tag:yaml.org,2002:python/object/apply:os.system' is not allowed",
        2,
    ),
    (
        "custom-tag",
        None,
        "version: 1\nproviders: !secret {}\n",
        "yaml_tag",
        "'!secret' is not allowed",
        2,
    ),
    (
        "merge-key",
        None,
        "version: 1\nbase: &b {x: 1}\nproviders:\n  t:\n    <<: *b\n",
        "yaml_merge",
        "merge keys",
        5,
    ),
    (
        "recursive-alias",
        "version: 3\nclaims: &a\n  x: *a\n",
        None,
        "recursive_alias",
        "refers to itself",
        2,
    ),
    (
        "bad-enum",
        "version: 3\nclaims:\n  c:\n    inputMode: keyboard\n",
        None,
        "invalid_value",
        "must be one of [browser-automation, os-input, both], not 'keyboard'",
        4,
    ),
    (
        "bad-type",
        None,
        EXEC_HEAD + "    timeoutMs: soon\n",
        "wrong_type",
        "providers.test.timeoutMs must be an integer, not a string",
        5,
    ),
    (
        "bad-name",
        None,
        "version: 1\nproviders:\n  'bad name':\n    command: [x]\n",
        "invalid_name",
        "'bad name' under providers is not a valid name",
        3,
    ),
    (
        "bad-max-age",
        None,
        EXEC_HEAD.replace("test-discovery", "external") + "    maxAge: soon\n",
        "invalid_value",
        "maxAge",
        5,
    ),
    (
        "missing-required",
        None,
        "version: 1\nservices:\n  web:\n    env: {A: b}\n",
        "missing_key",
        "service 'web' is missing command",
        3,
    ),
    (
        "public-key-choice",
        None,
        EXEC_HEAD.replace("test-discovery", "external") + "    ci: {issuer: gh}\n",
        "public_key_choice",
        "exactly one of publicKey or publicKeyFile",
        5,
    ),
    (
        "public-key-file-missing",
        None,
        EXEC_HEAD.replace("test-discovery", "external")
        + "    ci: {issuer: gh, publicKeyFile: keys/ci.pub}\n",
        "public_key_file_missing",
        "publicKeyFile 'keys/ci.pub' of provider 'test' cannot be read",
        5,
    ),
    (
        "multiple-documents",
        "version: 3\n---\nversion: 3\n",
        None,
        "yaml_multiple_documents",
        "more than one YAML document",
        3,
    ),
]


def _refusal(tmp_path: Path, evidence: str | None, execution: str | None) -> ConfigError:
    ref = make_workspace(tmp_path, evidence=evidence or VALID_EVIDENCE, execution=execution)
    with pytest.raises(ConfigError) as caught:
        build_plan(tmp_path.resolve(), ref)
    return caught.value


def _find(error: ConfigError, code: str) -> Problem:
    codes = [p.code for p in error.problems]
    assert code in codes, f"{code} not in {codes}: {error}"
    return next(p for p in error.problems if p.code == code)


@pytest.mark.parametrize(
    ("evidence", "execution", "code", "words", "line"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_refusal(
    tmp_path: Path, evidence: str | None, execution: str | None, code: str, words: str, line: int
) -> None:
    error = _refusal(tmp_path, evidence, execution)
    assert error.exit_code == 2
    problem = _find(error, code)
    assert words in problem.message
    assert problem.location is not None
    assert problem.location.line == line, problem.render()
    assert problem.location.column is not None and problem.location.column >= 1
    expected_file = "evidence.yaml" if execution is None else "execution.yaml"
    assert problem.location.path == f"openspec/changes/demo/{expected_file}"


def test_every_refusal_but_syntax_has_a_fix(tmp_path: Path) -> None:
    error = _refusal(tmp_path, "version: 3\nextra: 1\n", EXEC_HEAD + "    command: npm test\n")
    assert {p.code for p in error.problems} == {"unknown_key", "command_not_list"}
    assert all(p.fix for p in error.problems)
    # both files' problems come together, evidence.yaml first
    assert [p.location.path.rsplit("/", 1)[-1] for p in error.problems if p.location] == [
        "evidence.yaml",
        "execution.yaml",
    ]


def _write_bytes(tmp_path: Path, data: bytes) -> ConfigError:
    ref = make_workspace(tmp_path)
    (ref.path / "evidence.yaml").write_bytes(data)
    with pytest.raises(ConfigError) as caught:
        build_plan(tmp_path.resolve(), ref)
    return caught.value


def test_binary_file_is_refused(tmp_path: Path) -> None:
    error = _write_bytes(tmp_path, b"version: 3\nclaims:\n  \x00\x01\x02\x89PNG\n")
    problem = _find(error, "binary_file")
    assert "not a UTF-8 text file" in problem.message
    assert problem.location is not None and problem.location.line == 3


def test_utf16_file_is_refused_as_binary(tmp_path: Path) -> None:
    error = _write_bytes(tmp_path, "version: 3\n".encode("utf-16"))
    assert _find(error, "binary_file").location is not None


def test_non_utf8_file_is_refused(tmp_path: Path) -> None:
    error = _write_bytes(tmp_path, b"version: 3\nclaims:\n  caf\xe9: {}\n")
    problem = _find(error, "not_utf8")
    assert "not a UTF-8 text file" in problem.message
    assert problem.location is not None
    assert (problem.location.line, problem.location.column) == (3, 6)
    assert error.exit_code == 2


def test_bom_is_stripped(tmp_path: Path) -> None:
    ref = make_workspace(tmp_path)
    (ref.path / "evidence.yaml").write_bytes(b"\xef\xbb\xbf" + VALID_EVIDENCE.encode())
    plan = build_plan(tmp_path.resolve(), ref)
    assert plan.evidence.claims["greeting"].location is not None
    assert plan.evidence.claims["greeting"].location.line == 4


def test_alias_bomb_is_refused(tmp_path: Path) -> None:
    lines = ["version: 3", "x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    error = _write_bytes(tmp_path, ("\n".join(lines) + "\n").encode())
    problem = _find(error, "alias_bomb")
    assert "more than 10000 nodes" in problem.message
    assert problem.location is not None and 3 <= (problem.location.line or 0) <= 10


def test_modest_aliases_are_fine(tmp_path: Path) -> None:
    ref = make_workspace(
        tmp_path,
        evidence="version: 3\nrequires: &caps [test]\nclaims:\n"
        "  a: {requires: *caps}\n  b: {requires: *caps}\n",
    )
    plan = build_plan(tmp_path.resolve(), ref)
    assert plan.evidence.claims["b"].requires == ("test",)


def test_missing_evidence_names_path_and_an_example(tmp_path: Path) -> None:
    ref = make_workspace(tmp_path, evidence=None)
    with pytest.raises(ConfigError) as caught:
        build_plan(tmp_path.resolve(), ref)
    problem = _find(caught.value, "evidence_missing")
    assert "openspec/changes/demo/evidence.yaml" in problem.message
    assert "version: 3" in (problem.fix or "")
    assert "evidence init" not in (problem.fix or "")  # init needs the file itself


def test_a_tab_that_indents_is_named_in_the_fix(tmp_path: Path) -> None:
    error = _refusal(tmp_path, "version: 3\nrequires:\n\t- test\n", None)
    problem = _find(error, "yaml_syntax")
    assert problem.location is not None and problem.location.line == 3
    assert problem.fix is not None and "tab" in problem.fix and "spaces" in problem.fix


def test_an_unknown_key_close_to_a_defined_one_is_named_in_the_fix(tmp_path: Path) -> None:
    evidence = (
        "version: 3\nrequires: [test]\nclaims:\n  g:\n    statement: x\n    reqiures: [test]\n"
    )
    problem = _find(_refusal(tmp_path, evidence, None), "unknown_key")
    assert problem.fix == "did you mean requires? rename reqiures to requires, or remove it"


def test_an_unknown_key_far_from_every_defined_one_keeps_the_plain_fix(tmp_path: Path) -> None:
    problem = _find(_refusal(tmp_path, "version: 3\nzzzqqq: 1\n", None), "unknown_key")
    assert problem.fix == "remove or rename zzzqqq"
