"""Incremental equals clean, over random edits to every kind of bound input.

A small workspace whose checks read each kind of input a result can depend on —
content, a file under ``openspec/``, a symbolic link, a ``passEnv`` variable, a
tool's bytes, what an upstream provider generates (its wiring), the claim policy,
an installed dependency — is proven; then random edits are made (committed where
git holds them) and the cached ``prove``, the no-change answer and ``gate`` must
say what ``prove --no-cache`` says. ``gate`` runs nothing: it says the same, or —
where the clean run proves the change — it names why its receipts no longer speak
(``stale-content``, ``stale-wiring``, ``stale-environment``; a link to what is
not content is one). It never says proven where the clean run does not.

Seeded and bounded (hypothesis, ``derandomize``): the same cases on every run, in
well under a minute.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from closure_helpers import named_refusal, restore, snapshot
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from prove_helpers import make_change, make_repo
from repo_helpers import commit_all

from changeloop.cli.main import main

CHECK = """\
set -e
grep -q '^ok$' data.txt
grep -q '^ok$' openspec/changes/c/input.txt
grep -q '^ok$' link.txt
test "${MODE:-ok}" != broken
grep -q '^1$' node_modules/dep/v.txt
grep -q '^hello$' build/out.txt
"""


def _execution(gen_word: str) -> str:
    return (
        "version: 1\n"
        "providers:\n"
        "  gen:\n"
        f"    command: [sh, -c, 'mkdir -p build && echo {gen_word} > build/out.txt']\n"
        "    inputs: [gen.txt]\n"
        "  check:\n"
        "    command: [sh, check.sh]\n"
        "    dependsOn: [gen]\n"
        "    passEnv: [MODE]\n"
        "    claims: [checked]\n"
        "  tool:\n"
        "    command: [{tool}]\n"
    )


def _evidence(archetype: str, requires: str) -> str:
    return (
        f"version: 3\nclaims:\n  checked:\n    requires: {requires}\n    archetype: {archetype}\n"
    )


EDITS = st.lists(
    st.one_of(
        st.tuples(st.just("content"), st.sampled_from(["ok", "bad"])),
        st.tuples(st.just("openspec"), st.sampled_from(["ok", "bad"])),
        st.tuples(st.just("link"), st.sampled_from(["content", "openspec", "ignored"])),
        st.tuples(st.just("env"), st.sampled_from(["ok", "broken", None])),
        st.tuples(st.just("noise"), st.sampled_from(["a-secret-value-1", None])),
        st.tuples(st.just("tool"), st.sampled_from(["0", "1"])),
        st.tuples(st.just("upstream"), st.sampled_from(["hello", "byebye"])),
        st.tuples(st.just("policy"), st.sampled_from(["behavioral", "structural"])),
        st.tuples(st.just("requires"), st.sampled_from(["[check]", "[check, tool]"])),
        st.tuples(st.just("installed"), st.sampled_from(["1", "2"])),
    ),
    min_size=1,
    max_size=3,
)


class World:
    def __init__(self, base: Path) -> None:
        self.tool = base / "tools" / "check-tool"
        self.tool.parent.mkdir()
        self._tool("0")
        self.root = make_repo(
            base / "ws",
            {
                ".gitignore": ".changeloop/\nbuild/\nnode_modules/\nlocal/\n",
                "check.sh": CHECK,
                "data.txt": "ok\n",
                "gen.txt": "g\n",
            },
        )
        self.evidence = {"archetype": "behavioral", "requires": "[check]"}
        self.gen = "hello"
        make_change(self.root, "c", _evidence(**self.evidence), self._execution())
        (self.root / "openspec/changes/c/input.txt").write_text("ok\n")
        (self.root / "local").mkdir()
        (self.root / "local/target.txt").write_text("ok\n")
        (self.root / "openspec/changes/c/linked.txt").write_text("ok\n")
        os.symlink("data.txt", self.root / "link.txt")
        self._install("1")
        commit_all(self.root, "world")
        self.env: dict[str, str | None] = {"MODE": "ok", "AWS_SECRET_ACCESS_KEY": None}

    def _execution(self) -> str:
        return _execution(self.gen).replace("{tool}", str(self.tool))

    def _tool(self, code: str) -> None:
        """The tool's bytes, rewritten in place with the same size and mtime."""
        body = f"#!/bin/sh\nexit {code}\n".encode()
        if self.tool.exists():
            before = self.tool.stat()
            with self.tool.open("r+b") as fh:
                fh.write(body)
            os.utime(self.tool, ns=(before.st_atime_ns, before.st_mtime_ns))
        else:
            self.tool.write_bytes(body)
            self.tool.chmod(0o755)

    def _install(self, version: str) -> None:
        """What a package manager does: the package's files and its record of them."""
        dep = self.root / "node_modules" / "dep"
        dep.mkdir(parents=True, exist_ok=True)
        (dep / "v.txt").write_text(f"{version}\n")
        record = {"name": "app", "packages": {"node_modules/dep": {"version": f"{version}.0.0"}}}
        (self.root / "node_modules/.package-lock.json").write_text(json.dumps(record))

    def edit(self, kind: str, value: str | None) -> None:
        root = self.root
        if kind == "content":
            (root / "data.txt").write_text(f"{value}\n")
        elif kind == "openspec":
            (root / "openspec/changes/c/input.txt").write_text(f"{value}\n")
            (root / "openspec/changes/c/linked.txt").write_text(f"{value}\n")
        elif kind == "link":
            targets = {
                "content": "data.txt",
                "openspec": "openspec/changes/c/linked.txt",
                "ignored": "local/target.txt",
            }
            (root / "link.txt").unlink()
            os.symlink(targets[str(value)], root / "link.txt")
            (root / "local/target.txt").write_text("ok\n" if value != "ignored" else "bad\n")
        elif kind == "env":
            self.env["MODE"] = value
        elif kind == "noise":
            self.env["AWS_SECRET_ACCESS_KEY"] = value
        elif kind == "tool":
            self._tool(str(value))
        elif kind == "upstream":
            self.gen = str(value)
        elif kind == "policy":
            self.evidence["archetype"] = str(value)
        elif kind == "requires":
            self.evidence["requires"] = str(value)
        elif kind == "installed":
            self._install(str(value))
        change = root / "openspec/changes/c"
        (change / "evidence.yaml").write_text(_evidence(**self.evidence))
        (change / "execution.yaml").write_text(self._execution())
        commit_all(root, f"edit {kind}")


