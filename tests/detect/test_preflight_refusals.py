"""Every preflight refusal of docs/scheduling.md: code, words naming the providers, line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from config_helpers import VALID_EXECUTION, git_init, plan_for

from changeloop.errors import PreflightError, Problem
from changeloop.preflight import check, enforce

TWO_REPOS = "version: 3\nrepositories: {web: web, api: api}\nrequires: [test]\n"

# (id, evidence or None, execution, code, words, file, line)
CASES: list[tuple[str, str | None, str, str, str, str, int]] = [
    (
        "cycle",
        None,
        """\
version: 1
providers:
  a: {command: [x], dependsOn: [b]}
  b: {command: [x], dependsOn: [c]}
  c: {command: [x], dependsOn: [a]}
""",
        "dependency_cycle",
        "dependency cycle: a → b → c → a",
        "execution",
        3,
    ),
    (
        "self-cycle",
        None,
        "version: 1\nproviders:\n  a: {command: [x], dependsOn: [a]}\n",
        "dependency_cycle",
        "dependency cycle: a → a",
        "execution",
        3,
    ),
    (
        "unknown-depends-on",
        None,
        """\
version: 1
providers:
  lint:
    command: [ruff]
    dependsOn:
      - build
""",
        "unknown_dependency",
        "provider 'lint' depends on unknown provider 'build'",
        "execution",
        6,
    ),
    (
        "report-collision",
        None,
        """\
version: 1
providers:
  test: {adapter: test-discovery, command: [x], report: out/r.xml}
  unit:
    adapter: test-discovery
    command: [y]
    discoveryProvider: unit-discovery
    report: out/r.xml
""",
        "report_collision",
        "providers test, unit all write report 'out/r.xml' in repository 'self'",
        "execution",
        8,
    ),
    (
        "secret-env",
        None,
        """\
version: 1
providers:
  deploy:
    command: [x]
    env:
      NODE_ENV: test
      github_token: ghp_abc
""",
        "secret_in_env",
        "provider 'deploy' sets github_token to a literal value",
        "execution",
        7,
    ),
    (
        "nul-in-command",  # a C string ends at \0: the word would be cut short or refused late
        None,
        'version: 1\nproviders:\n  t:\n    command: [echo, "a\\0b"]\n',
        "nul_in_command",
        "provider 't': command word 1 holds a NUL byte",
        "execution",
        4,
    ),
    (
        "nul-in-env-value",
        None,
        'version: 1\nproviders:\n  t:\n    command: [x]\n    env: {X: "1\\0"}\n',
        "bad_env_entry",
        "provider 't': env 'X' holds a NUL byte",
        "execution",
        5,
    ),
    (
        "nul-in-service-command",
        None,
        """\
version: 1
services:
  web:
    command: [serve, "--root=\\0"]
    readiness: {url: "http://127.0.0.1:4100/", expect: {body: hi}}
""",
        "nul_in_command",
        "service 'web': command word 1 holds a NUL byte",
        "execution",
        4,
    ),
    (
        "secret-env-service",
        None,
        """\
version: 1
services:
  web:
    command: [serve]
    readiness: {url: "http://127.0.0.1:4100/", expect: {body: hi}}
    env: {DB_PASSWORD: hunter2}
""",
        "secret_in_env",
        "service 'web' sets DB_PASSWORD",
        "execution",
        6,
    ),
    (
        "status-only-probe",
        None,
        """\
version: 1
services:
  web:
    command: [serve]
    readiness:
      url: http://127.0.0.1:4100/
""",
        "status_only_probe",
        "service 'web': readiness probe expects no body or header",
        "execution",
        5,
    ),
    (
        "probe-without-port",
        None,
        """\
version: 1
services:
  web:
    command: [serve]
    readiness:
      url: http://localhost/health
      expect: {body: ok}
""",
        "probe_without_port",
        "readiness URL 'http://localhost/health' has no literal port",
        "execution",
        6,
    ),
    (
        "two-services-one-port",
        None,
        """\
version: 1
services:
  a:
    command: [serve]
    readiness: {url: "http://127.0.0.1:4100/", expect: {body: a}}
  b:
    command: [serve]
    readiness: {url: "http://localhost:4100/x", expect: {body: b}}
""",
        "port_collision",
        "services 'a', 'b' both probe port 4100",
        "execution",
        8,
    ),
    (
        "contract-digest-one-repository",
        TWO_REPOS,
        """\
version: 1
providers:
  contract:
    adapter: contract-digest
    contract: {web: a.json}
""",
        "contract_needs_two",
        "provider 'contract'",
        "execution",
        5,
    ),
    (
        "contract-digest-with-repository",
        TWO_REPOS,
        """\
version: 1
providers:
  contract:
    adapter: contract-digest
    repository: web
    contract: {web: a.json, api: b.json}
""",
        "contract_digest_repository",
        "takes no single `repository`",
        "execution",
        5,
    ),
    (
        "discovery-collision",
        None,
        """\
version: 1
providers:
  test: {adapter: test-discovery, command: [x], report: a.xml}
  e2e-unit:
    adapter: test-discovery
    command: [y]
    report: b.xml
    discoveryProvider: test
""",
        "discovery_collision",
        "provider 'e2e-unit' issues its discovery receipt as 'test', a name provider 'test'",
        "execution",
        8,
    ),
    (
        "unknown-adapter",
        None,
        "version: 1\nproviders:\n  t:\n    adapter: magic\n",
        "unknown_adapter",
        "provider 't' uses unknown adapter 'magic' (known: command, "
        "contract-digest, external, mutation, playwright, test-discovery)",
        "execution",
        4,
    ),
    (
        "unknown-service",
        None,
        "version: 1\nproviders:\n  e2e: {command: [x], services: [web]}\n",
        "unknown_service",
        "provider 'e2e' uses unknown service 'web'",
        "execution",
        3,
    ),
    (
        "unknown-repository",
        None,
        "version: 1\nproviders:\n  t:\n    command: [x]\n    repository: nope\n",
        "unknown_repository",
        "provider 't' names unknown repository 'nope'",
        "execution",
        5,
    ),
    (
        "provider-without-repository",
        TWO_REPOS,
        "version: 1\nproviders:\n  lint: {command: [x]}\n",
        "provider_without_repository",
        "provider 'lint' names no repository and there are several",
        "execution",
        3,
    ),
    (
        "report-escape",
        None,
        "version: 1\nproviders:\n  t:\n    command: [x]\n    report: ../../etc/out.xml\n",
        "path_escape",
        "report '../../etc/out.xml' leaves",
        "execution",
        5,
    ),
    (
        "inputs-absolute",
        None,
        "version: 1\nproviders:\n  t:\n    command: [x]\n    inputs: [src/**, /etc/passwd]\n",
        "path_escape",
        "inputs '/etc/passwd'",
        "execution",
        5,
    ),
    (
        "contract-escape",
        TWO_REPOS,
        "version: 1\nproviders:\n  c:\n    adapter: contract-digest\n"
        "    contract:\n      web: a.json\n      api: ../web/a.json\n",
        "path_escape",
        "contract.api '../web/a.json'",
        "execution",
        7,
    ),
    (
        "claim-unknown-repository",
        "version: 3\nclaims:\n  c:\n    requires: [test]\n    repository: web\n",
        VALID_EXECUTION,
        "unknown_repository",
        "claim 'c' names unknown repository 'web'",
        "evidence",
        5,
    ),
    (
        "requires-unknown-repository",
        "version: 3\nrequires:\n  test: [self, ghost]\n",
        VALID_EXECUTION,
        "unknown_repository",
        "requires.test names unknown repository 'ghost'",
        "evidence",
        3,
    ),
    (
        "setup-unknown-repository",
        None,
        "version: 1\nrepositories:\n  ghost: {setup: [[x]]}\n",
        "unknown_repository",
        "names unknown repository 'ghost'",
        "execution",
        3,
    ),
    (
        "unknown-claim",
        None,
        "version: 1\nproviders:\n  t:\n    command: [x]\n    claims: [nobody]\n",
        "unknown_claim",
        "provider 't' credits unknown claim 'nobody'",
        "execution",
        5,
    ),
]


def _plan(tmp_path: Path, evidence: str | None, execution: str) -> object:
    if evidence and "api" in evidence:
        git_init(tmp_path / "web")
        git_init(tmp_path / "api")
    if evidence is None:
        return plan_for(tmp_path, execution=execution)
    return plan_for(tmp_path, evidence=evidence, execution=execution)


def _find(problems: list[Problem], code: str) -> Problem:
    codes = [p.code for p in problems]
    assert code in codes, f"{code} not in {codes}"
    return next(p for p in problems if p.code == code)


@pytest.mark.parametrize(
    ("evidence", "execution", "code", "words", "file", "line"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_refusal(
    tmp_path: Path,
    evidence: str | None,
    execution: str,
    code: str,
    words: str,
    file: str,
    line: int,
) -> None:
    plan = _plan(tmp_path, evidence, execution)
    problems = check(plan)  # type: ignore[arg-type]
    problem = _find(problems, code)
    assert words in problem.message
    assert problem.fix
    assert problem.location is not None
    assert problem.location.path == f"openspec/changes/demo/{file}.yaml"
    assert problem.location.line == line, problem.render()
    with pytest.raises(PreflightError) as caught:
        enforce(plan)  # type: ignore[arg-type]
    assert caught.value.exit_code == 2
    assert problem in caught.value.problems


def test_problems_name_the_providers_involved(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, execution=CASES[0][2])
    cycle = _find(check(plan), "dependency_cycle")
    assert cycle.providers == ("a", "b", "c")


def test_all_problems_are_reported_together_in_file_order(tmp_path: Path) -> None:
    plan = plan_for(
        tmp_path,
        execution="""\
