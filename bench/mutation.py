"""Mutation testing, side by side: changeloop's ``mutation`` adapter against mutmut.

    python bench/mutation.py [--mutmut PATH] [--repeat 3]

Generates one small project — a shop whose four modules are all reached from
the entry points (``shop/api.py::create_*``, ``shop/api.py::cancel_*``) and 24
tests that cite ``order-total`` — and mutates it both ways, alternating,
keeping each one's best wall time:

- changeloop: ``changeloop prove bench --no-cache`` of a change whose only
  provider is ``mutation`` (the traced run, then every mutant), timed whole;
- mutmut: ``mutmut run`` from a clean state (its ``mutants/`` removed), timed
  whole.

Both run the same tests with the same interpreter version. Prints the mutant
counts, the scores and the wall times; the target is changeloop ≤ 3× mutmut.
``--mutmut`` names mutmut's executable (default: ``mutmut`` on PATH); the
interpreter running this file needs changeloop and pytest.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

PRODUCTION = {
    "shop/__init__.py": "",
    "shop/api.py": """
        from shop import pricing, stock


        def create_order(lines, coupon=None):
            if not lines:
                raise ValueError("an order needs lines")
            stock.reserve(lines)
            total = pricing.total(lines)
            if coupon is not None:
                total = pricing.apply_coupon(total, coupon)
            return {"lines": list(lines), "total": total}


        def cancel_order(order):
            stock.release(order["lines"])
            return {"lines": [], "total": 0, "refund": order["total"]}
        """,
    "shop/pricing.py": """
        DISCOUNT_FROM = 10_000
        TAX_PERCENT = 20


        def line_total(quantity, price):
            return quantity * price


        def discount(amount):
            if amount > DISCOUNT_FROM:
                return amount - amount // 10
            return amount


        def with_tax(amount):
            return amount + amount * TAX_PERCENT // 100


        def total(lines):
            return with_tax(discount(sum(line_total(q, p) for _sku, q, p in lines)))


        def apply_coupon(total, coupon):
            if coupon == "HALF":
                return total // 2
            return total
        """,
    "shop/stock.py": """
        _LEVELS = {"apple": 10, "pear": 3}


        def level(sku):
            return _LEVELS.get(sku, 100)


        def reserve(lines):
            for sku, quantity, _price in lines:
                if level(sku) < quantity:
                    raise ValueError(sku)
                _LEVELS[sku] = level(sku) - quantity


        def release(lines):
            for sku, quantity, _price in lines:
                _LEVELS[sku] = level(sku) + quantity
        """,
}
TESTS = """
import pytest

from shop import stock
from shop.api import cancel_order, create_order


@pytest.fixture(autouse=True)
def fresh_stock():
    saved = dict(stock._LEVELS)
    yield
    stock._LEVELS.clear()
    stock._LEVELS.update(saved)


@pytest.mark.claim("order-total", depth="unit")
def test_small_order_{n}():
    assert create_order([("pen", 2, 150 + {n})])["total"] == (300 + 2 * {n}) * 120 // 100


@pytest.mark.claim("order-total", depth="unit")
def test_discounted_order_{n}():
    amount = 3 * (5000 + {n})
    expected = amount - amount // 10
    assert create_order([("pen", 3, 5000 + {n})])["total"] == expected + expected * 20 // 100


@pytest.mark.claim("order-total", depth="unit")
def test_coupon_and_stock_{n}():
    order = create_order([("apple", 10, 100)], coupon="HALF")
    assert order["total"] == 600
    assert stock.level("apple") == 0
    with pytest.raises(ValueError):
        create_order([("pear", 4, 100)])
    with pytest.raises(ValueError):
        create_order([])
    assert cancel_order(order)["refund"] == 600
    assert stock.level("apple") == 10
"""
EVIDENCE = """\
version: 3
claims:
  order-total:
    statement: An order's total applies the discount, the tax and a coupon.
    requires: [mutation]
"""
EXECUTION = """\
version: 1
repositories:
  self:
    entryPoints: ["shop/api.py::create_*", "shop/api.py::cancel_*"]
providers:
  mutation:
    adapter: mutation
    command: [{python}, -m, pytest, -q]
    claims: [order-total]
"""


def make_project(root: Path, python: str) -> None:
    for name, text in PRODUCTION.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    tests = root / "tests"
    tests.mkdir()
    for n in range(8):
        (tests / f"test_orders_{n}.py").write_text(TESTS.format(n=n), encoding="utf-8")
    (root / "pytest.ini").write_text(
        "[pytest]\ntestpaths = tests\npythonpath = .\nmarkers =\n    claim: cites a claim\n"
    )
    (root / "setup.cfg").write_text(
        "[mutmut]\nsource_paths = shop/\nalso_copy = pytest.ini\n"
        "pytest_add_cli_args_test_selection = tests/\n"
    )
    (root / ".gitignore").write_text(".changeloop/\nmutants/\n__pycache__/\n")
    change = root / "openspec" / "changes" / "bench"
    change.mkdir(parents=True)
    (change / "evidence.yaml").write_text(EVIDENCE)
    (change / "execution.yaml").write_text(EXECUTION.format(python=json.dumps(python)))
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"]):
        subprocess.run(["git", *argv], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "bench"],
        cwd=root,
        check=True,
    )


def run_changeloop(root: Path) -> tuple[float, dict[str, int], int]:
    """Wall time of a clean prove, the score, and the provider's own duration (ms)."""
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "changeloop", "prove", "bench", "--no-cache", "--json"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    doc = json.loads(proc.stdout)
    provider = doc["providers"][0]
    receipt = root / provider["receipts"][0]["path"]
    envelope = json.loads(receipt.read_text())
    ext = json.loads(base64.b64decode(envelope["payload"]))["predicate"]["changeloop"]
    return elapsed, ext["mutation"]["order-total"], int(provider["durationMs"])


def run_mutmut(root: Path, mutmut: str) -> tuple[float, dict[str, int]]:
    """Wall time of ``mutmut run`` from a clean state, and its counts."""
    shutil.rmtree(root / "mutants", ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHANGELOOP_")}
    started = time.perf_counter()
    subprocess.run([mutmut, "run"], cwd=root, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    proc = subprocess.run(
        [mutmut, "results", "--all", "true"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    states = [line.rsplit(":", 1)[-1].strip() for line in proc.stdout.splitlines() if ":" in line]
    counts = {s: states.count(s) for s in sorted(set(states))}
    return elapsed, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutmut", default=shutil.which("mutmut") or "mutmut")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        make_project(root, sys.executable)
        ours = theirs = float("inf")
        provider_ms = 0
        score: dict[str, int] = {}
        counts: dict[str, int] = {}
        for _ in range(args.repeat):
            took, counts = run_mutmut(root, args.mutmut)
            theirs = min(theirs, took)
            took, score, ms = run_changeloop(root)
            if took < ours:
                ours, provider_ms = took, ms
        print(f"changeloop: {score['total']} mutants scored, {score['killed']} killed")
        print(f"mutmut:     {sum(counts.values())} mutants: {counts}")
        ratio = ours / theirs
        print(
            f"wall: changeloop {ours:.2f} s (the provider {provider_ms / 1000:.2f} s), "
            f"mutmut {theirs:.2f} s, ratio {ratio:.2f}x"
        )
        print(f"target <= 3.00x: {'met' if ratio <= 3.0 else 'NOT met'}")


if __name__ == "__main__":
    main()
