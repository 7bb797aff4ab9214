"""Dask executor benchmark (issue 14): 64 providers sleeping 0.5 s, local vs a LocalCluster.

    python bench/dask.py               # 64 providers (~30 s on 2 cores)
    python bench/dask.py --providers 16
    python bench/dask.py --repeat 3 --dask-only   # best of 3 Dask runs, no local run

Runs ``changeloop prove --no-cache`` on one change of N independent
``command`` providers (``sleep 0.5``) twice: ``--jobs 2`` on this machine, and
``--executor dask`` on a ``distributed.LocalCluster`` of 8 single-threaded
worker processes started here. Reports each makespan (the wall time of
``prove``, sandbox, fingerprints, signing and all), the ideal (work ÷
workers), their ratio, and Dask's per-job overhead: the extra wall time per
job over the ideal, spread over the jobs each worker ran
((makespan − ideal) × workers ÷ jobs). The machine's load average is printed
with the figures: on a shared machine they swing with it.
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

from changeloop.cli.main import main

# This file is named dask.py: run as a script, its directory comes first on the
# path and would shadow the real ``dask`` package that ``distributed`` imports.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

SLEEP_S = 0.5
WORKERS = 8


def _workspace(base: Path, providers: int) -> Path:
    root = base / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    (root / "app.txt").write_text("bench\n")
    change = root / "openspec" / "changes" / "bench"
    change.mkdir(parents=True)
    (root / "openspec" / "specs").mkdir(parents=True)
    (change / "evidence.yaml").write_text(
        "version: 3\nclaims:\n  slept: {statement: every provider slept, requires: [p0]}\n"
    )
    lines = [
        f'  p{i}: {{adapter: command, command: ["sleep", "{SLEEP_S}"], resources: []'
        + (", claims: [slept]}" if i == 0 else "}")
        for i in range(providers)
    ]
    (change / "execution.yaml").write_text("version: 1\nproviders:\n" + "\n".join(lines) + "\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "bench"],
        cwd=root,
        check=True,
    )
    return root


def _prove(root: Path, *extra: str) -> float:
    sys.stdout.seek(0)
    start = time.monotonic()
    sys.stdout.truncate()
    code = main(["prove", "bench", "--root", str(root), "--no-cache", "--json", *extra])
    took = time.monotonic() - start
    if code != 0:
        sys.stdout.seek(0)
        doc = json.loads(sys.stdout.read())
        odd = [
            (p["name"], p["state"], p.get("reason"), [r["reason"] for r in p["receipts"]])
            for p in doc.get("providers", [])
            if any(r["status"] != "pass" for r in p["receipts"])
        ]
        raise SystemExit(f"prove exited {code}: {doc.get('errors')} {odd[:3]}")
    return took


def main_(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--providers", type=int, default=64)
    parser.add_argument(
        "--repeat", type=int, default=1, help="Dask runs after the warm-up; the best counts"
    )
    parser.add_argument("--dask-only", action="store_true", help="skip the local run")
    args = parser.parse_args(argv)
    from distributed import LocalCluster

    work = args.providers * SLEEP_S
    with tempfile.TemporaryDirectory(prefix="changeloop-bench-dask-") as tmp:
        root = _workspace(Path(tmp), args.providers)
        # prove prints its document (kept, to say why a run failed) and its board
        document = tempfile.TemporaryFile("w+")  # noqa: SIM115
        quiet = open(os.devnull, "w")  # noqa: SIM115
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = document, quiet
        try:
            local = None if args.dask_only else _prove(root, "--jobs", "2")
            with LocalCluster(
                n_workers=WORKERS,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",  # not 8787: another cluster may hold it
                silence_logs=40,
            ) as cluster:
                address = cluster.scheduler_address
                _prove(root, "--executor", "dask", "--dask-scheduler", address)  # warm-up
                runs = [
                    _prove(root, "--executor", "dask", "--dask-scheduler", address)
                    for _ in range(max(1, args.repeat))
                ]
                dask = min(runs)
        finally:
            sys.stdout, sys.stderr = saved
            quiet.close()
            document.close()
    ideal_local, ideal_dask = work / 2, work / WORKERS
    per_job_ms = (dask - ideal_dask) * WORKERS / args.providers * 1000
    print(
        json.dumps(
            {
                "providers": args.providers,
                "sleepS": SLEEP_S,
                "loadAverage": [round(x, 2) for x in os.getloadavg()],
                "local": None
                if local is None
                else {
                    "jobs": 2,
                    "makespanS": round(local, 2),
                    "idealS": ideal_local,
                    "ratio": round(local / ideal_local, 3),
                },
                "dask": {
                    "workers": WORKERS,
                    "makespanS": round(dask, 2),
                    "idealS": ideal_dask,
                    "ratio": round(dask / ideal_dask, 3),
                    "overheadMsPerJob": round(per_job_ms, 1),
                    "runsS": [round(r, 2) for r in runs],
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main_()
