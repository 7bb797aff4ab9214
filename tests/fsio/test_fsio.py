"""``changeloop.fsio``: writes never follow a planted symlink, reads never hang or grow unbounded.

docs/threat-model.md (exclusive temporary files, then rename) and docs/processes.md "Faults"
(files named by wiring are regular files read with a size cap). Each test
plants the hostile thing for real — a symlink, a FIFO, ``/dev/zero`` — and
checks what is on disk afterwards.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

import pytest

from changeloop import fsio
from changeloop.errors import FileRefused
from changeloop.runner_reports import read_report
from changeloop.signing.statement import write_atomic as receipts_write_atomic


def test_a_symlink_at_the_destination_is_replaced_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    dest = tmp_path / "out" / "receipt.json"
    dest.parent.mkdir()
    dest.symlink_to(victim)
    receipts_write_atomic(dest, b"{}")
    assert victim.read_text() == "keep me\n"
    assert not dest.is_symlink() and dest.read_bytes() == b"{}"


def test_the_old_predictable_temporary_name_is_never_opened(tmp_path: Path) -> None:
    """The writer used ``.<name>.<pid>.tmp`` with O_TRUNC: a symlink planted there was followed."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    dest = tmp_path / "receipt.json"
    (tmp_path / f".{dest.name}.{os.getpid()}.tmp").symlink_to(victim)
    (tmp_path / f".{dest.name}.tmp{os.getpid()}").symlink_to(victim)
    receipts_write_atomic(dest, b"signed")
    assert victim.read_text() == "keep me\n"
    assert dest.read_bytes() == b"signed"


def test_write_all_renames_every_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    items = [(tmp_path / f"{n}.json", f"{n}".encode()) for n in range(5)]
    fsio.write_all(items)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{n}.json" for n in range(5)]
    assert all(p.read_bytes() == data for p, data in items)


def test_write_all_that_fails_changes_nothing_and_cleans_up(tmp_path: Path) -> None:
    (tmp_path / "b.json").mkdir()
    (tmp_path / "b.json" / "x").write_text("a non-empty directory cannot be renamed over")
    (tmp_path / "a.json").write_text("old")
    with pytest.raises(OSError):
        # b.json fails at rename, after a.json was renamed: a is new, b untouched, no temps
        fsio.write_all([(tmp_path / "a.json", b"new"), (tmp_path / "b.json", b"new")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]
    assert (tmp_path / "b.json").is_dir()


def test_private_files_get_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        fsio.write_atomic(tmp_path / "k", b"secret", mode=0o600)
        fsio.create_new(tmp_path / "k2", b"secret", mode=0o600)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "k").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "k2").stat().st_mode) == 0o600


def test_create_new_refuses_even_a_dangling_symlink(tmp_path: Path) -> None:
    target = tmp_path / "attacker-owned"
    (tmp_path / "key").symlink_to(target)
    with pytest.raises(FileExistsError):
        fsio.create_new(tmp_path / "key", b"private")
    assert not target.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["key"]  # no temporary left


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def _in_thread(func: object) -> tuple[threading.Thread, list[object]]:
    out: list[object] = []

    def run() -> None:
        try:
            out.append(func())  # type: ignore[operator]
        except Exception as exc:
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_a_fifo_is_refused_without_blocking(fifo: Path) -> None:
    thread, out = _in_thread(lambda: fsio.read_regular(fifo, limit=1024, what="report"))
    thread.join(30)
    assert not thread.is_alive(), "read_regular blocked on a FIFO"
    assert isinstance(out[0], FileRefused)
    assert "FIFO" in out[0].reason and str(fifo) in str(out[0])


def test_a_fifo_named_as_report_is_an_unreadable_report_not_a_hang(fifo: Path) -> None:
    thread, out = _in_thread(lambda: read_report(fifo))
    thread.join(30)
    assert not thread.is_alive(), "read_report blocked on a FIFO"
    result = out[0]
    assert getattr(result, "counts", "x") is None
    assert "FIFO" in str(getattr(result, "error", ""))


