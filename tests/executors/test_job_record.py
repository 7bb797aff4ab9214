"""A Job is a record a remote executor could run: picklable, no secret values, no handles.

The envFrom value stays in the executor's environment: it is read there when
the job runs, and masked in the job's log, yet never travels in the Job.
"""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

import anyio
import pytest
from adapter_helpers import adapter_context
from browser_helpers import make_plan

from changeloop.executors.job import Job
from changeloop.executors.local import LocalExecutor
from changeloop.model import Provider
from changeloop.providers import command

SECRET = "s3cr3t-value-that-must-not-travel"


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_TOKEN", SECRET)


def _provider(adapter: str, argv: tuple[str, ...]) -> Provider:
    return Provider(
        name="p",
        adapter=adapter,
        capability="test" if adapter == "test-discovery" else "p",
        repository="self",
        command=argv,
        env={"LITERAL": "plain"},
        env_from=("API_TOKEN",),
        claims=("c1",),
    )


@pytest.mark.usefixtures("secret_env")
def test_a_command_job_pickles_without_the_secret_and_runs_elsewhere(tmp_path: Path) -> None:
    script = "import os; print(os.environ['API_TOKEN'], os.environ['LITERAL'])"
    provider = _provider("command", (sys.executable, "-c", script))
    plan = make_plan(tmp_path, providers={"p": provider}, claims={"c1": ["p"]})
    ctx = adapter_context(plan, provider, workdirs={"self": tmp_path}, run_dir=tmp_path / "run")
    job = command.prepare(ctx)
    blob = pickle.dumps(job)
    assert SECRET.encode() not in blob
    assert ("LITERAL", "plain") in job.env and "API_TOKEN" in job.env_from
    assert job.claims.claims_requiring("p") == ("c1",)
    copy: Job = pickle.loads(blob)
    result = anyio.run(LocalExecutor(dict(os.environ)).run, copy)
    assert result.exit_code == 0
    log = result.log_path.read_text()
    assert "plain" in log and SECRET not in log  # read by the executor, masked in the log
    [outcome] = command.read(copy, result)
    assert outcome.status == "pass"
