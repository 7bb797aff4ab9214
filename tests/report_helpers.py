"""A small real workspace for the report tests: a proven, a failed and an inconclusive claim."""

from __future__ import annotations

import sys
from pathlib import Path

from prove_helpers import make_change, make_repo

PY = sys.executable
CHANGE = "add-report-demo"

EVIDENCE = """
version: 3
claims:
  greeting:
    statement: A visitor is greeted by name.
    ref: specs/greeting/spec.md#greeting
    requires: [test]
  lint-clean:
    statement: The code base passes the linter.
    requires: [static-analysis]
  reviewed:
    statement: A maintainer looked at it <b>carefully</b>.
    requires: [test, review]
"""

# unit passes and lists greeting; lint fails (a finding with file:line); review passes but
# cites no claim (reviewed stays inconclusive); docs depends on unit (a critical path).
EXECUTION = f"""
version: 1
providers:
  unit:
    adapter: command
    capability: test
    command: ["{PY}", -c, "import time; time.sleep(0.3); print('3 passed')"]
    claims: [greeting, reviewed]
  lint:
    adapter: command
    capability: static-analysis
    command: ["{PY}", lint.py]
    envelope: true
    claims: [lint-clean]
  review:
    adapter: command
    capability: review
    command: ["{PY}", -c, "import time; time.sleep(0.2)"]
    dependsOn: [unit]
"""


# A custom runner (envelope: true): one finding with file and line, then exit 1.
LINT = """
import json
finding = {"kind": "style", "message": "line too long", "file": "app.py", "line": 2}
print(json.dumps({"exit_code": 1, "passed": False, "findings": [finding]}))
raise SystemExit(1)
"""


def workspace(tmp: Path) -> Path:
    root = make_repo(
        tmp / "ws", {"app.py": "def greet(n):\n    return f'hi {n}'\n", "lint.py": LINT}
    )
    make_change(root, CHANGE, EVIDENCE, EXECUTION)
    return root
