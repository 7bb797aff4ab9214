"""How a test cites a claim, per framework: the one snippet doctor, prove and init show.

Example::

    framework_of("test-discovery", ("python", "-m", "pytest"))   # "pytest"
    snippet("pytest", "greeting")    # '@pytest.mark.claim("greeting")'
    snippet("vitest", "greeting")    # 'test("… [claim:greeting]", () => { … })'

A claim is credited only by a passing test that cites it (or a provider that
lists it in ``claims:``); these are the forms each runner's reader understands.
Pure and dependency-free: the verdict, doctor and the CLI all ask it.
"""

from __future__ import annotations

from collections.abc import Sequence

# pytest's marker, registered the way a project's own config registers markers, so a
# plain `pytest --strict-markers` (without changeloop's plugin) accepts it too.
MARKER_LINE = "claim(*ids): the changeloop claim ids this test proves when it passes"


def framework_of(adapter: str, command: Sequence[str] = (), fmt: str | None = None) -> str:
    """``pytest``, ``unittest``, ``vitest``, ``jest``, ``node-test``, ``playwright``,
    ``cargo``, or ``listing`` (the provider's own ``claims:`` is the only way)."""
    words = [w.rsplit("/", 1)[-1] for w in command]
    if adapter == "playwright" or "playwright" in words:
        return "playwright"
    if adapter not in ("test-discovery", "mutation"):
        return "listing"
    if fmt == "unittest" or "unittest" in words:
        return "unittest"
    for tool in ("pytest", "vitest", "jest"):
        if tool in words or f"py.{tool}" in words:
            return tool
    if "node" in words and "--test" in command:
        return "node-test"
    if "cargo" in words:
        return "cargo"
    return "listing"


def snippet(framework: str, claim: str) -> str:
    """The code that cites ``claim`` in a test of ``framework``."""
    if framework == "pytest":
        return f'@pytest.mark.claim("{claim}")'
    if framework == "unittest":
        return f'"""What it checks [claim:{claim}]."""  (the test method\'s docstring)'
    if framework in ("vitest", "jest", "node-test"):
        return f'test("what it checks [claim:{claim}]", () => {{ … }})'
    if framework == "playwright":
        return (
            'test("what it checks", '
            f'{{ annotation: {{ type: "claim", description: "{claim}" }} }}, '
            "async ({ page }) => { … })"
        )
    return f"claims: [{claim}]  (on the provider, in execution.yaml)"


def how_to_cite(framework: str, claim: str) -> str:
    """One sentence: where the snippet goes."""
    code = snippet(framework, claim)
    if framework == "pytest":
        return f"cite it from the test that proves it: {code} above the test function"
    if framework == "unittest":
        return f"cite it from the test that proves it: {code}"
    if framework in ("vitest", "jest", "node-test"):
        return f"cite it in the name of the test that proves it: {code}"
    if framework == "playwright":
        return f"cite it from the test that proves it: {code}"
    if framework == "cargo":
        return f"Rust test names cannot carry a tag: list it with {code}"
    return f"list it on the provider that proves it: {code}"
