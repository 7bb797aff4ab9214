"""Workspace and change discovery mirror OpenSpec's rules (docs: /work/shared/OPENSPEC.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from changeloop.errors import ConfigError
from changeloop.workspace.discovery import find_change, find_root, list_changes


@pytest.mark.parametrize("marker", ["specs/", "changes/", "config.yaml", "config.yml"])
def test_root_is_nearest_ancestor_with_a_marker(tmp_path: Path, marker: str) -> None:
    target = tmp_path / "openspec" / marker.rstrip("/")
    if marker.endswith("/"):
        target.mkdir(parents=True)
    else:
        target.parent.mkdir(parents=True)
        target.write_text("schema: spec-driven\n")
    deep = tmp_path / "src" / "pkg"
    deep.mkdir(parents=True)
    assert find_root(deep) == tmp_path.resolve()


def test_an_empty_openspec_dir_is_not_a_workspace(tmp_path: Path) -> None:
    (tmp_path / "openspec" / "specs").mkdir(parents=True)
    inner = tmp_path / "sub"
    (inner / "openspec").mkdir(parents=True)  # no specs/, changes/ or config: skipped
    assert find_root(inner) == tmp_path.resolve()


def test_nearest_workspace_wins(tmp_path: Path) -> None:
    (tmp_path / "openspec" / "specs").mkdir(parents=True)
    inner = tmp_path / "nested"
    (inner / "openspec" / "changes").mkdir(parents=True)
    assert find_root(inner / ".") == inner.resolve()


def test_no_workspace_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        find_root(tmp_path)
    assert caught.value.problems[0].code == "no_workspace"
    assert "--root" in (caught.value.problems[0].fix or "")
    assert caught.value.exit_code == 2


def test_root_override_needs_openspec_dir(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        find_root(override=tmp_path)
    assert caught.value.problems[0].code == "not_a_workspace"
    assert str(tmp_path) in caught.value.problems[0].message
    (tmp_path / "openspec").mkdir()
    assert find_root(Path("/"), override=tmp_path) == tmp_path.resolve()


def _changes(root: Path, *names: str) -> Path:
    changes = root / "openspec" / "changes"
    for name in names:
        (changes / name).mkdir(parents=True)
    changes.mkdir(parents=True, exist_ok=True)
    return changes


def test_changes_are_non_dot_dirs_except_archive(tmp_path: Path) -> None:
    changes = _changes(tmp_path, "b-change", "a-change", ".hidden", "archive")
    (changes / "notes.md").write_text("not a change")
    refs = list_changes(tmp_path)
    assert [r.id for r in refs] == ["a-change", "b-change"]
    assert not any(r.archived for r in refs)
    assert refs[0].path == changes / "a-change"


def test_archived_change_is_found_by_id(tmp_path: Path) -> None:
    changes = _changes(
        tmp_path, "archive/2024-03-01-old-one", "archive/2025-01-02-2024-12-31-dated"
    )
    ref = find_change(tmp_path, "old-one")
    assert ref.archived and ref.id == "old-one"
    assert ref.path == changes / "archive" / "2024-03-01-old-one"
    # an id that already started with a date keeps it
    assert find_change(tmp_path, "2024-12-31-dated").archived
    # the archive directory's own name works too
    assert find_change(tmp_path, "2024-03-01-old-one").path.name == "2024-03-01-old-one"
    assert {r.id for r in list_changes(tmp_path)} == {"old-one", "2024-12-31-dated"}


def test_unarchived_change_wins_over_archived(tmp_path: Path) -> None:
    changes = _changes(tmp_path, "greet", "archive/2024-03-01-greet")
    ref = find_change(tmp_path, "greet")
    assert not ref.archived
    assert ref.path == changes / "greet"
    assert [(r.id, r.archived) for r in list_changes(tmp_path)] == [("greet", False)]


def test_newest_archive_of_an_id_is_used(tmp_path: Path) -> None:
    _changes(tmp_path, "archive/2024-03-01-greet", "archive/2025-06-01-greet")
    assert find_change(tmp_path, "greet").path.name == "2025-06-01-greet"


def test_unknown_change_lists_existing_sorted(tmp_path: Path) -> None:
    _changes(tmp_path, "zeta", "alpha", "archive/2024-01-01-mid")
    with pytest.raises(ConfigError) as caught:
        find_change(tmp_path, "nope")
    problem = caught.value.problems[0]
    assert problem.code == "unknown_change"
    assert caught.value.exit_code == 2
    assert "alpha, mid (archived), zeta" in problem.message


@pytest.mark.parametrize("bad", [".", "..", "a/b", "a\\b", "a\x00b", ".hidden", "archive", ""])
def test_lookup_refuses_ids_that_could_leave_the_tree(tmp_path: Path, bad: str) -> None:
    _changes(tmp_path, "ok")
    with pytest.raises(ConfigError) as caught:
        find_change(tmp_path, bad)
    assert caught.value.problems[0].code == "invalid_change_id"
    assert caught.value.exit_code == 2


def test_loose_lookup_accepts_existing_odd_ids(tmp_path: Path) -> None:
    _changes(tmp_path, "CM_101 Upper")
    assert find_change(tmp_path, "CM_101 Upper").id == "CM_101 Upper"
