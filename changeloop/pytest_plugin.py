"""pytest plugin ``changeloop_claims``: tests cite the claims they prove.

Usage::

    import pytest

    @pytest.mark.claim("greeting")
    @pytest.mark.claim("farewell", "polite")   # several ids per marker are fine
    def test_greets(): ...

Each cited id becomes a JUnit ``<property name="claim" value="id"/>``
(through ``item.user_properties``, which both junitxml families write, without
``record_property``'s xunit2 warning) and, when pytest-json-report is active,
``metadata.claims`` on the test. The marker is registered so
``--strict-markers`` accepts it.

It also records where the repository's own packages were imported from
(DESIGN.md §6 "The code proven is the code in the content"): with
``CHANGELOOP_PACKAGES`` (comma-separated top-level names) and
``CHANGELOOP_IMPORTS_DIR`` set, it writes ``imports-<pid>.json`` there after
collection and at the end of the session — ``{"executable": ...,
"packages": {name: [files] or null}}`` (null: never imported). One file per
process, so pytest-xdist workers never write over each other.

Dependency-free on purpose (pytest and the standard library only): the
test-discovery adapter copies this file as ``changeloop_claims.py`` onto
``PYTHONPATH`` and adds ``-p changeloop_claims``, so it reaches a project's
pytest that does not have changeloop installed. Where changeloop is installed,
the ``pytest11`` entry point of the same name loads it instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

_MARKER = "claim"
PACKAGES_ENV = "CHANGELOOP_PACKAGES"
IMPORTS_ENV = "CHANGELOOP_IMPORTS_DIR"
_seen: dict[str, list[str]] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "claim(*ids): the changeloop claim ids this test proves when it passes",
    )


def cited_claims(item: pytest.Item) -> tuple[str, ...]:
    """Claim ids of every ``claim`` marker on the item (class and module markers included)."""
    out: dict[str, None] = {}
    for mark in item.iter_markers(name=_MARKER):
        for value in mark.args:
            if not isinstance(value, str) or not value.strip():
                raise pytest.UsageError(
                    f"{item.nodeid}: @pytest.mark.claim takes claim ids as strings, got {value!r}"
                )
            out[value.strip()] = None
    return tuple(out)


def pytest_itemcollected(item: pytest.Item) -> None:
    # Before any phase runs, so every report (setup, call, teardown) carries them.
    existing = {v for k, v in item.user_properties if k == _MARKER}
    for claim in cited_claims(item):
        if claim not in existing:
            item.user_properties.append((_MARKER, claim))


@pytest.hookimpl(optionalhook=True)
def pytest_json_runtest_metadata(item: pytest.Item, call: Any) -> dict[str, Any]:
    """pytest-json-report hook: put the cited claims in the test's metadata."""
    claims = cited_claims(item)
    return {"claims": list(claims)} if claims else {}


def _where(name: str) -> list[str] | None:
    """The file(s) the already-imported module ``name`` came from, or None if not imported."""
    module = sys.modules.get(name)
    if module is None:
        return None
    file = getattr(module, "__file__", None)
    if isinstance(file, str):
        return [os.path.realpath(file)]
    paths = getattr(module, "__path__", None)  # a namespace package has no __file__
    return [os.path.realpath(p) for p in paths] if paths is not None else []


def record_imports() -> None:
    """Write where each of the project's packages was imported from (never fails the run)."""
    names = [n.strip() for n in os.environ.get(PACKAGES_ENV, "").split(",") if n.strip()]
    folder = os.environ.get(IMPORTS_ENV)
    if not names or not folder:
        return
    for name in names:
        for path in _where(name) or ():
            found = _seen.setdefault(name, [])
            if path not in found:
                found.append(path)
    doc = {
        "executable": sys.executable,
        "packages": {name: _seen.get(name) for name in names},
    }
    target = Path(folder) / f"imports-{os.getpid()}.json"
    temp = target.with_suffix(".tmp")
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        temp.write_text(json.dumps(doc), encoding="utf-8")
        temp.replace(target)


def pytest_collection_finish(session: pytest.Session) -> None:
    record_imports()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    record_imports()
