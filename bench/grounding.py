"""Overhead of grounding: trace the citing tests of a 300-test suite vs. running them untraced.

    python bench/grounding.py [--python PATH] [--tests 300] [--repeat 3]

Generates a package with an entry point (``shop/api.py::create_*``) over a few
production modules, and 300 tests that each cite a claim and build orders
through the entry point (a few thousand production calls per test). Runs the
project's pytest with changeloop's plugin injected exactly as the
test-discovery adapter does, once with grounding (``CHANGELOOP_GROUNDING``) and
once without, alternating, keeping each one's best wall time; prints the
ratio. Target: traced ≤ 2× untraced. ``--python`` picks the
interpreter (3.11 traces with sys.settrace, 3.12+ with sys.monitoring); it
needs pytest installed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from changeloop.grounding.citations import configure, read_records
from changeloop.providers.pytest_injection import inject

PRODUCTION = {
    "shop/__init__.py": "",
    "shop/api.py": """
        from shop import pricing, stock

        def create_order(lines):
            stock.reserve(lines)
            return {"lines": lines, "total": pricing.total(lines)}
        """,
    "shop/pricing.py": """
        def line_total(quantity, price):
            return quantity * price

        def discount(amount):
            return amount - amount // 10 if amount > 10_000 else amount

        def total(lines):
            return discount(sum(line_total(q, p) for _sku, q, p in lines))
        """,
    "shop/stock.py": """
        _LEVELS = {}

        def level(sku):
            return _LEVELS.get(sku, 1_000_000)

        def reserve(lines):
            for sku, quantity, _price in lines:
                if level(sku) < quantity:
                    raise ValueError(sku)
        """,
}
TEST = """
import pytest

from shop.api import create_order


@pytest.mark.claim("order-total", depth="unit")
def test_order_{n}():
    lines = [(f"sku{{i}}", i % 5 + 1, 100 + i) for i in range(40)]
    for _ in range(20):
        order = create_order(lines)
    assert order["total"] > 0
"""


def make_project(root: Path, tests: int) -> None:
    for name, text in PRODUCTION.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    folder = root / "tests"
    folder.mkdir()
    per_file = 25
    for start in range(0, tests, per_file):
        body = "".join(TEST.format(n=n) for n in range(start, min(start + per_file, tests)))
        (folder / f"test_orders_{start // per_file}.py").write_text(body, encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = tests\npythonpath = .\n")


def run(python: str, root: Path, run_dir: Path, traced: bool) -> float:
    argv = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHANGELOOP_")}
    injected = inject(argv, env, run_dir, {"shop": "shop"})
    final = dict(injected.env)
    if traced:
        final = configure(run_dir, "self", root, ("shop/api.py::create_*",), final)
    started = time.perf_counter()
    proc = subprocess.run(
        list(injected.argv), cwd=root, env=final, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"pytest failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--tests", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        make_project(root, args.tests)
        best = {True: float("inf"), False: float("inf")}
        for i in range(args.repeat):
            for traced in (False, True):
                run_dir = Path(tmp) / f"run-{i}-{traced}"
                best[traced] = min(best[traced], run(args.python, root, run_dir, traced))
                if traced:
                    values = {r["grounding"] for r in read_records(run_dir).values()}
                    assert values == {"grounded"}, values
        version = subprocess.run(
            [args.python, "-c", "import sys; print(sys.version.split()[0])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        ratio = best[True] / best[False]
        print(f"python {version}, {args.tests} citing tests")
        print(f"untraced {best[False]:.2f} s, traced {best[True]:.2f} s, ratio {ratio:.2f}x")
        print(f"target <= 2.00x: {'met' if ratio <= 2.0 else 'NOT met'}")


if __name__ == "__main__":
    main()
