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
 (docs/bootstrap.md): with
``CHANGELOOP_PACKAGES`` (comma-separated top-level names) and
``CHANGELOOP_IMPORTS_DIR`` set, it writes ``imports-<pid>.json`` there after
collection and at the end of the session — ``{"executable": ...,
"packages": {name: [files] or null}}`` (null: never imported). One file per
process, so pytest-xdist workers never write over each other.

Grounding: with ``CHANGELOOP_GROUNDING`` naming a JSON file (``{"repository",
"root", "entryPoints": [{"file", "qualname"}], "lines"?}``, written by the
adapter), each test that cites a claim — and only those — is traced through
its setup and call (``changeloop_grounding``, a copy of
``changeloop/grounding/tracer.py``). ``record-<pid>.json`` next to that file is
the out-of-band record the adapter reads: per citing test its claims (with
depth and ref), its JUnit identity, its grounding and why, the production
functions it ran under entry points (what the mutation adapter mutates),
``reached_outside_entry``, ``groundedBy`` (the fixture whose setup ran the
entry point), what it read, and the production lines it ran when the config
asks for ``lines``. A test cannot write into that record: JUnit properties
(``grounding``, a ``claim`` without a marker) are not read where this plugin
ran. The ``grounding`` property is still written, for people reading the report.
Citations may say ``depth=`` and ``ref=``: ``claim-depth`` / ``claim-ref``
properties right after their ``claim`` property; ``depth="e2e"`` is recorded as
``smoke``.

Dependency-free on purpose (pytest and the standard library only): the
test-discovery adapter copies this file as ``changeloop_claims.py`` onto
``PYTHONPATH`` and adds ``-p changeloop_claims``, so it reaches a project's
pytest that does not have changeloop installed. Where changeloop is installed,
the ``pytest11`` entry point of the same name loads it instead.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

_MARKER = "claim"
PACKAGES_ENV = "CHANGELOOP_PACKAGES"
IMPORTS_ENV = "CHANGELOOP_IMPORTS_DIR"
GROUNDING_ENV = "CHANGELOOP_GROUNDING"
DEPTHS = ("unit", "component", "wiring", "standards-integration", "smoke")
DEPTH_ALIASES = {"e2e": "smoke"}
_seen: dict[str, list[str]] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "claim(*ids): the changeloop claim ids this test proves when it passes",
    )


def citations(item: pytest.Item) -> dict[str, dict[str, str]]:
    """Claim id -> ``{depth?, ref?}`` of every ``claim`` marker on the item.

    One citation per test–claim pair: the marker closest to the test wins
    (function over class over module).
    """
    out: dict[str, dict[str, str]] = {}
    for mark in item.iter_markers(name=_MARKER):
        extra: dict[str, str] = {}
        for key, given in mark.kwargs.items():
            if key not in ("depth", "ref"):
                raise pytest.UsageError(
                    f"{item.nodeid}: @pytest.mark.claim takes depth= and ref=, not {key}="
                )
            value = DEPTH_ALIASES.get(given, given) if isinstance(given, str) else given
            if key == "depth" and value not in DEPTHS:
                raise pytest.UsageError(
                    f"{item.nodeid}: @pytest.mark.claim depth={given!r} is not one of "
                    f"{', '.join(DEPTHS)} (e2e is an alias of smoke)"
                )
            if not isinstance(value, str | int) or isinstance(value, bool) or not str(value):
                raise pytest.UsageError(
                    f"{item.nodeid}: @pytest.mark.claim {key}= takes a string, got {value!r}"
                )
            extra[key] = str(value)
        for value in mark.args:
            if not isinstance(value, str) or not value.strip():
                raise pytest.UsageError(
                    f"{item.nodeid}: @pytest.mark.claim takes claim ids as strings, got {value!r}"
                )
            out.setdefault(value.strip(), extra)
    return out


def cited_claims(item: pytest.Item) -> tuple[str, ...]:
    """Claim ids of every ``claim`` marker on the item (class and module markers included)."""
    return tuple(citations(item))


