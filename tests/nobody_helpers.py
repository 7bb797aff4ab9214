"""Run changeloop as ``nobody`` (setpriv), for tests where permissions matter.

The suite runs as root, which reads and writes everywhere. pyenv's interpreter
lives under ``/root`` (0700), so these runs use the system ``python3.11`` with
copies of changeloop's third-party dependencies in a directory ``nobody`` can read.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest

NOBODY = 65534
SYSTEM_PYTHON = Path("/usr/bin/python3.11")
RUN_CLI = "import sys; from changeloop.cli.main import main; sys.exit(main(sys.argv[1:]))"

needs_nobody = pytest.mark.skipif(
    os.geteuid() != 0
    or shutil.which("setpriv") is None
    or not SYSTEM_PYTHON.is_file()
    or sys.version_info[:2] != (3, 11),
    reason="needs root, setpriv and a system python3.11 to run changeloop as nobody",
)


def _dependency_dirs(modules: Sequence[str]) -> list[Path]:
    """Top-level entries of site-packages that importing ``modules`` pulls in."""
    for name in modules:
        importlib.import_module(name)
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    tops: set[str] = set()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file:
            continue
        try:
            rel = Path(file).resolve().relative_to(site)
        except ValueError:
            continue
        if not rel.parts[0].startswith("__editable__"):
            tops.add(rel.parts[0])
    return [site / top for top in sorted(tops)]


def readable_site(modules: Sequence[str]) -> Path:
    """A fresh directory ``nobody`` can read, holding changeloop itself and what ``modules``
    import from site-packages (the checkout may sit in a directory only its owner can
    enter, as a root user's home is). Put it alone on ``PYTHONPATH``.

    The caller removes it (``shutil.rmtree``) when done.
    """
    base = Path(tempfile.mkdtemp(prefix="changeloop-nobody-site-", dir="/tmp"))
    package = Path(__file__).resolve().parents[1] / "changeloop"
    shutil.copytree(package, base / "changeloop", ignore=shutil.ignore_patterns("__pycache__"))
    for entry in _dependency_dirs(modules):
        if entry.is_dir():
            shutil.copytree(entry, base / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, base / entry.name)
    subprocess.run(["chmod", "-R", "a+rX", str(base)], check=True)
    os.chmod(base, 0o755)
    return base
