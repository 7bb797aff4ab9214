"""Re-proving a change of 100 providers on the generated 20,000-file tree.

Each provider ``pNNN`` is a ``command`` provider whose ``inputs`` glob covers one
slice of the tree (``src/pkgNNN/**``...). After a first run fills the cache:
  1. nothing changed → goal: 0 providers run, whole ``prove`` ≤ 150 ms (best and
     median) from a cold process, answered from the signed no-change record (run.json says
     ``"decision": "no-change"``), its ``--json`` identical to a full re-prove's;
  2. the same re-prove forced down the full path (the record deleted): the figure
     before the record existed, and the document the check compares against;
  3. one file matched by one provider's ``inputs`` changed → exactly that provider
     runs, ≤ 300 ms plus its own runtime;
  4. nothing changed again, after that edit's re-prove (the usual case; reported
     beside 1., which is measured right after the first 100-provider run, not in
     its place, and not counted in "all targets");
  5. ``changeloop --help`` ≤ 150 ms.

Beside 1. and 3., the peers on the same tree: ``make -j2`` with the same 100 targets,
each a stamp depending on the same slice of files and running the same command (up to
date; one prerequisite edited), and ``git status``, which stats every tracked file and
scans for untracked ones as the no-change check must. make decides by modification
times and signs nothing; the ratio says what changeloop's content identity and
verification cost over that.

Every command is started with this interpreter itself (``sys.executable -m
changeloop``, and the console script beside it for ``--help``), never through a
pyenv shim (~50 ms of bash of its own here). Bytecode may be cached
(PYTHONDONTWRITEBYTECODE is dropped for the children), as it is for an installed
changeloop. What may differ between the two ``--json`` documents: the run id
(``runId``, and the receipt paths under ``runs/<id>/``) — nothing else. The
generated workspace is flushed to disk (``os.sync``) before anything is timed;
the first run's own writes are not.

    python bench/incremental.py [--files 20000] [--providers 100] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sandbox import GIT_ENV, generate, sh

ENV = {k: v for k, v in GIT_ENV.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["CHANGELOOP_EXPLAIN_NOCHANGE"] = "1"  # stderr says why a record was not used
MISSES: list[str] = []
NOTHING_GOAL, ONE_GOAL, HELP_GOAL = 0.150, 0.300, 0.150


def workspace(root: Path, files: int, providers: int) -> Path:
    repo = generate(root, files, 4)
    change = repo / "openspec" / "changes" / "bench"
    change.mkdir(parents=True)
    names = [f"p{i:03d}" for i in range(providers)]
    (change / "evidence.yaml").write_text("version: 3\nrequires: [" + ", ".join(names) + "]\n")
    dirs = files // 100
    lines = ["version: 1", "providers:"]
    for i, name in enumerate(names):
        globs = [f"src/pkg{d:03d}/**" for d in range(dirs) if d % providers == i]
        lines += [
            f"  {name}:",
            "    adapter: command",
            "    command: [python3, -c, 'pass']",
            f"    inputs: {json.dumps(globs or ['nothing/**'])}",
        ]
    (change / "execution.yaml").write_text("\n".join(lines) + "\n")
    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-q", "-m", "change", cwd=repo)
    return repo


def make_peer(root: Path, providers: int, dirs: int) -> list[str]:
    """A Makefile beside the repository with one stamp target per provider, depending on
    the same slice of files its ``inputs`` cover and running the same command; its argv
    (``-r``: no built-in rule is searched for each of the 20,000 prerequisites)."""
    peer = root / "make-peer"
    (peer / "stamps").mkdir(parents=True)
    lines = [f"all: {' '.join(f'{peer}/stamps/p{i:03d}' for i in range(providers))}"]
    for i in range(providers):
        slices = " ".join(
            f"$(wildcard src/pkg{d:03d}/*)" for d in range(dirs) if d % providers == i
        )
        lines += [f"{peer}/stamps/p{i:03d}: {slices}", "\tpython3 -c pass && touch $@"]
    makefile = peer / "Makefile"
    makefile.write_text("\n".join(lines) + "\n")
    return ["make", "-r", "-s", "-j2", "-f", str(makefile)]


def walls(repeat: int, argv: list[str], cwd: Path) -> tuple[float, float]:
    """Best and median wall of ``repeat`` runs of ``argv``."""
    runs = sorted(timed(argv, cwd)[0] for _ in range(repeat))
    return runs[0], runs[len(runs) // 2]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def timed(argv: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=ENV, capture_output=True, check=False)
    return time.perf_counter() - start, proc


def prove(repo: Path) -> tuple[float, dict[str, Any]]:
    argv = [sys.executable, "-m", "changeloop", "prove", "bench", "--json", "--sandbox", "none"]
    wall, proc = timed(argv, repo)
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        sys.exit(f"prove printed no JSON (exit {proc.returncode}):\n{proc.stderr.decode()[-2000:]}")
    MISSES[:] = [
        line for line in proc.stderr.decode().splitlines() if "no-change record not used" in line
    ]
    return wall, doc


def decision(repo: Path, doc: dict[str, Any]) -> str:
    run = json.loads((repo / ".changeloop" / "runs" / doc["runId"] / "run.json").read_text())
    return str(run.get("decision", "full"))


def normal(doc: dict[str, Any]) -> dict[str, Any]:
    """The document with its run id taken out: the only thing a re-prove may change."""
    out: dict[str, Any] = json.loads(json.dumps(doc).replace(doc["runId"], "RUN-ID"))
    return out


def states(doc: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in doc.get("providers", []):
        out[p["state"]] = out.get(p["state"], 0) + 1
    return out


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def best_of(repeat: int, argv: list[str], cwd: Path) -> float:
    return min(timed(argv, cwd)[0] for _ in range(repeat))


def nothing_changed(repo: Path, repeat: int, label: str) -> tuple[bool, dict[str, Any]]:
    """``repeat`` re-proves with nothing changed: printed, and whether the goal held."""
    walls, docs, how = [], [], set()
    for _ in range(repeat):
        wall, doc = prove(repo)
        walls.append(wall)
        docs.append(doc)
        how.add(decision(repo, doc))  # read now: older runs are pruned as new ones come
        for line in MISSES:
            print(f"  ({line})")
    best, fast = min(walls), docs[-1]
    median = sorted(walls)[len(walls) // 2]
    st = states(fast)
    # best AND median: one lucky run does not meet the goal
    fast_enough = best <= NOTHING_GOAL and median <= NOTHING_GOAL
    print(
        f"{label}: {best * 1000:.0f} ms (best of {repeat}; median "
        f"{median * 1000:.0f} ms; goal best and median <= 150 ms: "
        f"{verdict(fast_enough)}), {st}, ran={st.get('ran', 0)} (goal 0), "
        f"answered by: {sorted(how)}; every run: {[round(w * 1000) for w in walls]} ms"
    )
    return fast_enough and st.get("ran", 0) == 0 and how == {"no-change"}, fast


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--providers", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    met = True
    print(f"interpreter: {sys.executable} (called directly, no shim)")
    with tempfile.TemporaryDirectory(prefix="changeloop-incr-") as tmp:
        repo = workspace(Path(tmp), args.files, args.providers)
        # The generated tree and its git objects (tens of MB) are written back by the
        # kernel over the next seconds, slowing every file creation meanwhile; a
        # developer's checkout is not minutes old. Flushed before anything is timed.
        flushed = time.perf_counter()
        os.sync()
        print(
            f"setup flushed before timing (sync): {(time.perf_counter() - flushed) * 1000:.0f} ms"
        )
        bare = best_of(args.repeat, [sys.executable, "-c", "pass"], repo)
        print(f"bare interpreter start: {bare * 1000:.0f} ms (best of {args.repeat})")
        wall, doc = prove(repo)
        print(f"first run: {wall * 1000:.0f} ms, {states(doc)}, status={doc.get('status')}")

        ok, fast = nothing_changed(repo, args.repeat, "nothing changed")
        met &= ok
        make = make_peer(Path(tmp), args.providers, args.files // 100)
        subprocess.run(make, cwd=repo, env=ENV, check=True, capture_output=True)
        make_best, make_median = walls(args.repeat, make, repo)
        status_best, status_median = walls(args.repeat, ["git", "status", "--porcelain"], repo)
        print(
            f"  peers, nothing changed: make -j2 (100 stamps over the same files, up to date) "
            f"best {ms(make_best)}, median {ms(make_median)}; git status best "
            f"{ms(status_best)}, median {ms(status_median)}"
        )

        full_walls, full = [], {}
        for _ in range(min(args.repeat, 3)):
            (repo / ".changeloop" / "decisions" / "bench.json").unlink(missing_ok=True)
            wall, full = prove(repo)
            full_walls.append(wall)
        same = normal(fast) == normal(full) and decision(repo, full) == "full"
        met &= same
        print(
            f"full cached re-prove (record deleted): {min(full_walls) * 1000:.0f} ms, "
            f"{states(full)}; --json identical to the no-change answer bar runId: "
            f"{'yes' if same else 'NO'}"
        )

        # Each repeat edits the file anew (a new content, so p005 runs every time); the
        # figure is changeloop's own share: the wall minus p005's reported runtime.
        target = repo / "src" / "pkg005" / "mod00.py"
        shares, rows, exact, make_runs = [], [], True, []
        for k in range(args.repeat):
            target.write_text(target.read_text() + f"# edited {k}\n")
            wall, doc = prove(repo)
            make_runs.append(timed(make, repo)[0])  # the same edit, seen by make
            ran = [p for p in doc.get("providers", []) if p["state"] == "ran"]
            own = sum(p["durationMs"] for p in ran) / 1000
            exact &= [p["name"] for p in ran] == ["p005"]
            shares.append(wall - own)
            rows.append((round(wall * 1000), round(own * 1000)))
        share = sorted(shares)[len(shares) // 2]
        make_runs.sort()
        ok = exact and min(shares) <= ONE_GOAL
        met &= ok
        print(
            f"one input file changed: changeloop's share (wall - p005's runtime) best "
            f"{min(shares) * 1000:.0f} ms, median {share * 1000:.0f} ms (goal <= 300 ms: "
            f"{verdict(ok)}); exactly ['p005'] ran every time: {'yes' if exact else 'NO'}; "
            f"every run (wall, p005) ms: {rows}"
        )
        print(
            f"  peer, one input changed: make -j2 re-running that one target: wall best "
            f"{ms(make_runs[0])}, median {ms(make_runs[len(make_runs) // 2])}"
        )

        # The usual case: an edit was proven, then nothing changes. Reported beside the
        # target above (measured right after the first, 100-provider run), not instead of
        # it, and not counted in "all targets".
        nothing_changed(repo, args.repeat, "nothing changed after an edit's re-prove")

        script = Path(sys.executable).with_name("changeloop")
        helps = {"python -m changeloop --help": [sys.executable, "-m", "changeloop", "--help"]}
        if script.is_file() and os.access(script, os.X_OK):
            helps["changeloop --help (console script)"] = [str(script), "--help"]
        for label, command in helps.items():
            wall = best_of(args.repeat, command, repo)
            met &= wall <= HELP_GOAL
            print(f"{label}: {wall * 1000:.0f} ms (goal <= 150 ms: {verdict(wall <= HELP_GOAL)})")
    print(f"all targets: {verdict(met)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