def pytest_itemcollected(item: pytest.Item) -> None:
    # Before any phase runs, so every report (setup, call, teardown) carries them.
    existing = {v for k, v in item.user_properties if k == _MARKER}
    for claim, extra in citations(item).items():
        if claim not in existing:
            item.user_properties.append((_MARKER, claim))
            for key in ("depth", "ref"):
                if key in extra:
                    item.user_properties.append((f"claim-{key}", extra[key]))


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
        "pytest": pytest.__version__,
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
    config_file = os.environ.get(GROUNDING_ENV)
    if config_file:
        _active[0] = _Grounding.load(Path(config_file), session)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    record_imports()
    if _active[0] is not None:
        _active[0].write()


# -- grounding ------------------------------------------------------------------------------

_HIDDEN_OK = frozenset({"site-packages", "dist-packages", "node_modules", "__pycache__"})
_OWN_MODULES = frozenset(
    {
        __name__,
        "changeloop_claims",
        "changeloop_grounding",
        "changeloop_mutate",
        "changeloop.pytest_plugin",
        "changeloop.grounding.tracer",
        "changeloop.pytest_mutate",
    }
)
_TEST_DIRS = frozenset({"tests", "test"})


def _load_tracer() -> Any:
    try:
        import changeloop_grounding  # type: ignore[import-not-found]  # noqa: PLC0415 - the copy next to this plugin, when there is one (see the module doc)

        return changeloop_grounding
    except ImportError:
        from changeloop.grounding import tracer  # noqa: PLC0415 - the fallback when that copy is absent

        return tracer


def _production_rule(session: pytest.Session, root: str, *, code: bool = True) -> Any:
    """``path -> bool``: a repository file that is not a test file; ``code``: a ``.py`` one."""
    tests = {str(Path(item.path).resolve()) for item in session.items}
    config = session.config
    base = Path(config.rootpath)
    dirs = [
        str((base / str(p)).resolve())
        for p in (config.getini("testpaths") or [])
        if (base / str(p)).is_dir()
    ]
    patterns = [str(p) for p in (config.getini("python_files") or [])]
    top = Path(root)
    # changeloop's own plugin and tracer run during a traced test: never the project's code
    # (they are production files only when the project traced is changeloop itself)
    own = {
        os.path.realpath(str(getattr(module, "__file__", "")))
        for name, module in list(sys.modules.items())
        if name in _OWN_MODULES and getattr(module, "__file__", None)
    }

    def production(path: str) -> bool:
        if (code and not path.endswith(".py")) or path in tests or path in own:
            return False
        try:
            parts = Path(path).relative_to(top).parts
        except ValueError:
            return False  # outside the repository
        folders, name = parts[:-1], parts[-1]
        if any(p.startswith(".") or p in _HIDDEN_OK or p in _TEST_DIRS for p in folders):
            return False  # .venv, .git, .changeloop, installed copies, test folders
        if name == "conftest.py" or any(fnmatch.fnmatch(name, p) for p in patterns):
            return False
        return not any(path.startswith(d + os.sep) for d in dirs)

    return production


