"""What to do after a prove: the commands its board ends with, following what happened.

Example::

    prove_steps(result, sign_key=None, doctor=count_doctor_findings)
    # [("python -m pytest tests/test_fees.py::test_fee_minimum", "rerun the 1 failing test …"),
    #  ("less .changeloop/runs/…/test/test.log", "what provider test printed"),
    #  ("changeloop prove add-fees", "prove again once it is fixed")]

A failure gets the rerun of just its failing tests and its log; doctor is named
only when it has something to say; a proven change gets gate and report (with
``--public-key`` when the receipts were signed with ``--sign-key``) and, before
archiving, the evidence that travels with the change. ``--root`` is carried and
paths are shown from the current directory (``common``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from changeloop.cli.common import Step, command, in_dir, shown
from changeloop.cli.failures import rerun_command

if TYPE_CHECKING:
    from changeloop.records import ProveResult

MAX_FAILING = 2  # providers whose rerun and log are suggested; the board lists the rest


def public_key_words(sign_key: Path | None) -> list[str]:
    """``--public-key K.pub`` for receipts signed with ``--sign-key K`` (keygen writes the
    public half beside it); nothing for the workspace key, which gate finds itself."""
    if sign_key is None:
        return []
    public = sign_key.with_suffix(".pub")
    return ["--public-key", shown(public) if public.is_file() else f"{shown(sign_key)}.pub"]


def prove_steps(
    result: ProveResult, *, sign_key: Path | None, doctor: Callable[[], int]
) -> list[Step]:
    """The board's Next steps; ``doctor()`` counts what ``evidence doctor`` would report."""
    plan = result.plan
    change = plan.change.id
    keys = public_key_words(sign_key)
    if result.verdict.proven:
        return [
            (command("gate", change, *keys), "re-check before merge or archive"),
            (command("report", change, *keys), "the evidence as one HTML page"),
        ]
    steps: list[Step] = []
    failing = [r for r in result.providers.values() if any(e.status != "pass" for e in r.receipts)]
    for report in failing[:MAX_FAILING]:
        provider = plan.providers.get(report.name)
        tests = [t for e in report.receipts for t, _ in e.view.failures]
        rerun = rerun_command(plan, provider, list(dict.fromkeys(tests))) if provider else None
        if rerun is not None:
            where, line = rerun
            n = len(set(tests))
            steps.append((in_dir(where, line), f"rerun the {n} failing test(s) of {report.name}"))
        log = result.run_dir / report.name / f"{report.name}.log"
        if log.is_file():
            steps.append((f"less {shown(log)}", f"what {report.name} printed"))
    found = doctor()
    if found:
        steps.append((command("evidence", "doctor", change), f"{found} thing(s) doctor can fix"))
    steps.append((command("prove", change), "prove again once it is fixed"))
    return steps
