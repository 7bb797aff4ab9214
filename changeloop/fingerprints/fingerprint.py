"""Fingerprints: sha256 over everything a provider's result depends on.

Equal fingerprint ⇒ an earlier ``pass`` receipt still speaks for the provider
 (docs/design.md). The fingerprint is the sha256 of the RFC 8785 form of the
provider's *effective wiring* — never the bytes of ``execution.yaml`` as a
whole, so editing one provider re-runs that provider alone — plus the content
it ran against and the fingerprints of the providers it depends on.

Usage::

    fp = compute(provider=p, adapter_inputs=adapter.fingerprint_inputs(p),
                 effective_command=adapter.effective_command(p),
                 trees={"web": ident.tree}, inputs_digest=None, upstream={},
                 env_from_values={"DATABASE_URL": os.environ["DATABASE_URL"]},
                 hmac_key=key, services=[], schema_version="changeloop/receipt@2",
                 wiring=wiring_digest(plan, p))

``envFrom`` values never appear in clear: each is an HMAC-SHA256 keyed by
bytes the caller derives from the workspace key, so a fingerprint (which is
written into receipts) reveals nothing about a secret, yet changes with it.
"""

from __future__ import annotations

import bisect
import hashlib
import hmac
import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from changeloop.errors import ChangeloopError
from changeloop.fingerprints.pathspec import Pathspec, normalize
from changeloop.fingerprints.wiring import service_wiring
from changeloop.formats import FINGERPRINT_FORMAT, RECEIPT_SCHEMA
from changeloop.git.repo import git, git_env, layout
from changeloop.model import Provider, Service
from changeloop.signing.jcs import canonicalize

__all__ = [
    "FORMAT",
    "InputsIndex",
    "compute",
    "document",
    "external_symlinks",
    "inputs_digest",
]

# Bump (in changeloop.formats) when the meaning of the document below changes.
FORMAT = FINGERPRINT_FORMAT
SCHEMA_VERSION = RECEIPT_SCHEMA


def _secret(hmac_key: bytes, name: str, value: str) -> str:
    message = canonicalize([name, value])
    return hmac.new(hmac_key, message, hashlib.sha256).hexdigest()


