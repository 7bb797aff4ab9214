"""The report page written: collected, rendered, and kept out of the content it reports on."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from changeloop.errors import StateRefused
from changeloop.git.repo import git
from changeloop.model import Plan
from changeloop.report.collect import collect
from changeloop.report.model import Report
from changeloop.report.render import render
from changeloop.signing.statement import write_atomic
from changeloop.workspace.state import check_state, ensure_gitignored

if TYPE_CHECKING:
    from changeloop.trust import Trust


def default_path(plan: Plan) -> Path:
    return plan.root / ".changeloop" / "report" / f"{plan.change.id}.html"


def write_report(
    plan: Plan,
    *,
    out: Path | None = None,
    run_id: str | None = None,
    public_keys: Sequence[Ed25519PublicKey] = (),
    trust: Trust | None = None,
) -> tuple[Path, Report]:
    """Verify, render and write the page atomically; returns where it went and what it says.

    ``trust``: what the receipts were judged with (``plan`` already applies it); its
    ``--public-key`` keys are ``public_keys``.
    """
    target = (out if out is not None else default_path(plan)).absolute()
    if target.is_dir():  # --out DIR: the page goes inside it, named after the change
        target = target / f"{plan.change.id}.html"
    if target.is_relative_to(plan.root.absolute() / ".changeloop"):
        # A page in a fresh .changeloop/ must not become content the next proof sees,
        # and never goes through a link out of it (state a checkout could plant).
        check_state(plan.root)
        ensure_gitignored(plan.root)
        _refuse_links(plan.root / ".changeloop", target.parent)
    report = collect(
        plan, run_id=run_id, public_keys=public_keys, out_dir=target.parent, trust=trust
    )
    write_atomic(target, render(report).encode("utf-8"))
    keep_out_of_content(plan, target)
    return target, report


def keep_out_of_content(plan: Plan, page: Path) -> Path | None:
    """A page written inside a repository's work tree, where git would see it, is added to
    that repository's local ignore file (``.git/info/exclude``: what one checkout makes and
    no one commits), so it never becomes content the next proof or gate sees. The file
    changed, or None."""
    for repo in plan.repositories.values():
        top = repo.path.absolute()
        if not page.is_relative_to(top):
            continue
        ignored = git(["check-ignore", "-q", "--", str(page)], cwd=top, check=False)
        if ignored.returncode == 0:
            return None
        found = git(["rev-parse", "--show-toplevel", "--git-path", "info/exclude"], cwd=top)
        lines = found.stdout.decode().splitlines()
        toplevel, exclude = Path(lines[0]), Path(lines[1])
        exclude = exclude if exclude.is_absolute() else top / exclude
        rule = "/" + page.resolve().relative_to(toplevel.resolve()).as_posix()
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with exclude.open("a", encoding="utf-8") as fh:
            fh.write(f"{rule}\n")
        return exclude
    return None


def _refuse_links(state: Path, directory: Path) -> None:
    """Every directory from ``.changeloop/`` down to the page's must be real, not a link."""
    here = directory.absolute()
    top = state.absolute()
    while here != top and here.is_relative_to(top):
        if here.is_symlink():
            raise StateRefused(
                here,
                f"{here} is a symlink; the report is written only into changeloop's own state",
                f"delete {here} (changeloop makes the directory), or pass --out FILE",
            )
        here = here.parent
