"""Prove real public projects from zero, pasting only what changeloop prints.

usage::

    python bench/real_projects.py MANIFEST.json [NAME ...] [--keep DIR] [--rounds 4]

``MANIFEST.json`` names each project's source tree by path — a ``git archive``
tarball (``.tar.gz``, one top folder) or a folder — kept outside this
repository; nothing of a project is in it, and nothing here builds one::

    {"projects": [
      {"name": "clack", "source": "/work/team/real-projects/clack.tar.gz",
       "repository": "bombshell-dev/clack", "commit": "594c58a7…",
       "kind": "pnpm workspace, root `pnpm --color -r run test`, pretest build, vitest",
       "expected": 583,
       "runner": "pnpm test (core 75 + prompts 508)"}
    ]}

``expected`` is the maintainers' own count: the tests their own runner reports
when run as they run it (the sum over the suite's parts). Optional keys:
``evidence`` (the change's evidence.yaml, e.g. ``repositories: {solutions:
exercise-solutions}`` where the project lives in a folder of its repository) and
``expected_failed`` (a project whose own suite fails there: then right means
prove exits 1 with that many failed tests — a number, or ``[least, most]`` where
some fail only under load — every part counted). For each project, in
a fresh temporary folder: extract, ``git init`` and commit, add
``openspec/changes/probe/evidence.yaml`` (``requires: [test]``), then as a new
user with only changeloop's words to go on: ``evidence init probe --write``, up
to ``--rounds`` rounds of ``evidence doctor --json`` running every finding's
``playbook_command`` (in a shell, as printed) until nothing is unresolved, then
``prove probe --json``. Right = prove exits 0, no test failed, and the
discovered counts of its ``test`` receipts add up to ``expected``.

The environment is a new user's: ``changeloop`` on PATH and nothing else of
this virtualenv, ``npm i -g`` installs into a folder of the run
(``NPM_CONFIG_PREFIX``, on PATH), so one project's pasted installs never help
the next; ``CI=1`` as the maintainers' CI sets it. Prints one line per project
and a Markdown table of the figures (project @ commit, kind, maintainers' count,
changeloop's count, wall time); ``--json`` prints them as JSON. Exit 0 only when
every project is right.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHANGE = "probe"
EVIDENCE = "version: 3\nrequires: [test]\n"


@dataclass
class Outcome:
    """One project's run: what changeloop counted, what was pasted, how long it took."""

    name: str
    right: bool = False
    prove_exit: int | None = None
    status: str | None = None
    counts: list[tuple[str, Any]] = field(default_factory=list)
    pasted: list[tuple[str, int]] = field(default_factory=list)  # (command, exit code)
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def discovered(self) -> int | None:
        found = [c.get("discovered") for _, c in self.counts if isinstance(c, dict)]
        return sum(int(n) for n in found if isinstance(n, int)) if found else None

    @property
    def failed(self) -> int:
        return sum(int(c.get("failed") or 0) for _, c in self.counts if isinstance(c, dict))


def new_user_env(home: Path) -> dict[str, str]:
    """PATH with `changeloop` and a private npm prefix first; nothing else of ours."""
    tools = home / "bin"
    tools.mkdir(parents=True, exist_ok=True)
    found = shutil.which(os.environ.get("CHANGELOOP", "changeloop"))
    if found is None:
        raise SystemExit("changeloop is not on PATH (or set CHANGELOOP)")
    (tools / "changeloop").symlink_to(found)
    prefix = home / "npm-global"
    (prefix / "bin").mkdir(parents=True, exist_ok=True)
    venv = os.environ.get("VIRTUAL_ENV")
    path = [
        p
        for p in os.environ.get("PATH", "").split(os.pathsep)
        if p and not (venv and p.startswith(venv))
    ]
    return {
        **{
            k: v
            for k, v in os.environ.items()
            if k not in ("VIRTUAL_ENV", "PYTHONPATH", "NO_COLOR", "FORCE_COLOR")
        },
        "PATH": os.pathsep.join([str(tools), str(prefix / "bin"), *path]),
        "NPM_CONFIG_PREFIX": str(prefix),
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@b",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@b",
        # CI as the maintainers' CI sets it; no NO_COLOR (it would beat a test script's own
        # `--color`, and colour snapshots would fail for a reason no user has)
        "CI": "1",
    }


def run(
    argv: list[str] | str, cwd: Path, env: dict[str, str], timeout: int = 1800
) -> tuple[int, str, str]:
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            shell=isinstance(argv, str),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return 124, "", "timeout"
    return proc.returncode, proc.stdout, proc.stderr


