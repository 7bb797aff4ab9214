"""Sandbox creation + removal on a generated 20,000-file (~80 MB) git repository.

Compares each changeloop sandbox mode with ``cp -a`` of the checkout and with a
plain ``git worktree add`` (+ ``git worktree remove``) on the same disk, and
prints the ratios against their goals ( copy ≤ 0.5× cp -a, worktree ≤ 1.0× plain
git worktree add). Timings are medians over ``--repeat`` runs after a warm-up.
Each changeloop figure includes making the sandbox a repository of its own
; the plain ``git worktree add`` stays the reference it was.

    python bench/sandbox.py [--files 20000] [--kib 4] [--repeat 5] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from changeloop import sandboxes
from changeloop.git.identity import content_identity
from changeloop.model import Repository

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@example.invalid",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@example.invalid",
}


def sh(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(args, cwd=cwd, env=GIT_ENV, check=True, capture_output=True)


def generate(root: Path, files: int, kib: int, seed: int = 5) -> Path:
    """A git repository of ``files`` text files of ~``kib`` KiB in 100-file directories."""
    rng = random.Random(seed)
    repo = root / "repo"
    repo.mkdir()
    sh("git", "init", "-q", "-b", "main", cwd=repo)
    words = [f"w{i:04x}" for i in range(4096)]
    for i in range(files):
        d = repo / "src" / f"pkg{i // 100:03d}"
        if i % 100 == 0:
            d.mkdir(parents=True)
        size = max(64, int(rng.gauss(kib * 1024, kib * 256)))
        text = " ".join(rng.choices(words, k=size // 6))[:size]
        (d / f"mod{i % 100:02d}.py").write_text(text + "\n")
    (repo / ".gitignore").write_text("node_modules/\nbuild/\n")
    sh("git", "add", "-A", cwd=repo)
    sh("git", "commit", "-q", "-m", "generated", cwd=repo)
    sh("git", "repack", "-adq", cwd=repo)
    sh("git", "prune", cwd=repo)
    return repo


def timed(fn: Callable[[], None], repeat: int) -> float:
    fn()  # warm-up: page cache, git's object lookups
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--kib", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=None, help="where to generate (same disk)")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="changeloop-bench-", dir=args.dir) as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        repo = generate(root, args.files, args.kib)
        size = sum(p.stat().st_size for p in (repo / "src").rglob("*") if p.is_file())
        print(
            f"tree: {args.files} files, {size / 1e6:.1f} MB, generated in "
            f"{time.perf_counter() - t0:.1f}s; cpus={os.cpu_count()}"
        )
        work = root / "work"
        work.mkdir()
        boxes = root / "boxes"
        repository = Repository(name="bench", path=repo, relpath="repo")

        def cp_a_files() -> None:
            sh("cp", "-a", str(repo / "src"), str(work / "cp"))
            sh("rm", "-rf", str(work / "cp"))

        def cp_a_checkout() -> None:
            sh("cp", "-a", str(repo), str(work / "cp"))
            sh("rm", "-rf", str(work / "cp"))

        def git_worktree() -> None:
            sh("git", "worktree", "add", "-q", "--detach", str(work / "wt"), "HEAD", cwd=repo)
            sh("git", "worktree", "remove", "--force", str(work / "wt"), cwd=repo)

        def git_worktree_fast_remove() -> None:
            sh("git", "worktree", "add", "-q", "--detach", str(work / "wt"), "HEAD", cwd=repo)
            sh("rm", "-rf", str(work / "wt"))
            sh("git", "worktree", "prune", cwd=repo)

        def mode(name: str) -> Callable[[], None]:
            def run() -> None:
                box = sandboxes.create(name, repository, boxes)  # type: ignore[arg-type]
                box.remove()

            return run

        # A dirty tracked file and an untracked one, like a developer's checkout.
        (repo / "src/pkg000/mod00.py").write_text("edited\n")
        (repo / "src/pkg000/new.py").write_text("untracked\n")

        results = {
            "cp -a of the files (no .git) + rm -rf": timed(cp_a_files, args.repeat),
            "cp -a of the checkout (with .git) + rm -rf": timed(cp_a_checkout, args.repeat),
            "git worktree add + git worktree remove": timed(git_worktree, args.repeat),
            "git worktree add + rm -rf + prune": timed(git_worktree_fast_remove, args.repeat),
            "changeloop worktree": timed(mode("worktree"), args.repeat),
            "changeloop copy": timed(mode("copy"), args.repeat),
            "changeloop none (identity only)": timed(mode("none"), args.repeat),
            "content identity (warm index)": timed(
                lambda: content_identity(repo, include_untracked=True) and None, args.repeat
            ),
        }
        for label, secs in results.items():
            print(f"  {label:<40} {secs * 1000:8.0f} ms")
        copy_ratio = results["changeloop copy"] / results["cp -a of the files (no .git) + rm -rf"]
        wt_ratio = results["changeloop worktree"] / results["git worktree add + rm -rf + prune"]
        print(
            f"copy / cp -a of the files = {copy_ratio:.2f}x (goal <= 0.5x): "
            f"{'met' if copy_ratio <= 0.5 else 'NOT met'}"
        )
        print(
            f"worktree / (git worktree add + rm -rf + prune) = {wt_ratio:.2f}x (goal <= 1.0x): "
            f"{'met' if wt_ratio <= 1.0 else 'NOT met'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
