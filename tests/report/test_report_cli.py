"""`changeloop report` end to end: real prove runs, real receipts, the page's content as text."""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from report_helpers import CHANGE, workspace

from changeloop.cli.main import main


def _prove(root: Path, *extra: str) -> int:
    return main(["prove", CHANGE, "--root", str(root), "--jobs", "2", *extra])


def _runs(root: Path) -> list[dict[str, Any]]:
    runs = [json.loads((r / "run.json").read_text()) for r in (root / ".changeloop/runs").iterdir()]
    return sorted(runs, key=lambda r: str(r["startedOn"]))  # oldest first


def _cells(page: str) -> dict[tuple[str, str], str]:
    """(claim, capability) -> the status words the cell shows."""
    out = {}
    for row in re.findall(r'<tr data-claim="([^"]+)">(.*?)</tr>', page, re.S):
        for cap, words in re.findall(
            r'data-capability="([^"]+)"[^>]*><span class="badge"><span aria-hidden="true">'
            r"[^<]*</span> ([^<]+)</span>",
            row[1],
        ):
            out[(row[0], cap)] = words
    return out


def _causes(page: str) -> dict[tuple[str, str], str]:
    """(claim, capability) -> the one-line cause a cell shows without hover ('' if none)."""
    out = {}
    for row in re.findall(r'<tr data-claim="([^"]+)">(.*?)</tr>', page, re.S):
        for cell in re.findall(r'<td class="cell[^"]*"(.*?)</td>', row[1], re.S):
            cap = re.search(r'data-capability="([^"]+)"', cell)
            cause = re.search(r'<div class="cause">([^<]*)</div>', cell)
            assert cap is not None
            out[(row[0], cap.group(1))] = html.unescape(cause.group(1)) if cause else ""
    return out


def _bars(page: str) -> list[str]:
    return re.findall(r'<g class="bar [^"]*"[^>]*data-provider="([^"]+)"', page)


@pytest.fixture
def proved(tmp_path: Path) -> Path:
    root = workspace(tmp_path)
    assert _prove(root) == 1  # lint fails: not proven
    assert _prove(root) == 1  # unit and review reused from the cache
    return root


def test_report_writes_one_page_and_exits_0_when_not_proven(
    proved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["report", CHANGE, "--root", str(proved)]) == 0
    out, err = capsys.readouterr()
    page_path = proved / ".changeloop" / "report" / f"{CHANGE}.html"
    assert out.strip() == str(page_path)  # from here: the workspace is not below the cwd
    assert "NOT PROVEN" in err and page_path.as_uri() in err
    page = (proved / out.strip()).read_text()
    assert 'class="verdict not-proven"' in page and "Verdict: NOT PROVEN" in page
    assert _cells(page) == {
        ("greeting", "test"): "proven",
        ("lint-clean", "static-analysis"): "failed",
        ("reviewed", "test"): "proven",
        ("reviewed", "review"): "inconclusive",
    }
    latest = _runs(proved)[-1]
    assert {name: p["state"] for name, p in latest["providers"].items()} == {
        "unit": "cached",
        "lint": "ran",
        "review": "cached",
    }
    assert latest["runId"] in page
    # One bar per provider that ran in the latest run; the cached ones are named, not drawn.
    assert _bars(page) == ["lint"]
    assert "unit (cached: reused a pass)" in page
    assert re.search(r'<tr data-provider="unit"><th scope="row">unit</th>.*?<td>cached</td>', page)
    # The crediting, the reason and the signer are in the cell's detail.
    assert "provider review passed but nothing in its run cites claim reviewed" in page
    assert "signed by issuer <strong>local</strong>" in page
    # Findings by kind, with a link relative to the page.
    assert "<h3>style (1)</h3><ul class='findings'><li><a href=\"../../app.py\">" in page
    assert "&lt;b&gt;carefully&lt;/b&gt;" in page


def test_report_json_and_out(
    proved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "elsewhere" / "r.html"
    capsys.readouterr()
    assert main(["report", CHANGE, "--root", str(proved), "--out", str(target), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    trust = doc.pop("trust")
    assert trust["source"] == "checkout" and trust["changed"] == []
    assert doc == {
        "version": "1",
        "root": str(proved),
        "change": CHANGE,
        "status": "not-proven",
        "runId": _runs(proved)[-1]["runId"],
        "path": str(target),
        "findings": [],
    }
    page = target.read_text()
    # Links stay relative to where the page is.
    assert '<a href="../ws/app.py">' in page


def test_report_of_an_earlier_run_draws_every_provider_and_the_critical_path(
    proved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _runs(proved)[0]
    capsys.readouterr()
    assert main(["report", CHANGE, "--root", str(proved), "--run", first["runId"]]) == 0
    page = (proved / capsys.readouterr().out.strip()).read_text()
    assert first["runId"] in page
    assert sorted(_bars(page)) == ["lint", "review", "unit"]
    assert "Critical path: unit → review." in page
    assert _cells(page)[("greeting", "test")] == "proven"


def test_unknown_run_is_refused_naming_the_runs(
    proved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["report", CHANGE, "--root", str(proved), "--run", "nope", "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["path"] is None and doc["change"] == CHANGE
    (error,) = doc["errors"]
    assert error["code"] == "unknown_run"
    assert _runs(proved)[-1]["runId"] in error["message"]
    assert main(["report", CHANGE, "--root", str(proved), "--run", "../../etc"]) == 2


def _tamper(path: Path, **changes: Any) -> None:
    envelope = json.loads(path.read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["changeloop"].update(changes)
    if changes.get("status") == "pass":
        statement["predicate"]["result"] = "PASSED"
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    path.write_text(json.dumps(envelope))


def test_a_tampered_receipt_is_not_verified_never_a_pass(
    proved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    latest = proved / ".changeloop" / "receipts" / CHANGE
    _tamper(latest / "lint.static-analysis.json", status="pass", reason=None)
    _tamper(latest / "unit.test.json", durationMs=1)
    capsys.readouterr()
    assert main(["report", CHANGE, "--root", str(proved)]) == 0
    page = (proved / capsys.readouterr().out.strip()).read_text()
    cells, causes = _cells(page), _causes(page)
    assert cells[("lint-clean", "static-analysis")] == "unproven"
    assert cells[("greeting", "test")] == "unproven"
    assert causes[("lint-clean", "static-analysis")].startswith("not verified: ")
    assert causes[("greeting", "test")].startswith("not verified: ")
    assert "proven" not in cells.values()
    assert "Verdict: NOT PROVEN" in page
    for name in ("lint", "unit"):
        row = re.search(rf'<tr data-provider="{name}">(.*?)</tr>', page, re.S)
        assert row and "not verified" in row.group(1) and "✓ pass" not in row.group(1)
    assert "Receipts not counted" in page and "lint.static-analysis.json" in page


def test_prove_report_writes_the_page_of_that_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    capsys.readouterr()
    assert main(["prove", CHANGE, "--root", str(root), "--json", "--report"]) == 1
    out, err = capsys.readouterr()
    doc = json.loads(out)  # still exactly one JSON document
    written = (root / ".changeloop" / "report" / f"{CHANGE}.html").absolute()
    assert f"report: {written.as_uri()}" in err  # a link a terminal opens
    page = (root / ".changeloop" / "report" / f"{CHANGE}.html").read_text()
    assert doc["runId"] in page
    assert sorted(_bars(page)) == ["lint", "review", "unit"]


def test_prove_report_with_a_sign_key_verifies_with_that_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    assert main(["keygen", "--out", str(tmp_path / "ci")]) == 0
    key = tmp_path / "ci" / "changeloop.key"
    capsys.readouterr()
    assert main(["prove", CHANGE, "--root", str(root), "--sign-key", str(key), "--report"]) == 1
    page = (root / ".changeloop" / "report" / f"{CHANGE}.html").read_text()
    assert _cells(page)[("greeting", "test")] == "proven"
    assert "not verified" not in page
    # Without that key, the same receipts are not verified by the workspace key: never a pass.
    capsys.readouterr()
    assert main(["report", CHANGE, "--root", str(root)]) == 0
    page = (root / capsys.readouterr().out.strip()).read_text()
    assert _cells(page)[("greeting", "test")] == "unproven"
    assert _causes(page)[("greeting", "test")].startswith("not verified: ")
    pub = str(tmp_path / "ci" / "changeloop.pub")
    assert main(["report", CHANGE, "--root", str(root), "--public-key", pub]) == 0
    page = (root / ".changeloop" / "report" / f"{CHANGE}.html").read_text()
    assert _cells(page)[("greeting", "test")] == "proven"


def test_before_any_run_the_page_says_no_receipt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    capsys.readouterr()
    assert main(["report", CHANGE, "--root", str(root), "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / f"{CHANGE}.html")  # --out DIR
    page = (tmp_path / f"{CHANGE}.html").read_text()
    assert set(_cells(page).values()) == {"unproven"}
    assert all("no receipt" in cause for cause in _causes(page).values())
    assert "No run was recorded for this change" in page
    assert "Verdict: NOT PROVEN" in page and "no recorded run" in page


def test_committed_sign_off_and_stale_receipts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gate's workspace: a committed sign-off counts (issuer ci); edits stale the rest."""
    from gate_helpers import prove as gate_prove
    from gate_helpers import workspace as gate_workspace

    root = gate_workspace(tmp_path)
    assert main(["keygen", "--out", str(tmp_path / "k")]) == 0
    pem = (tmp_path / "k" / "changeloop.pub").read_text()
    change = root / "openspec" / "changes" / "c1"
    (change / "evidence.yaml").write_text(
        "version: 3\nclaims:\n  greeting: {requires: [check]}\n  reviewed: {requires: [review]}\n"
    )
    execution = change / "execution.yaml"
    execution.write_text(
        execution.read_text() + "  review:\n    adapter: external\n    claims: [reviewed]\n"
        "    ci:\n      issuer: ci\n      publicKey: |\n"
        + "".join(f"        {line}\n" for line in pem.splitlines())
    )
    sign = ["receipt", "sign", "--root", str(root), "--change", "c1", "--claims", "reviewed"]
    sign += ["--key", str(tmp_path / "k" / "changeloop.key"), "--issuer", "ci"]
    assert main([*sign, "--out", str(change / "receipts" / "review.json")]) == 0
    assert gate_prove(root, capsys) == 0

    def page() -> str:
        capsys.readouterr()
        assert main(["report", "c1", "--root", str(root)]) == 0
        return (root / capsys.readouterr().out.strip()).read_text()

    first = page()
    assert _cells(first) == {("greeting", "check"): "proven", ("reviewed", "review"): "proven"}
    assert "Verdict: PROVEN" in first
    # prove's external provider re-issued the committed sign-off under the workspace key.
    assert "signed by issuer <strong>local (accepted from ci)</strong>" in first
    assert re.search(r'<tr data-provider="review">.*?<td>local \(accepted from ci\)</td>', first)
    # Rewire `check` (openspec/ is outside the content): its receipt is stale, not a pass.
    proven = execution.read_text()
    execution.write_text(
        proven.replace(
            "command: [sh, check.sh]\n    claims", "command: [sh, -c, exit 0]\n    claims"
        )
    )
    rewired = page()
    assert _cells(rewired)[("greeting", "check")] == "unproven"
    assert _causes(rewired)[("greeting", "check")].startswith("stale: wiring changed: ")
    assert _cells(rewired)[("reviewed", "review")] == "proven"
    execution.write_text(proven)
    # Edit the content: every receipt bound to the old tree is stale.
    (root / "check.sh").write_text("exit 0 # edited\n")
    edited = page()
    assert set(_cells(edited).values()) == {"unproven"}
    assert all(c.startswith("stale: content changed: ") for c in _causes(edited).values())
    assert "Verdict: NOT PROVEN" in edited and "Receipts not counted" in edited
    # A fresh checkout: only the committed sign-off, verified with the change's CI key.
    (root / "check.sh").write_text("exit 0\n")
    shutil.rmtree(root / ".changeloop")
    fresh = page()
    assert _cells(fresh) == {("greeting", "check"): "unproven", ("reviewed", "review"): "proven"}
    assert "signed by issuer <strong>ci</strong>" in fresh
    assert re.search(r'<tr data-provider="review">.*?<td>committed</td>', fresh)


def test_the_page_never_changes_the_content_it_reports_on(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],  # noqa: ARG001 (quiets the CLI)
) -> None:
    """A checkout without .gitignore: the page in a new .changeloop/ stays out of git's view."""
    from prove_helpers import git

    root = workspace(tmp_path)
    assert not (root / ".gitignore").exists() and not (root / ".changeloop").exists()
    assert main(["report", CHANGE, "--root", str(root)]) == 0
    assert (root / ".changeloop" / "report" / f"{CHANGE}.html").is_file()
    status = git(root, "status", "--porcelain", "--untracked-files=all")
    assert ".changeloop" not in status


def test_a_linked_report_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".changeloop").mkdir()
    (root / ".changeloop" / "report").symlink_to(elsewhere)
    capsys.readouterr()
    assert main(["report", CHANGE, "--root", str(root), "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["errors"][0]["code"] == "state_refused" and doc["path"] is None
    assert list(elsewhere.iterdir()) == []


def test_a_damaged_run_json_is_named_or_passed_over(
    proved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, latest = _runs(proved)
    record = proved / ".changeloop" / "runs" / latest["runId"] / "run.json"
    damaged = json.loads(record.read_text())
    damaged["providers"]["lint"]["slot"] = "two"
    record.write_text(json.dumps(damaged))
    capsys.readouterr()
    assert main(["report", CHANGE, "--root", str(proved), "--run", latest["runId"], "--json"]) == 2
    (error,) = json.loads(capsys.readouterr().out)["errors"]
    assert error["code"] == "run_record_unreadable"
    assert "providers.lint.slot must be a whole number or null" in error["message"]
    # Without --run the newest readable run of the change is drawn.
    assert main(["report", CHANGE, "--root", str(proved), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runId"] == first["runId"]


def test_odd_committed_receipt_files_are_never_waited_on_nor_read_whole(proved: Path) -> None:
    """gate's read (which the report uses): a FIFO is passed over, a 200 MB file refused unread."""
    receipts = proved / "openspec" / "changes" / CHANGE / "receipts"
    receipts.mkdir()
    os.mkfifo(receipts / "fifo.json")
    with (receipts / "big.json").open("wb") as handle:  # sparse: 200 MB on paper
        handle.write(b'{"payload": "')
        handle.truncate(200 * 1024 * 1024)
    probe = (
        "import sys\nfrom changeloop.cli.main import main\n"
        f"code = main(['report', {CHANGE!r}, '--root', {str(proved)!r}])\n"
        # VmHWM, not ru_maxrss: ru_maxrss survives exec, so it would report the size
        # of the (large, late-in-the-suite) pytest process this one was forked from.
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
        "print(code, hwm.split()[1])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    path, code, peak_kib = done.stdout.split()
    assert code == "0"
    assert int(peak_kib) < 150 * 1024
    page = (proved / path).read_text()
    assert "Receipts not counted" in page and "big.json" in page and "fifo.json" not in page
    assert "proven" not in _cells(page).values()  # fail closed, as gate


def test_prove_report_that_cannot_be_written_warns_and_keeps_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    (root / ".changeloop").mkdir()
    (root / ".changeloop" / "report").write_text("a file where the directory goes\n")
    capsys.readouterr()
    assert main(["prove", CHANGE, "--root", str(root), "--json", "--report"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["status"] == "not-proven"
    assert "warning: report not written" in err


def test_a_report_inside_the_repository_does_not_stale_the_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`report --out report.html` in the work tree used to make the next gate say
    "not proven: added report.html"; the page is now kept out of the content."""
    from prove_helpers import git

    root = workspace(tmp_path)
    execution = root / "openspec" / "changes" / CHANGE / "execution.yaml"
    execution.write_text(execution.read_text().replace(" lint.py]", ' -c, "pass"]'))
    execution.write_text(execution.read_text().replace("    envelope: true\n", ""))
    evidence = root / "openspec" / "changes" / CHANGE / "evidence.yaml"
    evidence.write_text(
        evidence.read_text().replace("requires: [test, review]", "requires: [test]")
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a proven change")
    assert main(["prove", CHANGE, "--root", str(root)]) == 0
    assert main(["gate", CHANGE, "--root", str(root)]) == 0
    capsys.readouterr()
    assert main(["report", CHANGE, "--root", str(root), "--out", str(root / "report.html")]) == 0
    assert (root / "report.html").is_file()
    assert git(root, "status", "--porcelain") == ""  # git agrees: not content
    capsys.readouterr()
    code = main(["gate", CHANGE, "--root", str(root), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["status"] == "proven", doc
    assert "/report.html" in (root / ".git" / "info" / "exclude").read_text()