def extract(source: Path, into: Path) -> Path:
    """The project's tree in ``into``: a tarball's one top folder, or a copy of a folder."""
    if source.is_dir():
        root = into / source.name
        shutil.copytree(source, root, symlinks=True)
        return root
    with tarfile.open(source) as tf:
        tf.extractall(into, filter="data")
    tops = [p for p in into.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise SystemExit(f"{source}: expected one top folder, found {len(tops)}")
    return tops[0]


def test_counts(doc: dict[str, Any], root: Path) -> list[tuple[str, Any]]:
    """(provider, the `test` receipt's counts) for every test receipt prove wrote."""
    found: list[tuple[str, Any]] = []
    for prov in doc.get("providers") or []:
        for rec in prov.get("receipts") or []:
            if rec.get("capability") != "test" or not rec.get("path"):
                continue
            try:
                envelope = json.loads((root / rec["path"]).read_text())
                statement = json.loads(base64.b64decode(envelope["payload"]))
                found.append((prov.get("name"), statement["predicate"]["changeloop"]["tests"]))
            except (OSError, ValueError, KeyError):
                found.append((prov.get("name"), "unreadable"))
    return found


def one(project: dict[str, Any], home: Path, rounds: int) -> Outcome:
    env = new_user_env(home)
    out = Outcome(project["name"])
    root = extract(Path(project["source"]), home / "src")
    (root / "openspec" / "specs").mkdir(parents=True, exist_ok=True)
    (root / "openspec" / "specs" / ".keep").write_text("")
    change = root / "openspec" / "changes" / CHANGE
    change.mkdir(parents=True)
    (change / "evidence.yaml").write_text(project.get("evidence", EVIDENCE))
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "import"]):
        run(argv, root, env)
    started = time.monotonic()
    code, _, err = run(["changeloop", "evidence", "init", CHANGE, "--write", "--json"], root, env)
    if code != 0:
        out.notes.append(f"init exit {code}: {err.strip()[-200:]}")
    for _ in range(rounds):
        code, stdout, _ = run(["changeloop", "evidence", "doctor", CHANGE, "--json"], root, env)
        doc = _json(stdout)
        if doc.get("unresolved", 1) == 0:
            break
        commands = [
            f["playbook_command"] for f in doc.get("findings") or [] if f.get("playbook_command")
        ]
        if not commands:
            kinds = sorted({f.get("kind") for f in doc.get("findings") or []})
            out.notes.append(f"doctor: {doc.get('unresolved')} unresolved ({kinds}), no command")
            break
        for command in commands:
            pasted, _, perr = run(command, root, env)
            out.pasted.append((command, pasted))
            if pasted != 0:
                out.notes.append(f"`{command[:90]}` exit {pasted}: {perr.strip()[-200:]}")
    code, stdout, err = run(["changeloop", "prove", CHANGE, "--json"], root, env, timeout=3600)
    out.wall_s = time.monotonic() - started
    doc = _json(stdout)
    out.prove_exit, out.status = code, doc.get("status")
    out.counts = test_counts(doc, root)
    failing = project.get("expected_failed", 0)
    least, most = failing if isinstance(failing, list) else (failing, failing)
    out.right = (
        code == (1 if most else 0)
        and out.discovered == project["expected"]
        and least <= out.failed <= most
    )
    if not out.right:
        out.notes.append(f"prove stderr: {err.strip()[-400:]!r}")
    return out


def _json(text: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def table(projects: list[dict[str, Any]], outcomes: dict[str, Outcome]) -> str:
    rows = [
        "| project @ commit | kind | maintainers' count | changeloop's count | pasted | prove "
        "| wall time |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in projects:
        o = outcomes.get(p["name"])
        if o is None:
            continue
        parts = " + ".join(
            f"{name} {c.get('discovered')}" for name, c in o.counts if isinstance(c, dict)
        )
        rows.append(
            f"| {p['repository']} @ {p['commit'][:8]} | {p['kind']} | {p['expected']}"
            f" ({p.get('runner', '')}) | {o.discovered} ({parts}) | {len(o.pasted)} |"
            f" {o.status} (exit {o.prove_exit}) | {o.wall_s:.0f} s |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("manifest", type=Path)
    parser.add_argument("names", nargs="*", help="projects to run (default: all)")
    parser.add_argument("--rounds", type=int, default=4, help="doctor rounds (default 4)")
    parser.add_argument("--keep", type=Path, help="work in DIR and keep it (default: a temp dir)")
    parser.add_argument("--json", action="store_true", help="print the outcomes as JSON")
    args = parser.parse_args(argv)
    projects = json.loads(args.manifest.read_text())["projects"]
    chosen = [p for p in projects if not args.names or p["name"] in args.names]
    outcomes: dict[str, Outcome] = {}
    for project in chosen:
        if args.keep is not None:
            home = args.keep / project["name"]
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir(parents=True)
            outcomes[project["name"]] = one(project, home, args.rounds)
        else:
            with tempfile.TemporaryDirectory(prefix=f"real-{project['name']}-") as tmp:
                outcomes[project["name"]] = one(project, Path(tmp), args.rounds)
        o = outcomes[project["name"]]
        print(
            f"{o.name}: {'right' if o.right else 'WRONG'} - prove exit {o.prove_exit}, "
            f"status {o.status}, test receipts {o.counts}, pasted {len(o.pasted)}, "
            f"{o.wall_s:.0f}s"
            + ("; " + "; ".join(o.notes) if o.notes else "")
            + "".join(f"\n  pasted (exit {code}): {command}" for command, code in o.pasted),
            file=sys.stderr,
            flush=True,
        )
    right = sum(o.right for o in outcomes.values())
    if args.json:
        print(json.dumps({n: vars(o) for n, o in outcomes.items()}, indent=2, default=str))
    else:
        print(table(chosen, outcomes))
        print(
            f"\nreal-prove: {right}/{len(outcomes)} projects proven from zero with their own counts"
        )
    return 0 if right == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
