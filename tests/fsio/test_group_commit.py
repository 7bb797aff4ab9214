"""Group commit (``run/commit.py`` over ``fsio.commit``): rounds, order, failures, leftovers.

Real files in a temporary directory; a failure is provoked for real (a parent
that is a file, a directory squatting on a name).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from changeloop import fsio
from changeloop.fsio import Pending
from changeloop.run.commit import GroupCommit


def _temporaries(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if ".tmp" in p.name]


def test_many_groups_share_rounds_and_land_in_submission_order(tmp_path: Path) -> None:
    commits = GroupCommit()
    for n in range(300):
        commits.submit(
            f"p{n}",
            [
                Pending(tmp_path / "runs" / f"p{n}" / "r.json", f"run {n}".encode()),
                Pending(tmp_path / "latest" / "same.json", f"latest {n}".encode()),
            ],
        )
    assert commits.wait() == []
    assert all(
        (tmp_path / "runs" / f"p{n}" / "r.json").read_bytes() == f"run {n}".encode()
        for n in range(300)
    )
    # One name written by every group: the last submitted wins, as written in order.
    assert (tmp_path / "latest" / "same.json").read_bytes() == b"latest 299"
    assert 1 <= commits.rounds < 300  # groups shared rounds (and their fsyncs)
    assert _temporaries(tmp_path) == []
    assert commits.close() == []


def test_a_group_that_cannot_be_written_is_reported_and_spares_the_others(tmp_path: Path) -> None:
    (tmp_path / "blocked").write_text("a file where a directory is needed\n")
    commits = GroupCommit()
    commits.submit("good-1", [Pending(tmp_path / "ok" / "1.json", b"1")])
    commits.submit(
        "bad",
        [
            Pending(tmp_path / "ok" / "before.json", b"b"),
            Pending(tmp_path / "blocked" / "x.json", b"x"),
        ],
    )
    commits.submit("good-2", [Pending(tmp_path / "ok" / "2.json", b"2")])
    failures = commits.close()
    assert [tag for tag, _error in failures] == ["bad"]
    error = failures[0][1]
    assert str(tmp_path / "blocked") in str(error)  # names the path it hit
    assert (tmp_path / "ok" / "1.json").read_bytes() == b"1"
    assert (tmp_path / "ok" / "2.json").read_bytes() == b"2"
    assert not (tmp_path / "ok" / "before.json").exists()  # nothing of the failed group renamed
    assert _temporaries(tmp_path) == []


def test_wait_does_not_sit_out_the_round_window(tmp_path: Path) -> None:
    """A round fills for up to BATCH_S; someone waiting has it written at once."""
    commits = GroupCommit()
    commits.submit("p", [Pending(tmp_path / "a.json", b"a")])
    done = threading.Event()

    def waiter() -> None:
        commits.wait()
        done.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    thread.join(30)
    assert done.is_set() and (tmp_path / "a.json").read_bytes() == b"a"
    commits.close()


def test_a_closed_group_commit_refuses_more(tmp_path: Path) -> None:
    commits = GroupCommit()
    commits.close()
    with pytest.raises(RuntimeError):
        commits.submit("late", [Pending(tmp_path / "x", b"x")])


def test_a_directory_squatting_on_a_displaceable_name_is_replaced(tmp_path: Path) -> None:
    squatter = tmp_path / "entry.json"
    (squatter / "inner").mkdir(parents=True)
    (squatter / "inner" / "f").write_text("damaged state\n")
    kept = tmp_path / "kept.json"
    (kept / "inner").mkdir(parents=True)
    errors = fsio.commit(
        [
            [Pending(squatter, b"entry", durable=False, displace_dir=True)],
            [Pending(kept, b"not displaced")],
        ]
    )
    assert errors[0] is None and squatter.read_bytes() == b"entry"
    assert errors[1] is not None and str(kept) in str(errors[1])
    assert kept.is_dir()  # only a name marked displaceable loses its directory
    assert _temporaries(tmp_path) == []


def test_a_symlink_at_the_name_is_replaced_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    link = tmp_path / "receipt.json"
    link.symlink_to(victim)
    assert fsio.commit([[Pending(link, b"signed")]]) == [None]
    assert victim.read_text() == "keep me\n" and not link.is_symlink()
    assert link.read_bytes() == b"signed"


def test_a_name_written_twice_in_a_round_keeps_the_last_bytes(tmp_path: Path) -> None:
    entry = tmp_path / "cache" / "entry.json"
    groups = [[Pending(entry, f"cache {n}".encode(), durable=False)] for n in range(5)]
    groups += [[Pending(str(entry), b"as a string")]]  # a string names the same file
    assert fsio.commit(groups) == [None] * 6
    assert entry.read_bytes() == b"as a string"
    assert [p.name for p in entry.parent.iterdir()] == ["entry.json"]  # no temporary left


def test_the_writer_thread_ends_when_idle_and_a_new_one_takes_over(tmp_path: Path) -> None:
    """A run leaves no thread behind (an in-process caller proves many times)."""
    import time

    from changeloop.run.commit import IDLE_S

    commits = GroupCommit()
    commits.submit("a", [Pending(tmp_path / "a.json", b"a")])
    assert commits.wait() == []
    deadline = time.monotonic() + IDLE_S * 10
    while any(t.name == "changeloop-commit" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the idle writer thread never ended"
        time.sleep(0.05)
    commits.submit("b", [Pending(tmp_path / "b.json", b"b")])  # a new writer
    assert commits.close() == []
    assert (tmp_path / "b.json").read_bytes() == b"b"


def _lands(path: Path, data: bytes, within: float = 20.0) -> bool:
    """Whether ``path`` comes to hold ``data`` (polled: nobody waits on the commits)."""
    import time

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.is_file() and path.read_bytes() == data:
            return True
        time.sleep(0.01)
    return False


def test_a_round_with_nothing_to_fsync_does_not_wait_for_company(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files that are not fsynced (a reused receipt's copies) share no fsync: their round
    goes at once, even with the window for company set to an hour and nobody waiting."""
    from changeloop.run import commit

    monkeypatch.setattr(commit, "BATCH_S", 3600.0)
    commits = GroupCommit()
    commits.submit("reused", [Pending(tmp_path / "r.json", b"r", durable=False)])
    assert _lands(tmp_path / "r.json", b"r")
    assert commits.close() == []


def test_hurry_ends_the_wait_for_company_of_a_round_to_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round with files to fsync waits for company; ``hurry`` (nothing worth waiting for
    is coming) has it written at once, as durable as ever, and every later one too."""
    from changeloop.run import commit

    monkeypatch.setattr(commit, "BATCH_S", 3600.0)
    commits = GroupCommit()
    commits.submit("ran", [Pending(tmp_path / "a.json", b"a")])
    commits.hurry()
    assert _lands(tmp_path / "a.json", b"a")
    commits.submit("later", [Pending(tmp_path / "b.json", b"b")])
    assert _lands(tmp_path / "b.json", b"b")
    assert commits.close() == []
    assert _temporaries(tmp_path) == []
