"""The command line's conventions, checked on the parser itself and through the real CLI.

Every argument of every verb has help text (the parser is walked, so a flag added
tomorrow without help fails here); a bare ``changeloop`` prints the verbs; an
unknown verb or sub-verb is answered with the nearest one; ``changeloop
completion bash|zsh`` prints a static script that names every verb and flag;
``[project.urls]`` is in pyproject.toml.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
from collections.abc import Iterator

import pytest
from repo_paths import REPO_ROOT

from changeloop.cli.boundary import VERBS
from changeloop.cli.main import build_parser, main


def _parsers(
    parser: argparse.ArgumentParser, path: str = "changeloop"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_every_argument_of_every_verb_has_help_text() -> None:
    missing = []
    seen = 0
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                names = {c.dest for c in action._choices_actions}
                missing += [f"{path} {n} (no help)" for n in action.choices if n not in names]
                continue
            seen += 1
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    assert seen > 100  # the walk reached every verb and sub-verb
    assert missing == [], missing


def test_a_bare_changeloop_prints_the_verbs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    for verb in VERBS:
        assert f"    {verb}" in out, verb


@pytest.mark.parametrize(
    ("argv", "nearest"),
    [(["prov", "x"], "prove"), (["evidence", "doctr", "x"], "doctor"), (["gat"], "gate")],
)
def test_an_unknown_verb_gets_did_you_mean(
    capsys: pytest.CaptureFixture[str], argv: list[str], nearest: str
) -> None:
    assert main([*argv, "--json"]) == 2
    out, err = capsys.readouterr()
    assert f"did you mean {nearest!r}?" in err
    (error,) = json.loads(out)["errors"]
    assert error["code"] == "usage" and f"did you mean {nearest!r}?" in error["message"]


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_prints_a_script_the_shell_accepts(shell: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "changeloop", "completion", shell],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    script = done.stdout
    for word in ("prove", "evidence", "doctor", "--sign-key", "--into-change", "--public-key"):
        assert word in script, word
    checker = [shell, "-n"] if shell == "bash" else ["zsh", "-n"]
    try:  # the shell itself parses it (zsh may not be installed here)
        parsed = subprocess.run(
            checker, input=script, capture_output=True, text=True, check=False, timeout=60
        )
    except FileNotFoundError:
        assert shell == "zsh"
        return
    assert parsed.returncode == 0, parsed.stderr


def test_completion_sourced_in_bash_completes_a_verb() -> None:
    """Source the bash script in a real bash and ask it to complete ``changeloop pro``."""
    script = subprocess.run(
        [sys.executable, "-m", "changeloop", "completion", "bash"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    probe = (
        f"{script}\n"
        "COMP_WORDS=(changeloop pro); COMP_CWORD=1; COMP_LINE='changeloop pro'; "
        "COMP_POINT=${#COMP_LINE}\n"
        "complete -p changeloop >/dev/null && fn=$(complete -p changeloop | "
        "sed -E 's/.*-F ([^ ]+).*/\\1/') && $fn changeloop pro changeloop && "
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(
        ["bash", "-c", probe], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "prove" in done.stdout.split()


def test_pyproject_names_the_project_urls() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    urls = project["urls"]
    assert {"Homepage", "Documentation", "Changelog", "Issues"} <= set(urls)
    assert all(url.startswith("https://") for url in urls.values())
    assert project["requires-python"] == ">=3.11"