version: 1
providers:
  a: {command: [x], dependsOn: [ghost]}
  b: {adapter: nope}
services:
  web: {command: [s], readiness: {url: "http://h/"}}
""",
    )
    problems = check(plan)
    codes = [p.code for p in problems]
    assert {
        "unknown_dependency",
        "unknown_adapter",
        "status_only_probe",
        "probe_without_port",
    } <= set(codes)
    lines = [p.location.line for p in problems if p.location]
    ints = [n for n in lines if n is not None]
    assert lines == ints == sorted(ints)


def test_not_a_git_worktree(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()  # outside the workspace's git repository
    plan = plan_for(
        tmp_path / "ws", evidence="version: 3\nrepositories:\n  self: .\n  plain: ../plain\n"
    )
    problem = _find(check(plan), "not_a_git_worktree")
    assert "repository 'plain'" in problem.message
    assert problem.location is not None and problem.location.line == 4


def test_missing_repository_path(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, evidence="version: 3\nrepositories:\n  self: .\n  gone: ../gone\n")
    problem = _find(check(plan), "missing_repository")
    assert "'gone'" in problem.message and problem.location and problem.location.line == 4


def test_valid_plan_passes_preflight(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, execution=VALID_EXECUTION)
    assert check(plan) == []
    enforce(plan)


def test_second_test_discovery_with_link_is_accepted(tmp_path: Path) -> None:
    plan = plan_for(
        tmp_path,
        execution="""\
version: 1
providers:
  test: {adapter: test-discovery, command: [x], report: a.xml}
  e2e: {adapter: test-discovery, command: [y], report: b.xml, discoveryProvider: e2e-discovery}
""",
    )
    assert [p.code for p in check(plan)] == []
