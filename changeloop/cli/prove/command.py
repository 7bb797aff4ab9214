"""``changeloop prove <change>``: run the change's providers and decide it.

Exit 0 when the change is proven, 1 when it is not, 2 when configuration or
preflight refuses it, 130 when interrupted (docs/verbs/prove.md).

This module is the verb: its arguments and the order of its roads. The no-change
answer's glue is :mod:`~changeloop.cli.prove.nochange`, loading the plan and
``--dry-run`` :mod:`~changeloop.cli.prove.plan` (``load_plan`` is re-exported here
for the verbs that load a plan too), the full run :mod:`~changeloop.cli.prove.full`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from changeloop.cli import common, trust_flags
from changeloop.cli.argtypes import positive_seconds
from changeloop.cli.prove.args import jobs_wanted
from changeloop.cli.prove.nochange import answer_from_record, answerable, config_before_plan
from changeloop.cli.prove.plan import dry_run, load_plan
from changeloop.errors import ChangeloopError

__all__ = ["DEFAULT_SANDBOX", "SANDBOX_MODES", "register", "run"]

# The sandbox modes as the model names them (``model.SandboxMode``, in its order), without
# importing the model or the sandboxes (a re-prove answered from its record needs neither, nor
# their dataclasses); tests/nochange/test_nochange.py holds these equal to SandboxMode,
# changeloop.sandboxes.MODES and DEFAULT_MODE.
SANDBOX_MODES: tuple[str, ...] = ("worktree", "copy", "none")
DEFAULT_SANDBOX = "none"


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "prove",
        help="run the providers of a change and write signed receipts",
        description=(
            "Run every provider the change needs (from execution.yaml, or derived from the\n"
            "repository's manifests), in parallel under their resources, write one signed\n"
            "receipt per capability, and decide each claim.\n\n"
            "exit codes: 0 proven, 1 not proven, 2 refused by configuration or preflight,\n"
            "130 interrupted"
        ),
        epilog=(
            "examples:\n"
            "  changeloop prove add-greeting --dry-run     show the plan, run nothing\n"
            "  changeloop prove add-greeting               prove it\n"
            "  changeloop prove add-greeting --json        one JSON document on stdout\n"
            "  changeloop prove add-greeting --sandbox worktree --no-cache"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common.add_common(parser)
    parser.add_argument("change", help="change id (openspec/changes/<id>/, archived ones too)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and run nothing")
    parser.add_argument(
        "--jobs",
        "-j",
        type=_positive,
        default=None,
        metavar="N",
        help=f"providers run at once (default: CPU count, {os.cpu_count() or 2} here; "
        "on a Dask cluster: its worker threads, and N caps the jobs in flight there)",
    )
    parser.add_argument(
        "--sandbox",
        choices=SANDBOX_MODES,
        default=DEFAULT_SANDBOX,
        help="where providers run: in place (none, default); worktree: a git repository of "
        "its own holding the tracked content; copy: the same with untracked-not-ignored "
        "files too",
    )
    parser.add_argument("--keep-sandbox", action="store_true", help="keep sandboxes after the run")
    parser.add_argument(
        "--fail-fast", action="store_true", help="start nothing new after a failure"
    )
    parser.add_argument("--no-cache", action="store_true", help="re-run providers even when cached")
    parser.add_argument(
        "--sign-key",
        type=Path,
        metavar="PATH",
        help="Ed25519 private key (PKCS#8 PEM) to sign receipts; default: the workspace key",
    )
    parser.add_argument(
        "--issuer",
        default="local",
        help="issuer recorded in receipts (e.g. github-actions in CI; default: local)",
    )
    parser.add_argument("--url", help="URL of the CI run, recorded in receipts")
    parser.add_argument(
        "--executor",
        choices=("local", "dask"),
        default="local",
        help="where provider commands run: this machine (local, default) or a Dask cluster "
        "(needs pip install 'changeloop[dask]')",
    )
    parser.add_argument(
        "--dask-scheduler",
        metavar="ADDRESS",
        default=None,
        help="the Dask scheduler, e.g. tls://host:8786 (default: $CHANGELOOP_DASK_SCHEDULER)",
    )
    parser.add_argument(
        "--dask-tls-ca-file",
        type=Path,
        metavar="PEM",
        help="the CA certificate the Dask cluster's certificates are signed by "
        "(default: Dask's distributed.comm.tls.ca-file)",
    )
    parser.add_argument(
        "--dask-tls-cert",
        type=Path,
        metavar="PEM",
        help="this client's certificate, signed by that CA "
        "(default: Dask's distributed.comm.tls.client.cert)",
    )
    parser.add_argument(
        "--dask-tls-key",
        type=Path,
        metavar="PEM",
        help="this client's private key (default: Dask's distributed.comm.tls.client.key)",
    )
    parser.add_argument(
        "--dask-insecure",
        action="store_true",
        help="accept a Dask scheduler address without TLS (tcp://): anyone who can reach "
        "that cluster can run code on its workers and decide results",
    )
    parser.add_argument(
        "--dask-worker-timeout",
        type=positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="a Dask worker that sends the scheduler no heartbeat for this long is lost: "
        "its job is retried once elsewhere, then inconclusive (worker-lost); default 30",
    )
    parser.add_argument(
        "--publish",
        type=Path,
        metavar="DIR",
        help="copy each receipt signed with --sign-key to DIR/<fingerprint>/<capability>.json",
    )
    parser.add_argument(
        "--cache-from",
        type=Path,
        metavar="DIR",
        help="reuse a receipt published in DIR when its fingerprint matches and it verifies "
        "with a ci key the change trusts (with --trust-from/--trust-keyring: those keys)",
    )
    trust_flags.add(parser)
    parser.add_argument(
        "--report",
        action="store_true",
        help="also write the HTML report of this run (.changeloop/report/<change>.html)",
    )
    parser.set_defaults(func=run)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    answering = answerable(args)
    before = config_before_plan(args, answering=answering)
    seen: dict[str, str] = {}  # content trees the no-change check computed
    known: dict[str, Any] = {}  # the verified record's inputs digests (run.carried)
    if before is not None and answering:
        code = answer_from_record(args, before, jobs=jobs_wanted(args), seen=seen, known=known)
        if code is not None:
            return code  # the answer made room for its run (nochange.answer)
    return _plan_and_run(args, before.config if before is not None else None, seen, known)


def _plan_and_run(
    args: argparse.Namespace,
    config: dict[str, str | None] | None,
    seen: dict[str, str],
    known: dict[str, Any],
) -> int:
    plan = load_plan(args)
    plan, trust = trust_flags.trusted(args, plan)
    if plan.change.archived:
        common.say(f"using archived change {plan.change.path.relative_to(plan.root)}")
    if args.dry_run:
        return dry_run(args, plan)
    from changeloop.run.engine import nothing_to_prove

    nothing = nothing_to_prove(plan)
    if nothing is not None:
        raise ChangeloopError(nothing, exit_code=1)
    from changeloop.cli.prove.full import prove_full

    return prove_full(args, plan, config, seen, known, trust=trust)
