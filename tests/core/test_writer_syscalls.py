"""The writer thread's system calls per file (issue 15): each one hands the GIL over.

A round of a thousand providers writes into a thousand directories; what the
round does per directory and per file is what the event loop waits for.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from changeloop import fsio
from changeloop.fsio import durability


def test_a_large_round_opens_one_directory_per_file_system_to_sync_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if durability.whole_filesystem_sync() is None:
        pytest.skip("no syncfs on this platform: every round fsyncs file by file")
    opened: list[str] = []
    real_open = os.open

    def spy(path: str | Path, flags: int, *args: int, **kwargs: int) -> int:
        if flags & os.O_DIRECTORY:
            opened.append(os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    count = durability.SYNCFS_FROM * 2
    groups = [[fsio.Pending(tmp_path / f"p{n}" / "r.json", b"%d" % n)] for n in range(count)]
    assert fsio.commit(groups) == [None] * count
    # One file system here: one directory opened for the sync before the renames, one after
    # (it used to be every directory, twice).
    assert len(opened) == 2
    for n in range(count):
        assert (tmp_path / f"p{n}" / "r.json").read_bytes() == b"%d" % n


def test_a_directory_that_vanished_before_the_sync_fails_the_round_naming_it(
    tmp_path: Path,
) -> None:
    sync = durability.whole_filesystem_sync()
    if sync is None:
        pytest.skip("no syncfs on this platform")
    gone = tmp_path / "gone"
    failure = durability.sync_filesystems(sync, [tmp_path, gone])
    assert isinstance(failure, FileNotFoundError)
    assert failure.filename == str(gone)
    assert durability.sync_filesystems(sync, [tmp_path, str(tmp_path)]) is None


def test_a_round_stats_each_directory_once_and_draws_no_randomness_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if durability.whole_filesystem_sync() is None:
        pytest.skip("no syncfs on this platform: every round fsyncs file by file")
    stats: list[str] = []
    draws: list[int] = []
    real_stat, real_urandom = os.stat, os.urandom

    def stat_spy(path: str | Path, *args: object, **kwargs: object) -> os.stat_result:
        stats.append(os.fspath(path))
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    def urandom_spy(size: int) -> bytes:
        draws.append(size)
        return real_urandom(size)

    monkeypatch.setattr(os, "stat", stat_spy)
    monkeypatch.setattr(os, "urandom", urandom_spy)
    count = durability.SYNCFS_FROM * 2
    groups = [
        [
            fsio.Pending(tmp_path / f"p{n}" / "a.json", b"%d" % n),
            fsio.Pending(tmp_path / f"p{n}" / "b.json", b"%d" % n),
        ]
        for n in range(count)
    ]
    assert fsio.commit(groups) == [None] * count
    directories = {str(tmp_path / f"p{n}") for n in range(count)}
    # Made with one mkdir each, stat-ed once to learn its file system, none after the renames.
    assert sorted(s for s in stats if s in directories) == sorted(directories)
    assert draws == []  # temporary names: no getrandom (a GIL hand-off) per file
    names = [p.name for p in tmp_path.rglob("*") if ".tmp" in p.name]
    assert names == []


def test_a_path_given_as_a_string_is_the_same_name_as_its_path(tmp_path: Path) -> None:
    """The sink stages strings; a cache entry named both ways in one round is written once."""
    entry = tmp_path / "cache" / "e.json"
    (tmp_path / "cache" / "squat.json").mkdir(parents=True)  # damaged state: a directory
    groups = [
        [fsio.Pending(entry, b"first", durable=False, supersedable=True)],
        [fsio.Pending(str(entry), b"second", durable=False, supersedable=True)],
        [fsio.Pending(str(tmp_path / "run" / "p" / "r.json"), b"receipt")],
        [fsio.Pending(str(tmp_path / "cache" / "squat.json"), b"c", displace_dir=True)],
    ]
    assert fsio.commit(groups) == [None] * 4
    assert entry.read_bytes() == b"second"
    assert sorted(p.name for p in entry.parent.iterdir()) == ["e.json", "squat.json"]
    assert (tmp_path / "run" / "p" / "r.json").read_bytes() == b"receipt"
    assert (tmp_path / "cache" / "squat.json").read_bytes() == b"c"
