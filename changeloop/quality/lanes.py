"""Consumer-quality lanes: ``quality/foundation-quality.json`` (docs/verbs/gate.md).

Usage::

    config = load_quality(root)                    # None when the file does not exist
    lanes = lanes_for(config, plan.repositories)   # [(lane, repository), …] for this change
    results = run_lanes(lanes, plan.repositories)  # in parallel, one process group each
    worst(results)                                 # "pass" | "fail" — never an average

``quality run`` is a plain command runner: no ``.changeloop/`` state, no
locks. Each lane keeps its own result and the worst one decides; nothing is
averaged into a score. The file is strict like evidence.yaml: JSON errors and
unknown keys name the file, line and column.

Two small hooks live here so detection and doctor each call one line:
:func:`prefer_quality_lanes` (``evidence init`` previews the lanes as the
``static-analysis`` provider) and :func:`doctor_findings` (configure and pilot
it first). Discovery never invents a passing quality result: the previewed
provider runs the committed lanes, and no lane applying is not a pass.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from changeloop.config.schema import check_version, schema_problems
from changeloop.config.yamlio import parse_yaml
from changeloop.errors import ConfigError, Location, Problem
from changeloop.marks import Document
from changeloop.model import Provider, Repository

QUALITY_FILE = "quality/foundation-quality.json"
SCHEMA = "foundation-quality-v1.json"
READS = 1
DEFAULT_TIMEOUT_MS = 30 * 60 * 1000


@dataclass(frozen=True)
class Lane:
    name: str
    command: tuple[str, ...]
    repositories: tuple[str, ...] | None  # None: every repository of the change
    timeout_ms: int = DEFAULT_TIMEOUT_MS


@dataclass(frozen=True)
class QualityConfig:
    path: Path
    lanes: Mapping[str, Lane]


@dataclass(frozen=True)
class LaneResult:
    lane: str
    repository: str
    command: tuple[str, ...]
    status: str  # pass | fail
    exit_code: int | None
    duration_ms: int
    reason: str | None
    output: str

    def to_json(self) -> dict[str, Any]:
        return {
            "lane": self.lane,
            "repository": self.repository,
            "command": list(self.command),
            "status": self.status,
            "exitCode": self.exit_code,
            "durationMs": self.duration_ms,
            "reason": self.reason,
        }


# -- the file ---------------------------------------------------------------
def _strict_pairs(display: str) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise ConfigError(
                    Problem(
                        code="duplicate_key",
                        message=f"{display} has the key {key!r} twice",
                        location=Location(display),
                        fix=f"keep one {key!r}",
                    )
                )
            out[key] = value
        return out

    return pairs


def load_quality(root: Path) -> QualityConfig | None:
    """The lanes of ``root/quality/foundation-quality.json``; None when there is no file."""
    path = root / QUALITY_FILE
    if not path.exists():
        return None
    display = QUALITY_FILE
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        raise ConfigError(
            Problem(
                code="unreadable_file",
                message=f"cannot read {display}: {exc.strerror}",
                location=Location(display),
            )
        ) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            Problem(
                code="not_utf8",
                message=f"{display} is not UTF-8 text",
                location=Location(display),
                fix="re-save the file as UTF-8",
            )
        ) from exc
    try:
        data = json.loads(text, object_pairs_hook=_strict_pairs(display))
    except ConfigError as exc:  # a duplicate key: JSON's decoder knows no position, YAML's does
        raise _located_duplicate(text, path, display) or exc from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            Problem(
                code="json_syntax",
                message=f"{display} is not valid JSON: {exc.msg}",
                location=Location(display, exc.lineno, exc.colno),
                fix="fix the JSON at that position",
            )
        ) from exc
    doc = _with_marks(text, path, display, data)
    check_version(doc, file="foundation-quality.json", reads=READS)
    problems = schema_problems(doc, SCHEMA, family="foundation-quality", version=READS)
    if problems:
        raise ConfigError(problems)
    lanes = {
        name: Lane(
            name=name,
            command=tuple(spec["command"]),
            repositories=tuple(spec["repositories"]) if "repositories" in spec else None,
            timeout_ms=int(spec.get("timeoutMs", DEFAULT_TIMEOUT_MS)),
        )
        for name, spec in data["lanes"].items()
    }
    return QualityConfig(path=path, lanes=lanes)


def _located_duplicate(text: str, path: Path, display: str) -> ConfigError | None:
    """The duplicate-key refusal with its line and column, from the YAML reader (JSON is
    YAML, and the one YAML dialect refuses a duplicate key naming both lines)."""
    try:
        parse_yaml(text.replace("\t", " "), path, display)
    except ConfigError as exc:
        if all(problem.code == "duplicate_key" for problem in exc.problems):
            return exc
    return None


def _with_marks(text: str, path: Path, display: str, data: Any) -> Document:
    """The JSON values with YAML marks for line/column (JSON is YAML; raw tabs in JSON are
    whitespace only, so turning them into spaces keeps every column)."""
    try:
        marked = parse_yaml(text.replace("\t", " "), path, display)
    except ConfigError:
        return Document(path=path, display=display, data=data)
    return Document(
        path=path,
        display=display,
        data=data,
        value_marks=marked.value_marks,
        key_marks=marked.key_marks,
    )


def lanes_for(
    config: QualityConfig, repositories: Mapping[str, Repository]
) -> list[tuple[Lane, str]]:
    """Every (lane, repository) pair the change's repositories take part in."""
    out: list[tuple[Lane, str]] = []
    for lane in config.lanes.values():
        for repo in repositories:
            if lane.repositories is None or repo in lane.repositories:
                out.append((lane, repo))
    return out