def document(
    *,
    provider: Provider,
    adapter_inputs: Mapping[str, Any],
    effective_command: Sequence[str] | None,
    trees: Mapping[str, str],
    inputs_digest: str | None,
    upstream: Mapping[str, str],
    env_from_values: Mapping[str, str],
    hmac_key: bytes,
    services: Sequence[Service],
    schema_version: str,
    wiring: str | None = None,
    environ: Mapping[str, str] | None = None,
    ignored_inputs: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The JSON document the fingerprint hashes (exposed for tests and ``--explain``).

    With ``inputs_digest`` the provider's own repository counts only through the
    files its ``inputs`` globs match; other repositories still count by tree.
    ``environ``: every variable the command gets from the caller's environment (the
    fixed set and ``passEnv``, as ``changeloop.passenv.passed_values`` gives them);
    ``ignored_inputs``: the digests of ignored paths its ``inputs`` name.
    """
    if inputs_digest is not None:
        content: dict[str, Any] = {
            "inputs": {"globs": sorted(provider.inputs), "digest": inputs_digest},
            "trees": {r: t for r, t in trees.items() if r != provider.repository},
        }
    else:
        content = {"trees": dict(trees)}
    return {
        "format": FORMAT,
        "schema": schema_version,
        "adapter": provider.adapter,
        "capability": provider.capability,
        "repository": provider.repository,
        "command": list(effective_command) if effective_command is not None else None,
        "adapterInputs": dict(adapter_inputs),
        "report": provider.report,
        "minimum": provider.minimum,
        "outputs": list(provider.outputs),
        "claims": sorted(provider.claims),
        "env": dict(provider.env),
        "envFrom": {
            name: _secret(hmac_key, name, env_from_values.get(name, ""))
            for name in provider.env_from
        },
        "environ": dict(environ) if environ is not None else None,
        "resources": sorted(provider.resources),
        "services": [
            {
                **service_wiring(s),
                # a service's secrets decide what it answers: bound like the provider's
                "envFromValues": {
                    name: _secret(hmac_key, name, env_from_values.get(name, ""))
                    for name in s.env_from
                },
            }
            for s in sorted(services, key=lambda s: s.name)
        ],
        "timeoutMs": provider.timeout_ms,
        "content": content,
        "ignoredInputs": dict(ignored_inputs) if ignored_inputs else None,
        "upstream": dict(upstream),
        "wiring": wiring,
    }


def compute(
    *,
    provider: Provider,
    adapter_inputs: Mapping[str, Any],
    effective_command: Sequence[str] | None,
    trees: Mapping[str, str],
    inputs_digest: str | None,
    upstream: Mapping[str, str],
    env_from_values: Mapping[str, str],
    hmac_key: bytes,
    services: Sequence[Service],
    schema_version: str,
    wiring: str | None = None,
    environ: Mapping[str, str] | None = None,
    ignored_inputs: Mapping[str, str] | None = None,
) -> str:
    """``"sha256:<hex>"`` of the RFC 8785 form of :func:`document`."""
    doc = document(
        provider=provider,
        adapter_inputs=adapter_inputs,
        effective_command=effective_command,
        trees=trees,
        inputs_digest=inputs_digest,
        upstream=upstream,
        env_from_values=env_from_values,
        hmac_key=hmac_key,
        services=services,
        schema_version=schema_version,
        wiring=wiring,
        environ=environ,
        ignored_inputs=ignored_inputs,
    )
    return "sha256:" + hashlib.sha256(canonicalize(doc)).hexdigest()


# -- inputs pathspecs ------------------------------------------------------------


_WILD = b"*?[\\"  # what makes a pathspec character a wildcard (changeloop.fingerprints.pathspec)


def _blob_id(data: bytes) -> str:
    """Git's blob id of ``data`` (for content outside a git work tree)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _under(paths: list[bytes], text: bytes) -> list[bytes]:
    """Sorted ``paths`` equal to ``text`` or under the directory ``text`` (two bisections)."""
    if not text:
        return paths
    out: list[bytes] = []
    if not text.endswith(b"/"):
        at = bisect.bisect_left(paths, text)
        if at < len(paths) and paths[at] == text:
            out.append(text)
        text += b"/"
    # "/" + 1 is "0": the paths starting with ``text`` sort between the two bounds.
    upper = text[:-1] + b"0"
    out.extend(paths[bisect.bisect_left(paths, text) : bisect.bisect_left(paths, upper)])
    return out


