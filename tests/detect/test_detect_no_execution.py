"""Detection, derivation, init and doctor execute nothing and import no project code."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from bootstrap_helpers import CHANGE, cli, workspace

TRAP = "open({marker!r}, 'w').write('ran')\n"


def test_detect_init_doctor_run_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "EXECUTED"
    trap = TRAP.format(marker=str(marker))
    sh = f"#!/bin/sh\ntouch {marker}\n"
    root = workspace(
        tmp_path,
        {
            "setup.py": trap,
            "conftest.py": trap,
            "evilpkg/__init__.py": trap,
            "tests/test_a.py": "import pytest\nimport evilpkg\n" + trap,
            "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "evilpkg"\n'
            '[project]\nname = "evilpkg"\ndynamic = ["version"]\n'
            '[tool.pytest.ini_options]\naddopts = "-q"\n',
            "package.json": '{"scripts": {"test": "vitest", "preinstall": "touch '
            + str(marker)
            + '"}, "devDependencies": {"vitest": "3.2.4"}}',
            "vitest.config.ts": "import fs from 'node:fs'; fs.writeFileSync('"
            + str(marker)
            + "', 'x')\n",
            "node_modules/.bin/vitest": sh,
            ".venv/pyvenv.cfg": "home = /usr/bin\n",
            ".venv/bin/python": sh,
            "Cargo.toml": '[package]\nname = "evil"\nversion = "0.1.0"\nbuild = "build.rs"\n',
            "build.rs": f'fn main() {{ std::fs::write("{marker}", "x").unwrap(); }}\n',
        },
        evidence="version: 3\nrequires: [test, static-analysis]\n",
    )
    for path in (root / "node_modules/.bin/vitest", root / ".venv/bin/python"):
        path.chmod(0o755)
    sys.modules.pop("evilpkg", None)
    for argv in (["detect"], ["init"], ["init", "--write"], ["doctor"]):
        code, doc, _ = cli(capsys, "evidence", *argv, CHANGE, "--json", "--root", str(root))
        assert doc is not None and "errors" not in doc, (argv, doc)
        assert code in (0, 1)
    assert not marker.exists(), "bootstrap executed project code"
    assert "evilpkg" not in sys.modules
    # it saw everything it was meant to see (and wired it), without running any of it
    code, doc, _ = cli(capsys, "evidence", "detect", CHANGE, "--json", "--root", str(root))
    assert doc is not None
    assert [(d["adapter"], d["detection_source"]) for d in doc["repositories"]["self"]] == [
        ("pytest", "configured"),
        ("vitest", "configured"),
        ("cargo", "configured"),
    ]
    assert os.listdir(root / "node_modules") == [".bin"]
