"""Zero false cache hits: over random edit sequences, equal fingerprint ⇔ equal inputs."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sandbox_helpers import fingerprints, make_repo

from changeloop.model import Provider

FILES = ["src/a.py", "src/b.py", "docs/readme.md", "openspec/x.md"]

edit = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(FILES), st.sampled_from(["0", "1", "2"])),
    st.tuples(st.just("delete"), st.sampled_from(FILES), st.just("")),
    st.tuples(st.just("env"), st.sampled_from(["", "0", "1"]), st.just("")),
    st.tuples(st.just("secret"), st.sampled_from(["s0", "s1", "s2"]), st.just("")),
    st.tuples(st.just("command"), st.sampled_from(["x", "y"]), st.just("")),
)


def _truth(files: dict[str, str], env: str, secret: str, command: str) -> dict[str, object]:
    """What each provider's result depends on, by the definition of the spec."""
    content = tuple(sorted((k, v) for k, v in files.items() if not k.startswith("openspec/")))
    py = tuple(sorted((k, v) for k, v in files.items() if k.startswith("src/")))
    whole = (content, env, secret)
    return {"whole": whole, "inputs": (py, command), "down": (whole,)}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(edit, min_size=1, max_size=6))
def test_no_false_cache_hits(edits: list[tuple[str, str, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        files = {name: "init" for name in FILES}
        repo = make_repo(Path(tmp) / "r", dict(files))
        env, secret, command = "", "s0", "x"
        seen: dict[str, dict[str, object]] = {"whole": {}, "inputs": {}, "down": {}}
        for step in [("noop", "", ""), *edits]:
            kind, a, b = step
            if kind == "write":
                (repo / a).parent.mkdir(parents=True, exist_ok=True)
                (repo / a).write_text(b)
                files[a] = b
            elif kind == "delete" and a in files:
                (repo / a).unlink()
                del files[a]
            elif kind == "env":
                env = a
            elif kind == "secret":
                secret = a
            elif kind == "command":
                command = a
            providers = {
                "whole": Provider(
                    name="whole",
                    adapter="command",
                    capability="test",
                    repository="r",
                    command=("run",),
                    env={"E": env} if env else {},
                    env_from=("S",),
                ),
                "inputs": Provider(
                    name="inputs",
                    adapter="command",
                    capability="test",
                    repository="r",
                    command=(command,),
                    inputs=("src/*.py",),
                ),
                "down": Provider(
                    name="down",
                    adapter="command",
                    capability="test",
                    repository="r",
                    command=("run",),
                    depends_on=("whole",),
                    inputs=("nothing/*",),
                ),
            }
            fps = fingerprints({"r": repo}, providers, env_values={"S": secret})
            truth = _truth(files, env, secret, command)
            for name, fp in fps.items():
                known = seen[name]
                if fp in known:
                    assert known[fp] == truth[name], f"false cache hit for {name} after {step}"
                known[fp] = truth[name]
                # And no needless miss: one fingerprint per distinct truth.
                assert sum(1 for t in known.values() if t == truth[name]) == 1
