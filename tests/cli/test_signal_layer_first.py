"""The CLI's signal handlers are in place before ``typing`` (the first heavy import) loads.

A signal that comes while the interpreter imports what the verbs need must be the
interrupted answer (exit 130), not Python's default death; so the signal layer,
``changeloop.process.signals``, may import nothing heavy before the CLI installs it.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

import changeloop

PROBE = """
import _signal, runpy, sys

seen = {}


class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "typing" and name not in seen:
            seen[name] = handler = _signal.getsignal(_signal.SIGHUP)
            # said now: the CLI leaves with os._exit, no code runs after it
            print("handler:", getattr(handler, "__qualname__", repr(handler)), flush=True)
        return None


sys.meta_path.insert(0, Watch())
assert "typing" not in sys.modules, "the interpreter imported typing before changeloop"
sys.argv = ["changeloop", "--version"]
runpy.run_module("changeloop", run_name="__main__", alter_sys=True)
"""


def test_sighup_is_handled_before_typing_is_imported() -> None:
    # -S: a machine's own start-up hooks (a ``.pth`` that imports certifi, and typing with
    # it) run before any line of changeloop and are not what this measures.
    where = [str(Path(changeloop.__file__).resolve().parent.parent), *site.getsitepackages()]
    proc = subprocess.run(
        [sys.executable, "-S", "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(where)},
    )
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stdout.splitlines() if line.startswith("handler: ")]
    assert said == ["handler: Signals.handler"], proc.stdout + proc.stderr