class InputsIndex:
    """Every file of one work directory with its mode and content id, listed once.

    Make one per repository per run and call :meth:`digest` per provider: 100
    providers cost one git listing, not 100. In a git work tree the listing is
    git's own (tracked + untracked-not-ignored, via a temporary index refreshed
    through the user's stat cache — the trust the content identity already
    places in it); elsewhere (a copy sandbox) files are walked and hashed.
    Content ids are git blob ids, the same hash the ``gitTree`` subject uses.
    """

    def __init__(self, workdir: Path, tree: str | None = None) -> None:
        self.workdir = workdir
        listed = self._from_tree(tree) if tree is not None else self._from_git()
        self._git = listed is not None
        entries = listed if listed is not None else self._walk()
        self._bpaths = sorted(os.fsencode(p) for p in entries)  # git compares bytes
        self._entries = entries

    @classmethod
    def of_entries(cls, workdir: Path, entries: dict[str, tuple[str, str]]) -> InputsIndex:
        """An index over entries listed elsewhere (``subtree_entries``: part of a tree)."""
        index = cls.__new__(cls)
        index.workdir = workdir
        index._git = True
        index._entries = entries
        index._bpaths = sorted(os.fsencode(p) for p in entries)
        return index

    def _from_git(self) -> dict[str, tuple[str, str]] | None:
        from changeloop.git.index import seed_index, stage  # noqa: PLC0415 - kept off the no-change answer's imports

        try:
            lay = layout(self.workdir)
        except ChangeloopError:
            return None
        with tempfile.TemporaryDirectory(prefix="changeloop-index-") as tmp:
            index = Path(tmp) / "index"
            seed_index(lay, index, self.workdir)
            env = git_env(index)
            stage(self.workdir, env, include_untracked=True)
            from changeloop.git import submodules  # noqa: PLC0415 - kept off the no-change answer's imports

            submodules.fold(self.workdir, env, include_untracked=True)
            proc = git(["ls-files", "-s", "-z", "--", "."], cwd=self.workdir, env=env)
        out: dict[str, tuple[str, str]] = {}
        for record in proc.stdout.split(b"\0"):
            if not record:
                continue
            meta, _tab, path = record.partition(b"\t")
            mode, blob, _stage = meta.decode().split(" ")
            out[os.fsdecode(path)] = (mode, blob)
        return _with_submodules(self.workdir, out)

    def _from_tree(self, tree: str) -> dict[str, tuple[str, str]] | None:
        """List the content identity's own tree: no second pass over the working tree.

        The run already wrote this tree (``openspec/`` left out), so the inputs
        digest covers exactly the content the receipts name.
        """
        proc = git(["ls-tree", "-r", "-z", tree], cwd=self.workdir, check=False)
        if proc.returncode != 0:
            return self._from_git()
        out: dict[str, tuple[str, str]] = {}
        for record in proc.stdout.split(b"\0"):
            if not record:
                continue
            meta, _tab, path = record.partition(b"\t")
            mode, _kind, blob = meta.decode().split(" ")
            out[os.fsdecode(path)] = (mode, blob)
        return _with_submodules(self.workdir, out)

    def _walk(self) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for dirpath, dirnames, files in os.walk(self.workdir):
            dirnames[:] = [d for d in dirnames if d != ".git"]
            for name in files + [d for d in dirnames if (Path(dirpath) / d).is_symlink()]:
                full = Path(dirpath) / name
                st = full.lstat()
                if stat.S_ISLNK(st.st_mode):
                    mode, data = "120000", os.fsencode(full.readlink())
                elif stat.S_ISREG(st.st_mode):
                    mode, data = ("100755" if st.st_mode & 0o111 else "100644"), full.read_bytes()
                else:
                    continue
                out[full.relative_to(self.workdir).as_posix()] = (mode, _blob_id(data))
        return out

    def symlinks(self) -> list[str]:
        """Paths of the symbolic links in the listing (mode 120000)."""
        return sorted(p for p, (mode, _blob) in self._entries.items() if mode == "120000")

    def matches(self, globs: Sequence[str]) -> list[str]:
        """The listed paths git's ``ls-files -- ':(glob)<g>'…`` would name (docs/processes.md).

        ``src`` covers everything under ``src/``; see :mod:`changeloop.fingerprints.pathspec`.
        """
        return matching(self._bpaths, globs)

    def has_gitlinks(self) -> bool:
        """True when the listing holds a submodule (its files are expanded beside it)."""
        return any(mode == "160000" for mode, _blob in self._entries.values())

    def digest(self, globs: Sequence[str]) -> str:
        """``"sha256:<hex>"`` over path, mode and content id of the files ``globs`` match."""
        files = [[p, *self._entries[p]] for p in self.matches(globs)]
        doc = {"globs": sorted(globs), "files": files}
        return "sha256:" + hashlib.sha256(canonicalize(doc)).hexdigest()


def matching(paths: list[bytes], globs: Sequence[str]) -> list[str]:
    """The paths among sorted ``paths`` the ``inputs`` globs name, each judged on its own.

    Each pattern only looks at the paths that start with its literal prefix.
    """
    found: set[bytes] = set()
    for pattern in globs:
        text = normalize(pattern)
        if text.endswith(b"/**") and not any(c in _WILD for c in text[:-3]):
            # ``dir/**``: everything under dir/ (git's literal-prefix rule with a rest
            # that matches anything); two bisections, no regex compiled per provider.
            found.update(_under(paths, text[:-2]))
            continue
        spec = Pathspec.parse(pattern)
        if spec.regex is None:  # literal: the path itself and everything under it
            found.update(_under(paths, spec.text))
            continue
        for k in range(bisect.bisect_left(paths, spec.prefix), len(paths)):
            path = paths[k]
            if not path.startswith(spec.prefix):
                break
            if spec.matches(path):
                found.add(path)
    return sorted(os.fsdecode(p) for p in found)