# -- running ----------------------------------------------------------------
def _run_one(lane: Lane, repo: str, cwd: Path) -> LaneResult:
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(lane.command),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return LaneResult(
            lane.name,
            repo,
            lane.command,
            "fail",
            None,
            0,
            f"could not start {lane.command[0]!r}: {exc.strerror or exc}",
            "",
        )
    reason = None
    try:
        out, _ = proc.communicate(timeout=lane.timeout_ms / 1000)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, _ = proc.communicate()
        reason = f"timed out after {lane.timeout_ms} ms"
    duration = round((time.monotonic() - started) * 1000)
    code = proc.returncode
    status = "pass" if code == 0 and reason is None else "fail"
    if status == "fail" and reason is None:
        reason = f"exited {code}"
    return LaneResult(
        lane.name,
        repo,
        lane.command,
        status,
        code,
        duration,
        reason,
        out.decode("utf-8", errors="replace"),
    )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def run_lanes(
    lanes: Sequence[tuple[Lane, str]],
    repositories: Mapping[str, Repository],
    jobs: int | None = None,
) -> list[LaneResult]:
    """Run every lane in its repository, in parallel; results in the given order."""
    if not lanes:
        return []
    workers = jobs or min(len(lanes), max(2, os.cpu_count() or 2))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [
            pool.submit(_run_one, lane, repo, repositories[repo].path) for lane, repo in lanes
        ]
        return [f.result() for f in futures]


def worst(results: Sequence[LaneResult]) -> str:
    """The summary is the worst lane's result; no lane at all is not a pass."""
    if not results:
        return "inconclusive"
    return "fail" if any(r.status == "fail" for r in results) else "pass"


# -- hooks for detection and doctor ------------------------------------------
# root -> ((size, mtime_ns, inode) of the lanes file, the repositories its lanes route)
_ROUTED: dict[Path, tuple[tuple[int, int, int], frozenset[str] | None]] = {}


def routed_repositories(root: Path, repositories: Mapping[str, Repository]) -> tuple[str, ...]:
    """The repositories of the change some lane runs in: what a quality provider's result
    depends on (each one's content is bound, and its receipt speaks for each). A lanes file
    that cannot be read routes every repository: the run then says why it fails."""
    path = root / QUALITY_FILE
    try:
        info = path.stat()
        stamp = (info.st_size, info.st_mtime_ns, info.st_ino)
    except OSError:
        return tuple(sorted(repositories))
    known = _ROUTED.get(root)
    if known is None or known[0] != stamp:
        lanes: frozenset[str] | None = None  # None: some lane runs in every repository
        try:
            config = load_quality(root)
            if config is not None and all(lane.repositories for lane in config.lanes.values()):
                named = (r for lane in config.lanes.values() for r in lane.repositories or ())
                lanes = frozenset(named)
        except ConfigError:
            lanes = None
        known = _ROUTED[root] = (stamp, lanes)
    found = known[1]
    return tuple(sorted(repositories if found is None else found & set(repositories)))


def quality_command(change_id: str) -> tuple[str, ...]:
    return ("changeloop", "quality", "run", "--change", change_id)


def runs_quality(provider: Provider) -> bool:
    command = provider.command or ()
    return "quality" in command and "run" in command
