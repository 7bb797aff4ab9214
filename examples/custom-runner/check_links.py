"""A custom runner: checks that every relative link in docs/*.md points at a file.

It prints the custom-runner JSON envelope changeloop's command adapter reads
with `envelope: true`: {"exit_code", "passed", "findings"}.
"""

import json
import re
import sys
from pathlib import Path

LINK = re.compile(r"\]\(([^)#:]+)\)")


def main() -> int:
    findings = []
    for doc in sorted(Path("docs").glob("*.md")):
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for target in LINK.findall(line):
                if not (doc.parent / target).exists():
                    findings.append({"kind": "broken-link", "message": f"{target} does not exist",
                                     "file": str(doc), "line": number})
    code = 1 if findings else 0
    print(json.dumps({"exit_code": code, "passed": not findings, "findings": findings}))
    return code


if __name__ == "__main__":
    sys.exit(main())