def literal_dirs(globs: Sequence[str]) -> list[bytes] | None:
    """Directories (``a/b/``) holding every path ``globs`` can match; None: the whole tree.

    Each pattern matches only paths that start with its literal prefix, so they all
    lie under the prefix's directory part.
    """
    dirs: set[bytes] = set()
    for pattern in globs:
        text = normalize(pattern)
        if text.endswith(b"/**") and not any(c in _WILD for c in text[:-3]):
            prefix = text[:-2]
        else:
            spec = Pathspec.parse(pattern)
            prefix = spec.text if spec.regex is None else spec.prefix
        cut = prefix.rfind(b"/")
        if cut <= 0:
            return None
        dirs.add(prefix[: cut + 1])
    return sorted(d for d in dirs if not any(d != o and d.startswith(o) for o in dirs))


def subtree_entries(
    workdir: Path, tree: str, dirs: Sequence[bytes]
) -> dict[str, tuple[str, str]] | None:
    """Every file of ``tree`` under ``dirs`` (mode, blob id), as ``ls-tree -r`` lists them.

    None when git cannot list one of them (absent, not a directory) or a submodule
    is among them: the caller lists the whole tree instead.
    """
    out: dict[str, tuple[str, str]] = {}
    for directory in dirs:
        spec = f"{tree}:{os.fsdecode(directory.rstrip(b'/'))}"
        proc = git(["ls-tree", "-r", "-z", spec], cwd=workdir, check=False)
        if proc.returncode != 0:
            return None
        for record in proc.stdout.split(b"\0"):
            if not record:
                continue
            meta, _tab, path = record.partition(b"\t")
            mode, _kind, blob = meta.decode().split(" ")
            if mode == "160000":
                return None
            out[os.fsdecode(directory + path)] = (mode, blob)
    return out


def _with_submodules(
    workdir: Path, listed: dict[str, tuple[str, str]]
) -> dict[str, tuple[str, str]]:
    """``listed`` plus each gitlink's files under its path (docs/fingerprints.md, "Submodules")."""
    links = [(path, oid) for path, (mode, oid) in listed.items() if mode == "160000"]
    if not links:
        return listed
    from changeloop.git.submodules import expand  # noqa: PLC0415 - kept off the no-change answer's imports

    return {**listed, **expand(workdir, links)}


def external_symlinks(workdir: Path, links: Sequence[str]) -> dict[str, str]:
    """The links among ``links`` whose target is not content: path -> where it points.

    git hashes a link's text, not its target, so what a link points at is content
    only when it is a file of the content identity. A target outside ``workdir``, under
    its top-level ``openspec/`` (left out of the identity) or in ``.git/``, or one git
    ignores, is not: the identity of a repository holding such a link is open, and
    nothing proves its result still holds (docs/threat-model.md). The value says where it
    points, as the finding names it.
    """
    root = workdir.resolve()
    out: dict[str, str] = {}
    inside: dict[str, str] = {}  # link -> its target relative to the repository
    for rel in links:
        link = workdir / rel
        try:
            target = link.resolve()
        except (OSError, RuntimeError):  # a loop: nothing inside can be trusted either
            text = str(link.readlink()) if link.is_symlink() else "(unresolvable)"
            out[rel] = f"cannot be resolved ({text})"
            continue
        if not target.is_relative_to(root):
            out[rel] = f"resolves outside the repository ({target})"
            continue
        where = target.relative_to(root).as_posix()
        top = where.split("/", 1)[0]
        if top == "openspec":
            out[rel] = f"points into openspec/ ({where}), which the content identity leaves out"
        elif top == ".git":
            out[rel] = f"points into .git/ ({where}), which is no content"
        elif where != ".":
            inside[rel] = where
    if inside:
        ignored = _ignored(workdir, sorted(set(inside.values())))
        for rel, where in inside.items():
            if where in ignored:
                out[rel] = (
                    f"points to an ignored file ({where}), which the content identity leaves out"
                )
    return out


def _ignored(workdir: Path, paths: Sequence[str]) -> set[str]:
    """The ``paths`` (relative to ``workdir``) git ignores: one ``git check-ignore``."""
    listing = b"".join(os.fsencode(p) + b"\0" for p in paths)
    proc = git(["check-ignore", "--stdin", "-z"], cwd=workdir, check=False, input_bytes=listing)
    if proc.returncode not in (0, 1):
        return set()
    return {os.fsdecode(p) for p in proc.stdout.split(b"\0") if p}


def inputs_digest(workdir: Path, globs: Sequence[str]) -> str:
    """One provider's inputs digest (for many providers, share one :class:`InputsIndex`)."""
    return InputsIndex(workdir).digest(globs)
