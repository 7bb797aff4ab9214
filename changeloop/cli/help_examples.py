"""The ``examples:`` and ``exit codes:`` ends of each verb's ``--help``, in one table.

A help page should show how a verb is used, not only list its flags; one table
keeps the pages alike, and tests/cli/test_help_examples.py holds every verb to it.

    verbs.add_parser("detect", help=..., **help_examples.ending("evidence detect"))
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["ENDINGS", "ending"]

ENDINGS: dict[str, tuple[tuple[str, ...], str]] = {
    "evidence": (
        (
            "changeloop evidence detect add-greeting        what could prove it",
            "changeloop evidence init add-greeting --write  write the sure wiring",
            "changeloop evidence doctor add-greeting        what is left, with the fix",
        ),
        "see each SUBVERB's --help",
    ),
    "evidence detect": (
        (
            "changeloop evidence detect add-greeting",
            "changeloop evidence detect add-greeting --json",
        ),
        "0 detected (even nothing: detection is never proof), 2 the change is refused",
    ),
    "evidence init": (
        (
            "changeloop evidence init add-greeting           preview, writes nothing",
            "changeloop evidence init add-greeting --write   add the high-confidence providers",
        ),
        "0 previewed or written, 2 the change or its files are refused",
    ),
    "evidence doctor": (
        (
            "changeloop evidence doctor add-greeting",
            "changeloop evidence doctor add-greeting --json",
        ),
        "0 nothing unresolved, 1 something is (each finding names its fix), 2 refused",
    ),
    "receipt": (
        (
            "changeloop receipt verify r.json --public-key ci.pub",
            "changeloop receipt sign --change add-greeting --claims greeting \\",
            "    --key reviewer.key --issuer alice --capability review --out r.json",
            "changeloop receipt import r.json --change add-greeting",
        ),
        "see each ACTION's --help",
    ),
    "receipt sign": (
        (
            "changeloop receipt sign --change add-greeting --claims greeting \\",
            "    --key reviewer.key --issuer alice --capability review --out review.json",
        ),
        "0 signed, 2 refused before anything is signed",
    ),
    "receipt verify": (
        (
            "changeloop receipt verify review.json --public-key reviewer.pub",
            "changeloop receipt verify review.json --public-key ci.pub \\",
            "    --change add-greeting --json",
        ),
        "0 valid, 1 invalid (the first failed check is named), 2 the key or FILE is refused",
    ),
    "receipt import": (
        (
            "changeloop receipt import review.json --change add-greeting",
            "changeloop receipt import ci.json --change add-greeting --trust-from origin/main",
        ),
        "0 every FILE copied, 1 one was refused (then nothing is copied)",
    ),
    "keygen": (
        ("changeloop keygen --out keys/ci", "changeloop keygen --out keys/ci --json"),
        "0 written, 2 refused (a key is already there, --out is a file)",
    ),
    "gate": (
        (
            "changeloop gate add-greeting",
            "changeloop gate add-greeting --trust-from origin/main --json   # a merge check",
        ),
        "0 still proven, 1 not (per claim, why), 2 the change is refused",
    ),
    "summary": (
        (
            "changeloop summary add-greeting --sign-key keys/ci/changeloop.key --out vsa.json",
            "changeloop summary add-greeting --trust-from origin/main --sign-key KEY --out v.json",
        ),
        "0 PASSED, 1 FAILED (the summary is signed and written either way), 2 refused",
    ),
    "quality": (
        ("changeloop quality run --change add-greeting",),
        "see run --help",
    ),
    "quality run": (
        (
            "changeloop quality run --change add-greeting",
            "changeloop quality run --change add-greeting --json",
        ),
        "0 every lane passed, 1 one failed or none applies, 2 refused",
    ),
    "adapters": (
        ("changeloop adapters check", "changeloop adapters check --change add-greeting --json"),
        "see check --help",
    ),
    "state": (
        (
            "changeloop state                     files and bytes per part of .changeloop/",
            "changeloop state --json",
            "changeloop state prune               free what nothing needs any more",
        ),
        "0 shown, 2 the state is refused",
    ),
    "state prune": (
        (
            "changeloop state prune",
            "changeloop state prune --keep-runs 2 --cache-days 7 --json",
        ),
        "0 pruned (even nothing), 2 the state is refused",
    ),
    "adapters check": (
        ("changeloop adapters check", "changeloop adapters check --change add-greeting --json"),
        "0 nothing drifted, 2 a tool lacks what an adapter relies on (or the change is refused)",
    ),
}


def ending(key: str) -> dict[str, Any]:
    """``add_parser`` keyword arguments: the epilog for ``key`` and a formatter that keeps it."""
    lines, codes = ENDINGS[key]
    examples = "\n".join(f"  {line}" for line in lines)
    return {
        "epilog": f"examples:\n{examples}\n\nexit codes: {codes}",
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }
