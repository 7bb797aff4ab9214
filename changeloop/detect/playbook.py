"""What to do next for a capability nothing provides: one pasteable command, or the
exact text to add to a file.

Where a manifest entry would make the capability derivable, the command ends by
re-running ``evidence init --write`` so the newly declared framework is wired at
once. Where a file must be edited (wiring changeloop cannot derive), no editor is
opened: the suggestion carries the exact text to add (:class:`FileEdit`) and no
command. Every word a command interpolates is shell-quoted. Nothing here is run
by changeloop: bootstrap never installs a dependency; it tells the user what would.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from changeloop.model import Provider, Repository
from changeloop.project.manifests import read_json, read_toml
from changeloop.text import IMPLICIT_REPOSITORY, repository_words

ESLINT = "npm i -D eslint && npm pkg set scripts.lint='eslint .'"


@dataclass(frozen=True)
class FileEdit:
    """Text to add to one file, exactly as it should read there."""

    path: str  # relative to the workspace root
    add: str  # the lines to add (YAML keys to merge into the file's own)

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "add": self.add}


def change_file(cdir: str, name: str) -> str:
    """One of the change's files, as a path from the workspace root."""
    return f"{cdir}/{name}" if cdir not in ("", ".") else name


@dataclass(frozen=True)
class Suggestion:
    """What to do: in words, as a pasteable command, and/or as text to add to a file."""

    action: str
    command: str | None
    edit: FileEdit | None = None


def _in(repo: Repository, command: str) -> str:
    return (
        command if repo.relpath in (".", "") else f"(cd {shlex.quote(repo.relpath)} && {command})"
    )


def init_command(change: str) -> str:
    return f"changeloop evidence init {shlex.quote(change)} --write"


def suggest(
    capability: str,
    repo: Repository,
    change: str,
    change_dir: str,
    *,
    has_execution: bool = True,
    lone: bool = True,
) -> Suggestion:
    """What to do about ``capability`` missing in ``repo``.

    ``has_execution``: the change has an execution.yaml already (the text to add is
    then its providers only); ``lone``: the change's one repository.
    """
    then = init_command(change)
    js = (repo.path / "package.json").is_file()
    pyproject = read_toml(repo.path / "pyproject.toml")
    words = repository_words(repo.name)

    def wire(name: str, provider: Provider) -> FileEdit:
        from changeloop.detect.init_writer import providers_snippet  # noqa: PLC0415 - init_writer pulls in ruamel; only wiring needs it

        text = providers_snippet(
            {name: provider},
            new_file=not has_execution,
            implicit_repository=lone and repo.name == IMPLICIT_REPOSITORY,
        )
        return FileEdit(change_file(change_dir, "execution.yaml"), text)

    def provider(
        name: str, adapter: str, command: tuple[str, ...], fmt: str | None = None
    ) -> Provider:
        return Provider(
            name=name,
            adapter=adapter,
            capability=name if adapter == "command" else "test",
            repository=repo.name,
            command=command,
            format=fmt,
        )

    if capability in ("test", "discovery"):
        script = _npm_test_script(repo)
        if script is not None:
            # The project already has a test command, run by a runner changeloop
            # does not read: keep it (its exit code proves `test`), don't replace it.
            return Suggestion(
                f"the `npm test` of {words} runs `{script}`, whose report changeloop cannot "
                "read: wire `test` as a command provider running `npm test` (its exit code "
                "proves `test`; no discovery receipt) by adding the text below",
                None,
                wire("test", provider("test", "command", ("npm", "test"))),
            )
        if js:
            return Suggestion(
                f"install a test runner in {words} (vitest) and wire it",
                f"{_in(repo, 'npm i -D vitest')} && {then}",
            )
        # Never edit the project's own configuration to fit changeloop: name the
        # command its maintainers run in execution.yaml (changeloop's own file).
        return Suggestion(
            f"no test runner is declared for {words}: add a test-discovery provider to "
            "execution.yaml running the tests the way the project runs them (the text "
            "below runs unittest; for pytest: `command: [python3, -m, pytest, "
            "--junitxml=.changeloop/reports/test.xml]` with `report: "
            ".changeloop/reports/test.xml`)",
            None,
            wire(
                "test",
                provider(
                    "test",
                    "test-discovery",
                    ("python3", "-m", "unittest", "-v"),
                    "unittest",
                ),
            ),
        )
    if capability in ("browser", "accessibility"):
        return Suggestion(
            f"install @playwright/test in {words}, add a playwright.config and wire it",
            f"{_in(repo, 'npm i -D @playwright/test')} && {then}",
        )
    if capability == "static-analysis":
        if pyproject is not None:
            add = "printf '\\n[tool.ruff]\\n' >> pyproject.toml"
            return Suggestion(
                f"configure ruff in the pyproject.toml of {words} and wire it",
                f"{_in(repo, add)} && {then}",
            )
        if js:
            return Suggestion(
                f"add a lint script to the package.json of {words} and wire it",
                f"{_in(repo, ESLINT)} && {then}",
            )
        return Suggestion(
            f"name the linter {words} uses as a command provider in execution.yaml (the "
            "text below, with the linter's own command)",
            None,
            wire("static-analysis", provider("static-analysis", "command", ("LINTER",))),
        )
    if capability == "cross-repo-contract":
        return Suggestion(
            "add a contract-digest provider naming the contract file in each repository "
            "(the text below, with each repository's path to it)",
            None,
            FileEdit(
                change_file(change_dir, "execution.yaml"),
                ("" if has_execution else "version: 1\n")
                + "providers:\n  cross-repo-contract:\n    adapter: contract-digest\n"
                "    contract: {<repository>: <path>, <other-repository>: <path>}\n",
            ),
        )
    if capability == "review":
        keys = "ci-keys"
        return Suggestion(
            "make a key pair for the reviewer or CI, keep its .key secret, and add an "
            "external provider naming its public key (the command copies the .pub beside "
            "execution.yaml; the text below names it)",
            f"changeloop keygen --out {keys} && cp {keys}/changeloop.pub "
            f"{shlex.quote(change_file(change_dir, 'ci.pub'))}",
            FileEdit(
                change_file(change_dir, "execution.yaml"),
                ("" if has_execution else "version: 1\n")
                + "providers:\n  review:\n    adapter: external\n"
                "    ci: {issuer: ci, publicKeyFile: ci.pub}\n",
            ),
        )
    return Suggestion(
        f"wire a command provider for '{capability}' (envelope: true for custom runners; "
        "the text below, with the command that proves it)",
        None,
        wire(capability, provider(capability, "command", ("COMMAND",))),
    )


def change_dir(root: Path, change_path: Path) -> str:
    try:
        return change_path.relative_to(root).as_posix()
    except ValueError:
        return change_path.as_posix()


def _npm_test_script(repo: Repository) -> str | None:
    """package.json's own `test` script, unless it is npm's placeholder."""
    package = read_json(repo.path / "package.json")
    scripts = package.get("scripts") if isinstance(package, dict) else None
    script = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(script, str) or not script.strip() or "no test specified" in script:
        return None
    return script.strip()
