"""The run's fingerprinter binds the plan's claims into every provider's fingerprint."""

from __future__ import annotations

from pathlib import Path

from config_helpers import plan_for

from changeloop.model import ContentIdentity, Plan
from changeloop.run.fingerprinter import Fingerprinter

EXECUTION = """\
version: 1
providers:
  lint:
    adapter: command
    command: [ruff, check]
  unit:
    adapter: command
    command: [pytest, -q]
"""
EVIDENCE = """\
version: 3
requires: [test]
claims:
  greeting:
    statement: The app greets.
    requires: [{capability}]
"""


def _fingerprints(plan: Plan, tmp_path: Path) -> dict[str, str]:
    identity = ContentIdentity(
        tree="4b825dc642cb6eb9a060e54bf8d69288fbe4904d", head=None, dirty=False
    )
    fingerprinter = Fingerprinter(
        plan,
        lambda _repo: identity,
        sandbox="none",
        issuer="local",
        hmac_key=b"k" * 32,
        state_path=tmp_path / "state",
        environ={"PATH": "/usr/bin"},
    )
    return {name: fingerprinter.fingerprint(p, {}) for name, p in plan.providers.items()}


def test_a_claims_edit_moves_every_fingerprint_and_nothing_else_does(tmp_path: Path) -> None:
    test = plan_for(tmp_path / "a", EVIDENCE.format(capability="test"), EXECUTION)
    again = plan_for(tmp_path / "b", EVIDENCE.format(capability="test"), EXECUTION)
    lint = plan_for(tmp_path / "c", EVIDENCE.format(capability="lint"), EXECUTION)
    first = _fingerprints(test, tmp_path)
    assert _fingerprints(again, tmp_path) == first
    moved = _fingerprints(lint, tmp_path)
    assert all(moved[name] != first[name] for name in first), (first, moved)
