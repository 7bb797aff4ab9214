"""Reuse that a clean run would repeat: a cached dependency's files, and every repository a
provider routes.

- ``gen`` writes ``build/out.txt`` (ignored), ``use`` depends on it and reads it. In a
  fresh sandbox a cached ``gen`` made nothing: unless its declared ``artifacts`` are
  restored, it runs again.
- The consumer-quality provider runs lanes in several repositories: each one's content
  is bound, and the receipt speaks for each.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from closure_helpers import answers, prove, state_of
from prove_helpers import make_change, make_repo
from repo_helpers import commit_all

EVIDENCE = "version: 3\nclaims:\n  used:\n    requires: [use]\n"
USE_V2 = "grep -q hello build/out.txt && echo second version\n"


def _artifacts_workspace(tmp_path: Path, artifacts: str) -> Path:
    execution = textwrap.dedent(f"""\
        version: 1
        providers:
          gen:
            command: [sh, gen.sh]
            inputs: [gen.sh]
        {artifacts}
          use:
            command: [sh, use.sh]
            dependsOn: [gen]
            claims: [used]
        """)
    root = make_repo(
        tmp_path / "ws",
        {
            ".gitignore": ".changeloop/\nbuild/\n",
            "gen.sh": "mkdir -p build && echo hello > build/out.txt\n",
            "use.sh": "grep -q hello build/out.txt\n",
        },
    )
    make_change(root, "c", EVIDENCE, execution)
    commit_all(root, "change")
    return root


@pytest.mark.parametrize("sandbox", ["copy", "worktree"])
def test_a_cached_dependency_without_artifacts_runs_again_for_its_dependent(
    tmp_path: Path, sandbox: str
) -> None:
    root = _artifacts_workspace(tmp_path, "")
    assert prove(root, "c", "--sandbox", sandbox)[0] == 0
    (root / "use.sh").write_text(USE_V2)
    commit_all(root, "use changes, gen does not")
    found = answers(root, "c", "--sandbox", sandbox)
    assert found.clean == "proven"
    assert found.agree(), found.why()
    assert state_of(found.docs["cached"], "gen") == "ran"


@pytest.mark.parametrize("sandbox", ["copy", "worktree"])
def test_declared_artifacts_travel_with_the_cache_entry(tmp_path: Path, sandbox: str) -> None:
    root = _artifacts_workspace(tmp_path, "    artifacts: [build/out.txt]")
    assert prove(root, "c", "--sandbox", sandbox)[0] == 0
    (root / "use.sh").write_text(USE_V2)
    commit_all(root, "use changes, gen does not")
    found = answers(root, "c", "--sandbox", sandbox)
    assert found.clean == "proven"
    assert found.agree(), found.why()
    assert state_of(found.docs["cached"], "gen") == "cached"
    assert state_of(found.docs["cached"], "use") == "ran"
    blobs = list((root / ".changeloop" / "cache" / "artifacts").rglob("*"))
    assert any(b.is_file() for b in blobs)


def test_a_damaged_artifact_is_never_restored(tmp_path: Path) -> None:
    root = _artifacts_workspace(tmp_path, "    artifacts: [build/**]")
    assert prove(root, "c", "--sandbox", "copy")[0] == 0
    for blob in (root / ".changeloop" / "cache" / "artifacts").rglob("*"):
        if blob.is_file():
            blob.chmod(0o644)
            blob.write_bytes(b"tampered\n")
    (root / "use.sh").write_text(USE_V2)
    commit_all(root, "use changes, gen does not")
    code, doc = prove(root, "c", "--sandbox", "copy")
    assert code == 0, doc
    assert state_of(doc, "gen") == "ran"  # the blob does not hash to its name: run again


def _quality_workspace(tmp_path: Path, requires: str) -> tuple[Path, Path]:
    lanes = {
        "version": 1,
        "lanes": {"lint": {"command": ["sh", "lint.sh"], "repositories": ["web", "api"]}},
    }
    api = make_repo(tmp_path / "api", {"lint.sh": "exit 0\n"})
    root = make_repo(
        tmp_path / "web",
        {
            ".gitignore": ".changeloop/\n",
            "lint.sh": "exit 0\n",
            "quality/foundation-quality.json": json.dumps(lanes),
        },
    )
    make_change(
        root,
        "c",
        f"version: 3\nrepositories:\n  web: .\n  api: ../api\nrequires: {requires}\n",
    )
    commit_all(root, "change")
    return root, api


def _with_changeloop_on_path() -> dict[str, str | None]:
    return {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def test_the_quality_provider_binds_every_repository_it_routes(tmp_path: Path) -> None:
    root, api = _quality_workspace(tmp_path, "{static-analysis: [web]}")
    env = _with_changeloop_on_path()
    code, doc = prove(root, "c", env=env)
    assert code == 0, doc
    (api / "lint.sh").write_text("exit 1\n")
    commit_all(api, "break api's lint")
    found = answers(root, "c", env=env)
    assert found.clean == "not-proven"
    assert found.agree(), found.why()


def test_the_quality_provider_credits_each_repository(tmp_path: Path) -> None:
    root, _api = _quality_workspace(tmp_path, "[static-analysis]")
    code, doc = prove(root, "c", env=_with_changeloop_on_path())
    assert code == 0, doc
    assert doc["requires"] == {"static-analysis": {"api": "pass", "web": "pass"}}
