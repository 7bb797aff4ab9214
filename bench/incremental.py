"""Re-proving a change of 100 providers on the generated 20,000-file tree.

Each provider ``pNNN`` is a ``command`` provider whose ``inputs`` glob covers one
slice of the tree (``src/pkgNNN/**``...). After a first run fills the cache:
  1. nothing changed  → goal: 0 providers run, whole ``prove`` ≤ 150 ms;
  2. one file matched by one provider's ``inputs`` changed → exactly 1 runs.
Runs ``changeloop prove bench --json --sandbox none`` as a user would.

    python bench/incremental.py [--files 20000] [--providers 100]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sandbox import GIT_ENV, generate, sh


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


def prove(repo: Path) -> tuple[float, dict]:
    start = time.perf_counter()
    proc = subprocess.run(
        ["changeloop", "prove", "bench", "--json", "--sandbox", "none"],
        cwd=repo,
        env=GIT_ENV,
        capture_output=True,
        check=False,
    )
    wall = time.perf_counter() - start
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        sys.exit(f"prove printed no JSON (exit {proc.returncode}):\n{proc.stderr.decode()[-2000:]}")
    return wall, doc


def states(doc: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in doc.get("providers", []):
        out[p["state"]] = out.get(p["state"], 0) + 1
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--providers", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="changeloop-incr-") as tmp:
        repo = workspace(Path(tmp), args.files, args.providers)
        wall, doc = prove(repo)
        print(f"first run: {wall * 1000:.0f} ms, {states(doc)}, status={doc.get('status')}")
        walls = []
        for _ in range(args.repeat):
            wall, doc = prove(repo)
            walls.append(wall)
        best = min(walls)
        st = states(doc)
        print(
            f"nothing changed: {best * 1000:.0f} ms (best of {args.repeat}; goal <= 150 ms: "
            f"{'met' if best <= 0.150 else 'NOT met'}), {st}; ran={st.get('ran', 0)} (goal 0)"
        )
        target = repo / "src" / "pkg005" / "mod00.py"
        target.write_text(target.read_text() + "# edited\n")
        wall, doc = prove(repo)
        ran = [p["name"] for p in doc.get("providers", []) if p["state"] == "ran"]
        print(f"one input file changed: {wall * 1000:.0f} ms, ran={ran} (goal: exactly ['p005'])")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