def test_dev_zero_is_refused_before_any_byte_is_read() -> None:
    with pytest.raises(FileRefused, match="character device"):
        fsio.read_regular(Path("/dev/zero"), limit=1024, what="public key")


def test_a_directory_and_a_missing_file_are_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(FileRefused, match="is a directory"):
        fsio.read_regular(tmp_path, limit=10, what="contract file")
    with pytest.raises(FileRefused, match="does not exist") as missing:
        fsio.read_regular(tmp_path / "nope", limit=10, what="contract file")
    assert missing.value.missing and missing.value.exit_code == 2


def test_a_file_over_the_cap_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2049)
    with pytest.raises(FileRefused, match="larger than 2 KiB"):
        fsio.read_regular(big, limit=2048, what="report")
    assert fsio.read_regular(big, limit=4096, what="report") == b"x" * 2049


def test_an_endless_proc_file_is_cut_at_the_cap() -> None:
    """/proc files claim size 0 and may go on: the cap holds while reading, not only by stat."""
    path = Path("/proc/self/maps")
    if not path.exists():
        pytest.skip("no /proc")
    with pytest.raises(FileRefused, match="larger than"):
        fsio.read_regular(path, limit=16, what="report")


def test_nofollow_read_refuses_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"data")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(FileRefused, match="symlink"):
        fsio.read_regular_stat(tmp_path / "link", limit=10, what="key", follow_symlinks=False)
    assert fsio.read_regular(tmp_path / "link", limit=10, what="key") == b"data"


def test_symlink_under_names_the_first_link_below_the_base(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "a").symlink_to(tmp_path / "real")
    assert fsio.symlink_under(tmp_path / "a" / "b" / "c", tmp_path) == tmp_path / "a"
    assert fsio.symlink_under(tmp_path / "real" / "b", tmp_path) is None
    assert fsio.symlink_under(Path("/elsewhere"), tmp_path) is None


# -- durability in rounds (docs/design.md) --


def _order(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every fsync (of a file or of a directory) and every rename of a round, in order."""
    calls: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        kind = "dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        calls.append((f"fsync-{kind}", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: str, dst: str) -> None:
        calls.append(("rename", os.fspath(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return calls


def test_a_round_fsyncs_every_durable_file_before_any_rename_and_each_directory_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _order(monkeypatch)
    count = 20
    groups = [[fsio.Pending(tmp_path / f"d{n % 3}" / f"{n}.json", b"%d" % n)] for n in range(count)]
    groups.append([fsio.Pending(tmp_path / "cache" / "c.json", b"c", durable=False)])
    assert fsio.commit(groups) == [None] * (count + 1)
    kinds = [kind for kind, _path in calls]
    assert kinds == ["fsync-file"] * count + ["rename"] * (count + 1) + ["fsync-dir"] * 3
    assert sorted(path for kind, path in calls if kind == "fsync-dir") == sorted(
        str(tmp_path / f"d{n}") for n in range(3)
    )  # the cache entry's directory is not synced: the entry is not durable
    for n in range(count):
        assert (tmp_path / f"d{n % 3}" / f"{n}.json").read_bytes() == b"%d" % n
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_a_failed_fsync_fails_its_group_and_renames_nothing_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writeback error (EIO) on one file: its group keeps its old files and no temporary;
    the other groups of the round are written."""
    real_fsync = os.fsync

    def failing(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(tmp_path / "bad")):
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.json").write_bytes(b"old")
    groups = [
        [fsio.Pending(tmp_path / "good" / "a.json", b"new")],
        [fsio.Pending(tmp_path / "bad" / "a.json", b"new")],
    ]
    errors = fsio.commit(groups)
    assert errors[0] is None
    assert isinstance(errors[1], OSError) and errors[1].errno == errno.EIO
    assert errors[1].filename == str(tmp_path / "bad" / "a.json")
    assert (tmp_path / "good" / "a.json").read_bytes() == b"new"
    assert [p.name for p in (tmp_path / "bad").iterdir()] == ["a.json"]
    assert (tmp_path / "bad" / "a.json").read_bytes() == b"old"
