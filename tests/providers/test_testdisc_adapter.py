"""The test-discovery adapter end to end: real pytest runs through run_process."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from adapter_helpers import adapter_context, run_adapter

from changeloop.model import Claim, Evidence, Plan, Provider, Repository
from changeloop.outcome import Outcome
from changeloop.providers import test_discovery
from changeloop.workspace.changeref import ChangeRef

GREEN = """
import pytest

@pytest.mark.claim("greeting")
def test_greets():
    assert "hi".upper() == "HI"

@pytest.mark.claim("farewell")
def test_waves():
    assert BYE == "bye"

BYE = "bye"
"""


def _run(
    tmp_path: Path, files: dict[str, str], argv: list[str], **provider_keys: Any
) -> list[Outcome]:
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    claims = {c: Claim(id=c, requires=("test",)) for c in ("greeting", "farewell", "untested")}
    evidence = Evidence(
        path=repo / "evidence.yaml",
        version=3,
        repositories={"self": "."},
        requires={},
        claims=claims,
    )
    keys = {
        "name": "test",
        "adapter": "test-discovery",
        "capability": "test",
        "repository": "self",
        "command": tuple(argv),
        "timeout_ms": 60_000,
        **provider_keys,
    }
    provider = Provider(**keys)
    plan = Plan(
        root=repo,
        change=ChangeRef(id="c", path=repo),
        evidence=evidence,
        execution=None,
        repositories={"self": Repository(name="self", path=repo, relpath=".")},
        providers={"test": provider},
        services={},
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)

    ctx = adapter_context(
        plan,
        provider,
        workdirs={"self": repo},
        identities={},
        run_dir=run_dir,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    return run_adapter(ctx)


PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
XML = ".changeloop/reports/test.xml"


def test_green_run_credits_cited_claims_and_passes_both(tmp_path: Path) -> None:
    test, disc = _run(tmp_path, {"test_a.py": GREEN}, [*PYTEST, f"--junitxml={XML}"], report=XML)
    assert (test.capability, test.status, disc.capability, disc.status) == (
        "test",
        "pass",
        "discovery",
        "pass",
    )
    assert test.tests is not None and test.tests.to_json() == {
        "discovered": 2,
        "passed": 2,
        "failed": 0,
        "skipped": 0,
    }
    assert dict(test.claims) == {
        "greeting": "credited",
        "farewell": "credited",
        "untested": "uncredited",
    }
    assert disc.provider == "test" and test.exit_code == 0
    assert test.observer is not None and test.observer.tool == "pytest"
    assert (tmp_path / "run" / "report.xml").is_file()


def test_failing_test_marks_its_claim_failed(tmp_path: Path) -> None:
    files = {"test_a.py": GREEN.replace('BYE = "bye"', 'BYE = "ciao"')}
    test, disc = _run(tmp_path, files, [*PYTEST, f"--junitxml={XML}"], report=XML)
    assert (test.status, disc.status) == ("fail", "pass")
    assert test.claims["farewell"] == "failed" and test.claims["greeting"] == "uncredited"
    assert test.failed_tests == ("test_a::test_waves",)
    assert "test-failed" in {f.kind for f in test.findings}


def test_json_report_and_discovery_provider_name(tmp_path: Path) -> None:
    test, disc = _run(
        tmp_path,
        {"test_a.py": GREEN},
        [*PYTEST, "--json-report", "--json-report-file=out/r.json"],
        report="out/r.json",
        discovery_provider="unit-discovery",
        name="unit",
    )
    assert (test.status, disc.status, disc.provider) == ("pass", "pass", "unit-discovery")
    assert test.claims["greeting"] == "credited"


def test_stale_report_is_deleted_and_missing_report_on_exit_0_is_inconclusive(
    tmp_path: Path,
) -> None:
    stale = tmp_path / "repo" / XML
    stale.parent.mkdir(parents=True)
    stale.write_text(
        '<testsuites><testsuite><testcase classname="a" name="b"/></testsuite></testsuites>'
    )
    test, disc = _run(tmp_path, {}, [sys.executable, "-c", "pass"], report=XML)
    assert not stale.exists()
    assert (test.status, disc.status, test.tests) == ("inconclusive", "inconclusive", None)
    assert "report-missing" in {f.kind for f in test.findings}


def test_conftest_import_error_fails_both_with_classification(tmp_path: Path) -> None:
    files = {"conftest.py": "import no_such_plugin_xyz\n", "test_a.py": GREEN}
    test, disc = _run(tmp_path, files, [*PYTEST, f"--junitxml={XML}"], report=XML)
    assert (test.status, disc.status, test.exit_code, test.tests) == ("fail", "fail", 4, None)
    assert {"pytest-conftest-error", "report-missing"} <= {f.kind for f in test.findings}


def test_name_filter_matching_nothing_fails_discovery(tmp_path: Path) -> None:
    test, disc = _run(
        tmp_path, {"test_a.py": GREEN}, [*PYTEST, "-k", "nomatch", f"--junitxml={XML}"], report=XML
    )
    assert (test.status, disc.status, test.exit_code) == ("fail", "fail", 5)
    assert "no-tests-collected" in {f.kind for f in disc.findings}


def test_all_skipped_passes_test_but_never_discovery_even_with_minimum_0(tmp_path: Path) -> None:
    files = {"test_a.py": "import pytest\n\n@pytest.mark.skip\ndef test_x():\n    pass\n"}
    test, disc = _run(tmp_path, files, [*PYTEST, f"--junitxml={XML}"], report=XML, minimum=0)
    assert (test.status, disc.status) == ("pass", "fail")


def test_minimum_floor(tmp_path: Path) -> None:
    test, disc = _run(
        tmp_path, {"test_a.py": GREEN}, [*PYTEST, f"--junitxml={XML}"], report=XML, minimum=3
    )
    assert (test.status, disc.status) == ("pass", "fail")
    assert disc.reason == "2 test(s) ran, fewer than minimum 3"


def test_timeout_fails_with_finding(tmp_path: Path) -> None:
    files = {"test_a.py": "import time\n\ndef test_slow():\n    time.sleep(30)\n"}
    test, disc = _run(tmp_path, files, [*PYTEST, f"--junitxml={XML}"], report=XML, timeout_ms=1500)
    assert (test.status, disc.status) == ("fail", "fail")
    assert "timeout" in {f.kind for f in test.findings}


def test_spawn_error_fails_both(tmp_path: Path) -> None:
    test, disc = _run(tmp_path, {}, ["no-such-runner-xyz"], report=XML)
    assert (test.status, disc.status) == ("fail", "fail")
    assert test.reason is not None and "could not start" in test.reason


def test_libtest_from_stdout_without_report(tmp_path: Path) -> None:
    script = (
        "print('running 2 tests')\nprint('test a ... ok')\nprint('test b ... ok')\n"
        "print('test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out')\n"
    )
    test, disc = _run(tmp_path, {"fake_cargo.py": script}, [sys.executable, "fake_cargo.py"])
    assert (test.status, disc.status) == ("pass", "pass")
    assert test.tests is not None and test.tests.passed == 2


def test_preflight_refuses_escape_unknown_format_and_missing_command() -> None:
    provider = Provider(
        name="t", adapter="test-discovery", capability="test", report="../x.xml", format="nunit"
    )
    codes = {p.code for p in test_discovery.preflight(provider, None)}  # type: ignore[arg-type]
    assert codes == {"missing_command", "path_escape", "unknown_report_format"}
