"""Rust: a Cargo.toml means ``cargo test``; workspaces are followed to their members.

Cargo itself is the test runner, so the manifest is the signal; a ``cargo`` on
PATH says nothing about this repository and is only checked by doctor.
"""

from __future__ import annotations

import re
from pathlib import Path

from changeloop.detect.types import Detection
from changeloop.project.manifests import dig, read_toml


def workspace_members(repo: Path) -> list[str] | None:
    """Member directories of a Cargo workspace (globs expanded), or None if not a workspace."""
    data = read_toml(repo / "Cargo.toml")
    members = dig(data, "workspace", "members")
    if not isinstance(members, list):
        return None
    out: list[str] = []
    for pattern in members:
        if not isinstance(pattern, str) or ".." in pattern.split("/"):
            continue
        for member in sorted(repo.glob(pattern)):
            if (member / "Cargo.toml").is_file():
                out.append(member.relative_to(repo).as_posix())
    return out


def toolchain(repo: Path) -> str | None:
    """The pinned toolchain channel (rust-toolchain.toml or rust-toolchain), if any."""
    data = read_toml(repo / "rust-toolchain.toml")
    channel = dig(data, "toolchain", "channel")
    if isinstance(channel, str):
        return channel
    legacy = repo / "rust-toolchain"
    if legacy.is_file():
        text = legacy.read_text(encoding="utf-8", errors="replace").strip()
        if re.fullmatch(r"[0-9A-Za-z.\-]+", text):
            return text
    return None


def detect(repo: Path) -> list[Detection]:
    data = read_toml(repo / "Cargo.toml")
    if data is None:
        return []
    members = workspace_members(repo)
    if members is not None:
        listed = ", ".join(members) if members else "none found"
        evidence = f"Cargo.toml [workspace] members ({listed})"
    elif isinstance(data.get("package"), dict):
        evidence = "Cargo.toml [package]"
    else:
        return []
    return [Detection("cargo", "rust", "manifest", toolchain(repo), evidence)]
