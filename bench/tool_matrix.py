"""Install several versions of each contracted tool side by side, then check the contracts.

    python bench/tool_matrix.py [DIR] [--check]

Makes ``DIR`` (default ``~/.cache/changeloop/tool-matrix``) hold one directory
per install, named ``<tool>@<version>`` — what ``changeloop adapters check
--matrix DIR`` reads:

- vitest 3 and 4, jest 30 and jest-junit 16 (beside a jest): ``npm install`` into
  the directory (its own ``node_modules``);
- pytest 8 and 9: a virtualenv (``.venv``) with that pytest;
- unittest of each installed Python 3.11–3.13: a virtualenv of that interpreter.

An install already present is kept (the directory is a cache). ``--check``
then runs ``changeloop adapters check --matrix DIR`` and exits with its code.
Needs npm and the package registries; CI runs it before the suite.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

NODE = {
    "vitest@3.2.7": ["vitest@3.2.7"],
    "vitest@4.1.12": ["vitest@4.1.12"],
    "jest@30.5.2": ["jest@30.5.2"],
    "jest-junit@16.0.0": ["jest@30.5.2", "jest-junit@16.0.0"],
}
PYTEST = {"pytest@8.4.2": "pytest==8.4.2", "pytest@9.2.0": "pytest==9.2.0"}
PYTHONS = ("3.11", "3.12", "3.13")
DEFAULT = Path.home() / ".cache" / "changeloop" / "tool-matrix"


def _ready(path: Path) -> bool:
    return (path / ".ready").is_file()


def _done(path: Path) -> None:
    (path / ".ready").write_text("ok\n")


def install_node(folder: Path, name: str, packages: list[str]) -> Path:
    """``npm install`` of ``packages`` into ``folder/name`` (kept when already there)."""
    target = folder / name
    if _ready(target):
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    (target / "package.json").write_text('{"name": "matrix", "private": true}\n')
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", *packages],
        cwd=target,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    _done(target)
    return target


def install_python(folder: Path, name: str, python: str, packages: list[str]) -> Path:
    """A ``.venv`` of ``python`` with ``packages`` in ``folder/name`` (kept when there)."""
    target = folder / name
    if _ready(target):
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    subprocess.run([python, "-m", "venv", str(target / ".venv")], check=True)
    if packages:
        subprocess.run(
            [str(target / ".venv/bin/python"), "-m", "pip", "install", "-q", *packages],
            check=True,
        )
    _done(target)
    return target


def pyenv_python(version: str) -> str | None:
    found = sorted((Path.home() / ".pyenv" / "versions").glob(f"{version}.*/bin/python{version}"))
    return str(found[-1]) if found else shutil.which(f"python{version}")


def build(folder: Path) -> list[Path]:
    """Every install of the matrix under ``folder``; the paths made or kept."""
    folder.mkdir(parents=True, exist_ok=True)
    out = [install_node(folder, name, packages) for name, packages in NODE.items()]
    for name, requirement in PYTEST.items():
        out.append(install_python(folder, name, sys.executable, [requirement]))
    for version in PYTHONS:
        python = pyenv_python(version)
        if python is None:
            print(f"python {version} is not installed: no unittest@{version}", file=sys.stderr)
            continue
        out.append(install_python(folder, f"unittest@{version}", python, []))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    build(args.folder)
    if args.check:
        code = subprocess.run(
            [sys.executable, "-m", "changeloop", "adapters", "check", "--matrix", str(args.folder)],
            check=False,
        ).returncode
        raise SystemExit(code)


if __name__ == "__main__":
    main()
