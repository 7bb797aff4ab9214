"""Every verb's --help ends with examples and its exit codes (cli/help_examples.py)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from changeloop.cli.help_examples import ENDINGS
from changeloop.cli.main import main


@pytest.mark.parametrize("verb", sorted(ENDINGS))
def test_help_shows_examples_and_exit_codes(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*verb.split(), "--help"]) == 0
    text = capsys.readouterr().out
    examples = text.split("examples:\n", 1)[1]
    assert examples.lstrip().startswith(f"changeloop {verb.split(maxsplit=1)[0]}")
    assert "exit codes: " in examples


def test_every_verb_and_subverb_has_an_ending() -> None:
    """A verb added later without examples fails here (prove and report have their own)."""
    from changeloop.cli.main import VERBS, build_parser

    parser = build_parser()
    [sub] = [a for a in parser._actions if a.dest == "verb"]
    for verb in VERBS:
        child = sub.choices[verb]  # type: ignore[index]
        assert verb in ENDINGS or "examples:" in (child.epilog or ""), verb
        inner = [a for a in child._actions if isinstance(a, argparse._SubParsersAction)]
        for action in inner:
            for name in action.choices:
                assert f"{verb} {name}" in ENDINGS, f"{verb} {name}"


@pytest.mark.parametrize(
    ("argv", "where"),
    [
        (["receipt", "sign", "--change", "x"], "changeloop receipt sign --help"),
        (["prove", "--jobs", "x"], "changeloop prove --help"),
        (["quality", "run"], "changeloop quality run --help"),
        (["evidence", "detec"], "changeloop evidence --help"),
        (["nosuch"], "changeloop --help"),
    ],
)
def test_a_usage_error_points_at_the_help_of_what_was_typed(
    argv: list[str], where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--json"]) == 2
    [error] = json.loads(capsys.readouterr().out)["errors"]
    assert error["code"] == "usage" and error["fix"] == f"see `{where}`"


@pytest.mark.parametrize("argv", [["--json", "--version"], ["--version", "--json"]])
def test_version_under_json_is_one_document(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from changeloop import __version__

    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == {"version": "1", "root": None, "changeloop": __version__}


def test_every_verb_s_document_names_the_root_it_was_computed_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """OpenSpec's convention: documents carry a version and the root (null without one)."""
    from repo_helpers import basic_example

    root = basic_example(tmp_path / "ws")
    for argv in (
        ["gate", "add-greeting"],
        ["report", "add-greeting"],
        ["adapters", "check"],
        ["evidence", "detect", "add-greeting"],
        ["receipt", "import", str(tmp_path / "none.json"), "--change", "add-greeting"],
    ):
        main([*argv, "--root", str(root), "--json"])
        doc = json.loads(capsys.readouterr().out)
        assert doc["root"] == str(root), (argv, doc)
    main(["keygen", "--out", str(tmp_path / "keys"), "--json"])
    assert json.loads(capsys.readouterr().out)["root"] is None
