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
``--strict-markers`` accepts it. Loaded through the ``pytest11`` entry point.
"""

from __future__ import annotations

from typing import Any

import pytest

_MARKER = "claim"


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