class _Grounding:
    """Per-session grounding: which tests to trace, their results, the record."""

    def __init__(self, folder: Path, reason: str | None, tracer: Any, module: Any) -> None:
        self.folder = folder
        self.reason = reason  # set: nothing is traced, every citation is not-checked
        self.tracer = tracer
        self.module = module
        self.current: str | None = None
        self.tests: dict[str, dict[str, Any]] = {}

    @classmethod
    def load(cls, path: Path, session: pytest.Session) -> _Grounding:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            repo = str(doc.get("repository") or "self")
            root = os.path.realpath(str(doc["root"]))
            entries = [(str(e["file"]), str(e["qualname"])) for e in doc.get("entryPoints") or []]
            lines = bool(doc.get("lines"))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            why = f"the tracer failed: unreadable grounding config: {exc}"
            return cls(path.parent, why, None, None)
        if not entries:
            why = (
                f"no entry points declared for repository {repo!r} "
                f"(execution.yaml repositories.{repo}.entryPoints)"
            )
            return cls(path.parent, why, None, None)
        try:
            module = _load_tracer()
            scope = module.Scope(
                root=root,
                production=_production_rule(session, root),
                artifact=_production_rule(session, root, code=False),
                entries=frozenset((str((Path(root) / f).resolve()), q) for f, q in entries),
                lines=lines,
            )
            return cls(path.parent, None, module.make(scope), module)
        except Exception as exc:  # the suite must finish whatever happens here
            return cls(path.parent, f"the tracer failed: {type(exc).__name__}: {exc}", None, None)

    def begin(self, item: pytest.Item) -> None:
        if not citations(item):
            return
        self.current = item.nodeid
        if self.tracer is None:
            return
        try:
            function = _function_of(item)
            code = getattr(function, "__code__", None)
            watch = self.module.nested_codes(code) if code is not None else ()
            self.tracer.begin(watch)
        except Exception as exc:
            self.reason = f"the tracer failed: {type(exc).__name__}: {exc}"
            self.tracer = None

    def label(self, item: pytest.Item | None, where: str) -> str | None:
        """Tell the tracer where a traced test is; the previous label, to restore."""
        if self.tracer is None or self.current is None:
            return None
        if item is not None and item.nodeid != self.current:
            return None
        previous: str = self.tracer.state.label
        self.tracer.label(where)
        return previous

    def finish(self, item: pytest.Item) -> None:
        if self.current != item.nodeid:
            return
        self.current = None
        grounding, reason, observed = "not-checked", self.reason, None
        if self.tracer is not None:
            try:
                function = _function_of(item)
                names = getattr(function, "__globals__", None)
                arguments = getattr(item, "funcargs", None) or {}
                observed = self.tracer.end(names, arguments)
                grounding, reason = observed.grounding, observed.reason
            except Exception as exc:
                reason = f"the tracer failed: {type(exc).__name__}: {exc}"
        item.user_properties.append(("grounding", grounding))
        if grounding == "not-checked":
            item.user_properties.append(("grounding-reason", reason or "not traced"))
        entry: dict[str, Any] = {
            "claims": citations(item),
            "junit": _junit_identity(item.nodeid),
            "grounding": grounding,
            "reason": reason,
            "functions": [list(f) for f in observed.functions] if observed else [],
        }
        if observed is not None:
            if observed.reached_outside_entry is not None:
                entry["reached_outside_entry"] = observed.reached_outside_entry
            if observed.grounded_by:
                entry["groundedBy"] = observed.grounded_by
            if observed.reads:
                entry["reads"] = observed.reads[:20]
            if observed.lines is not None:
                entry["lines"] = observed.lines
        self.tests[item.nodeid] = entry

    def write(self) -> None:
        doc = {"python": sys.version.split()[0], "pytest": pytest.__version__, "tests": self.tests}
        target = self.folder / f"record-{os.getpid()}.json"
        temp = target.with_suffix(".tmp")
        with contextlib.suppress(OSError):
            temp.write_text(json.dumps(doc), encoding="utf-8")
            temp.replace(target)


def _function_of(item: pytest.Item) -> Any:
    """The test's own function (a method's underlying function), or None."""
    function = getattr(item, "obj", None)
    return getattr(function, "__func__", function) if callable(function) else None


def _junit_identity(nodeid: str) -> list[str]:
    """``[classname, name]`` as pytest's junitxml writes them for ``nodeid``."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = names[0].replace("/", ".")
    if names[0].endswith(".py"):
        names[0] = names[0][: -len(".py")]
    names[-1] += bracket + params
    return [".".join(names[:-1]), names[-1]]


_active: list[_Grounding | None] = [None]  # this session's grounding, once collected


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    if _active[0] is not None:
        _active[0].begin(item)
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: Any) -> Generator[None, None, None]:
    # An entry point run by a fixture's setup grounds the test through setup: say which.
    grounding = _active[0]
    node = getattr(request, "node", None)
    item = node if isinstance(node, pytest.Item) else None
    previous = grounding.label(item, f"fixture {fixturedef.argname}") if grounding else None
    try:
        yield
    finally:
        if grounding is not None and previous is not None:
            grounding.label(None, previous)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    if _active[0] is not None:
        _active[0].label(item, "call")
    yield
    if _active[0] is not None:
        _active[0].finish(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    if _active[0] is not None:
        _active[0].finish(item)  # setup failed: the call never ran
    yield
