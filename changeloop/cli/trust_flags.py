"""``--trust-from REV`` and ``--trust-keyring FILE``: the flags of every verb that weighs receipts.

Example::

    trust_flags.add(parser)                       # gate, summary, report, prove, receipt import
    plan, trust = trust_flags.trusted(args, plan) # the one resolution (changeloop.trust)
    trust_flags.say(trust)                        # "trust: REV 3f2a… (main)" + trust-changed lines

``--public-key`` stays where it was (``common.add_public_keys``); it is read here too.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from changeloop.cli import common

if TYPE_CHECKING:
    from changeloop.model import Plan
    from changeloop.trust import Trust, TrustRequest


def add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trust-from",
        metavar="REV",
        default=None,
        help="read every external provider's trust material (keys, issuer, accepts, maxAge) "
        "from the change as git revision REV holds it, e.g. the pull request's base branch; "
        "differences in this checkout are reported (trust-changed) and ignored",
    )
    parser.add_argument(
        "--trust-keyring",
        type=Path,
        metavar="FILE",
        default=None,
        help="trust these keys per issuer ({version: 1, issuers: {NAME: [PEM or path]}}, "
        "docs/keys-and-ci.md); without --trust-from they replace the checkout's keys",
    )


def request(args: argparse.Namespace) -> TrustRequest:
    from changeloop.trust import TrustRequest

    return TrustRequest(
        trust_from=getattr(args, "trust_from", None),
        keyring=getattr(args, "trust_keyring", None),
        public_keys=tuple(getattr(args, "public_key", None) or ()),
    )


def requested(args: argparse.Namespace) -> bool:
    """Whether the command line names any trust of its own (a re-prove is then run in full).

    Read from the flags themselves: the no-change answer asks this and loads no plan.
    """
    return (
        getattr(args, "trust_from", None) is not None
        or getattr(args, "trust_keyring", None) is not None
        or bool(getattr(args, "public_key", None))
    )


def trusted(args: argparse.Namespace, plan: Plan) -> tuple[Plan, Trust]:
    """``plan`` judging with the trust the command line asks for, and that trust."""
    from changeloop.trust import resolve

    trust = resolve(plan, request(args))
    return trust.apply(plan), trust


def say(trust: Trust) -> None:
    for line in trust.lines():
        common.say(line)
