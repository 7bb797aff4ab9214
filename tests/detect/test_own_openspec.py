"""changeloop's own changes and every example's change pass preflight (`prove --dry-run`)."""

from __future__ import annotations

import json

import pytest
from repo_paths import REPO_ROOT

from changeloop.cli.main import main
from changeloop.workspace.discovery import list_changes

REPO = REPO_ROOT
OWN = sorted(c.id for c in list_changes(REPO))
EXAMPLES = sorted(
    (root.name, change.id)
    for root in (REPO / "examples").iterdir()
    if (root / "openspec").is_dir() and root.name != "two-repos"  # needs setup.sh first
    for change in list_changes(root)
)


def test_changeloop_has_its_own_changes() -> None:
    assert len(OWN) >= 5


@pytest.mark.parametrize("change", OWN)
def test_own_change_plans(change: str, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["prove", change, "--root", str(REPO), "--dry-run", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"test", "static-analysis"} <= {p["name"] for p in doc["providers"]}
    # A module split must carry the change's wiring along: every source path a command
    # names exists (changeloop/gate.py became a package and the self-prove failed on it).
    named = {
        arg.split("::")[0]
        for p in doc["providers"]
        for arg in p["command"] or []
        if arg.startswith(("changeloop/", "tests/"))
    }
    assert [path for path in sorted(named) if not (REPO / path).exists()] == []


@pytest.mark.parametrize(("example", "change"), EXAMPLES)
def test_example_change_plans(
    example: str, change: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code = main(
        ["prove", change, "--root", str(REPO / "examples" / example), "--dry-run", "--json"]
    )
    assert code == 0, capsys.readouterr()
