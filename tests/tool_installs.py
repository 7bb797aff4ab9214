"""The tool matrix's installs (bench/tool_matrix.py), for tests that drive several versions.

``node_install("vitest@4.1.12")`` is the directory holding that install's
``node_modules`` — made on first use (npm), kept in the matrix cache after.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

import pytest
from repo_paths import REPO_ROOT


def _matrix() -> Any:
    spec = importlib.util.spec_from_file_location("tool_matrix", REPO_ROOT / "bench/tool_matrix.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def node_install(name: str) -> Path:
    """The install ``name`` (``<tool>@<version>``, one of the matrix's) of node tools."""
    if shutil.which("npm") is None:
        pytest.fail("npm is needed to install the JavaScript runners these tests drive")
    matrix = _matrix()
    return Path(matrix.install_node(matrix.DEFAULT, name, matrix.NODE[name]))


def matrix_folder() -> Path:
    """The whole matrix, built (or kept) where ``bench/tool_matrix.py`` keeps it."""
    matrix = _matrix()
    matrix.build(matrix.DEFAULT)
    return Path(matrix.DEFAULT)
