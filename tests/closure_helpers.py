"""Every incremental answer beside the clean one, each from the same saved state.

The rule these tests hold: an incremental answer — a cached pass, the signed
no-change record, ``gate`` — equals what ``prove --no-cache`` says now.
:func:`answers` asks all four through the real CLI (a process of its own, with
the environment given), restoring ``.changeloop/`` between them so that no road
sees what another one wrote:

1. ``gate`` (runs nothing; first, before any prove rewrites ``latest/``);
2. ``prove`` with the no-change record in place;
3. ``prove`` with the record removed (the full path, reusing every cached pass);
4. ``prove --no-cache`` (the clean answer).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repo_helpers import GIT_IDENTITY

STATE = ".changeloop"
_SKIPPED = ("runs", "sandboxes")  # per-run directories: nothing an answer reads


def base_env(overrides: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """This process's environment without git redirections, with ``overrides`` (None: unset)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_IDENTITY)
    for name, value in (overrides or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def cli(
    root: Path, *argv: str, env: Mapping[str, str | None] | None = None
) -> tuple[int, dict[str, Any], str]:
    """``changeloop <argv> --root <root> --json`` in a process of its own."""
    proc = subprocess.run(
        [sys.executable, "-m", "changeloop", *argv, "--root", str(root), "--json"],
        cwd=root,
        env=base_env(env),
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        doc = json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError(f"no JSON from {argv}: {proc.stdout!r}\n{proc.stderr}") from exc
    return proc.returncode, doc, proc.stderr


def prove(
    root: Path, change: str, *extra: str, env: Mapping[str, str | None] | None = None
) -> tuple[int, dict[str, Any]]:
    code, doc, _err = cli(root, "prove", change, *extra, env=env)
    return code, doc


def snapshot(root: Path, into: Path) -> Path:
    """Hard links of ``.changeloop/`` (bar per-run folders): the same inodes come back,
    as the no-change record's key (cache entries by inode, size, mtime) requires."""
    saved = into / "state"
    _link_tree(root / STATE, saved, top=True)
    return saved


def restore(root: Path, saved: Path) -> None:
    for entry in (root / STATE).iterdir():
        if entry.name in _SKIPPED:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    _link_tree(saved, root / STATE, top=False)


def _link_tree(src: Path, dst: Path, *, top: bool) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copystat(src, dst)
    for entry in src.iterdir():
        if top and entry.name in _SKIPPED:
            continue
        target = dst / entry.name
        if entry.is_symlink():
            os.symlink(os.readlink(entry), target)
        elif entry.is_dir():
            _link_tree(entry, target, top=False)
        else:
            os.link(entry, target)


@dataclass(frozen=True)
class Answers:
    gate: str
    nochange: str
    cached: str
    clean: str
    docs: Mapping[str, Mapping[str, Any]]
    decision: str  # how road 2 was answered: "no-change" or "full"

    def agree(self) -> bool:
        """The prove roads say what the clean run says; gate too, or it names why it does
        not speak (a stale or refused receipt: gate runs nothing, so an edit that leaves
        the result as it was still needs a proof)."""
        roads = self.nochange == self.cached == self.clean
        return roads and (
            self.gate == self.clean or (self.clean == "proven" and named_refusal(self.docs["gate"]))
        )

    def why(self) -> str:
        return (
            f"gate={self.gate} no-change={self.nochange} ({self.decision}) "
            f"cached={self.cached} clean={self.clean}\n"
            + json.dumps(
                {
                    k: {"status": v.get("status"), "claims": v.get("claims")}
                    for k, v in self.docs.items()
                },
                indent=1,
            )[:4000]
        )


REFUSALS = frozenset({"stale-content", "stale-wiring", "stale-environment"})


def named_refusal(gate: Mapping[str, Any]) -> bool:
    """Whether ``gate`` set a receipt aside for a stale or unbindable input, by name."""
    return gate.get("status") == "not-proven" and any(
        entry.get("code") in REFUSALS for entry in gate.get("setAside", [])
    )


def decision(root: Path, doc: Mapping[str, Any]) -> str:
    run = root / STATE / "runs" / str(doc.get("runId")) / "run.json"
    try:
        return str(json.loads(run.read_text()).get("decision", "full"))
    except (OSError, ValueError):
        return "none"


def answers(
    root: Path,
    change: str,
    *extra: str,
    env: Mapping[str, str | None] | None = None,
) -> Answers:
    """The four answers, each asked from the state as it is now (restored in between)."""
    # beside the workspace: the same file system, so the snapshot can be hard links
    with tempfile.TemporaryDirectory(prefix="closure-state-", dir=root.parent) as tmp:
        saved = snapshot(root, Path(tmp))
        _code, gated, _err = cli(root, "gate", change, env=env)
        restore(root, saved)
        _code, nochange = prove(root, change, *extra, env=env)
        how = decision(root, nochange)
        restore(root, saved)
        (root / STATE / "decisions" / f"{change}.json").unlink(missing_ok=True)
        _code, cached = prove(root, change, *extra, env=env)
        restore(root, saved)
        _code, clean = prove(root, change, *extra, "--no-cache", env=env)
    docs = {"gate": gated, "nochange": nochange, "cached": cached, "clean": clean}
    return Answers(
        gate=str(gated["status"]),
        nochange=str(nochange["status"]),
        cached=str(cached["status"]),
        clean=str(clean["status"]),
        docs=docs,
        decision=how,
    )


def state_of(doc: Mapping[str, Any], provider: str) -> str:
    for entry in doc["providers"]:
        if entry["name"] == provider:
            return str(entry["state"])
    raise AssertionError(f"no provider {provider} in {doc['providers']}")