@contextlib.contextmanager
def _environ(values: Mapping[str, str | None]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run(argv: list[str]) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        main(argv)
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


def _answers(world: World) -> dict[str, dict[str, Any]]:
    root = world.root
    base = ["--root", str(root), "--json"]
    with _environ(world.env), tempfile.TemporaryDirectory(dir=root.parent) as tmp:
        saved = snapshot(root, Path(tmp))
        found = {"gate": _run(["gate", "c", *base])}
        restore(root, saved)
        found["nochange"] = _run(["prove", "c", *base])
        restore(root, saved)
        (root / ".changeloop/decisions/c.json").unlink(missing_ok=True)
        found["cached"] = _run(["prove", "c", *base])
        restore(root, saved)
        found["clean"] = _run(["prove", "c", "--no-cache", *base])
    return found


@seed(20291)
@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(edits=EDITS)
def test_incremental_answers_equal_the_clean_one(
    tmp_path_factory: Any, edits: list[tuple[str, str | None]]
) -> None:
    world = World(tmp_path_factory.mktemp("world"))
    with _environ(world.env):
        first = _run(["prove", "c", "--root", str(world.root), "--json"])
    assert first["status"] == "proven", first
    for kind, value in edits:
        world.edit(kind, value)
    found = _answers(world)
    clean = found["clean"]["status"]
    for road in ("nochange", "cached"):
        assert found[road]["status"] == clean, (edits, road, found[road], found["clean"])
    gate = found["gate"]
    assert gate["status"] == clean or (clean == "proven" and named_refusal(gate)), (
        edits,
        gate,
        found["clean"],
    )
