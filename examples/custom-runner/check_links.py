"""A custom runner: checks that every relative link in docs/*.md points at a file.

It prints the custom-runner JSON envelope changeloop's command adapter reads
with `envelope: true`: {"exit_code", "passed", "findings", "citations"}. Each
page it checks is one test, and that test cites the claim `docs-links` at
depth `unit` — a runner changeloop has no adapter for citing a claim the way
tests do elsewhere. It traces nothing, so its citations carry no grounding.
"""

import json
import re
import sys
from pathlib import Path

LINK = re.compile(r"\]\(([^)#:]+)\)")


def main() -> int:
    findings = []
    citations = []
    for doc in sorted(Path("docs").glob("*.md")):
        broken = 0
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for target in LINK.findall(line):
                if not (doc.parent / target).exists():
                    broken += 1
                    findings.append({"kind": "broken-link", "message": f"{target} does not exist",
                                     "file": str(doc), "line": number})
        citations.append({"test": f"links of {doc}", "claim": "docs-links", "depth": "unit",
                          "ref": "DOCS-1", "result": "failed" if broken else "passed"})
    code = 1 if findings else 0
    print(json.dumps({"exit_code": code, "passed": not findings, "findings": findings,
                      "citations": citations}))
    return code


if __name__ == "__main__":
    sys.exit(main())
