"""Checkpoints before writes, conflict-checked rollback and its record (ENG-06, SRV-18, SRV-19)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from shadowcode.engine.api import RollbackResult
from shadowcode.engine.checkpoints import Checkpoints, content_sha256
from shadowcode.engine.state import EngineState
from shadowcode.errors import ConflictError, NotFound, ToolError
from shadowcode.limits import FILE_WRITE_MAX_BYTES
from shadowcode.project.files import replace_atomically


@pytest.fixture
def root(state: EngineState, project_dir: Path) -> Path:
    return state.project_at(project_dir).path


@pytest.fixture
def cps(state: EngineState) -> Checkpoints:
    return Checkpoints(state.store)


def _task(state: EngineState, project: Path, task_id: str) -> str:
    state.projects.ensure(project)
    now = int(time.time())
    state.store.execute(
        "INSERT INTO tasks (id, project, mode, status, prompt, created_at, updated_at) "
        "VALUES (?, ?, 'build', 'running', 'change things', ?, ?)",
        (task_id, str(project), now, now),
    )
    return task_id


def _write(cps: Checkpoints, root: Path, task_id: str, rel: str, data: bytes) -> None:
    cps.record_write(root, task_id, rel, data)
    replace_atomically(root / rel, data)


@pytest.mark.req("ENG-06")
def test_begin_creates_one_checkpoint_per_task(state: EngineState, root: Path, cps: Checkpoints) -> None:
    task = _task(state, root, "t1")
    first = cps.begin(root, task)
    assert first.startswith("cp_") and cps.begin(root, task) == first
    assert state.history.checkpoints(root, task)[0].id == first


@pytest.mark.req("ENG-06", "SRV-08")
def test_begin_for_a_task_of_another_project_is_not_found(
    state: EngineState, root: Path, cps: Checkpoints, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    _task(state, other.resolve(), "elsewhere")
    with pytest.raises(NotFound):
        cps.begin(root, "elsewhere")
    with pytest.raises(NotFound):
        cps.record_write(root, "elsewhere", "a.txt", b"x")


@pytest.mark.req("ENG-06")
def test_record_write_stores_the_old_content_before_the_file_changes(
    state: EngineState, root: Path, cps: Checkpoints
) -> None:
    task = _task(state, root, "t1")
    (root / "a.txt").write_bytes(b"old")
    cps.record_write(root, task, "a.txt", b"new")
    assert (root / "a.txt").read_bytes() == b"old"  # recording changes no file
    change = state.store.row("SELECT path, before_sha256, after_sha256, kind FROM changes")
    assert change == {
        "path": "a.txt",
        "before_sha256": content_sha256(b"old"),
        "after_sha256": content_sha256(b"new"),
        "kind": "write",
    }
    blob = state.store.row("SELECT data FROM blobs WHERE sha256 = ?", (content_sha256(b"old"),))
    assert blob is not None and bytes(blob["data"]) == b"old"


@pytest.mark.req("ENG-06")
def test_record_write_of_a_new_file_has_no_before_and_a_delete_has_no_after(
    state: EngineState, root: Path, cps: Checkpoints
) -> None:
    task = _task(state, root, "t1")
    cps.record_write(root, task, "new.txt", b"n")
    (root / "gone.txt").write_bytes(b"g")
    cps.record_write(root, task, "gone.txt", None)
    rows = state.store.rows("SELECT path, before_sha256, after_sha256 FROM changes ORDER BY id")
    assert rows[0] == {"path": "new.txt", "before_sha256": None, "after_sha256": content_sha256(b"n")}
    assert rows[1] == {"path": "gone.txt", "before_sha256": content_sha256(b"g"), "after_sha256": None}


@pytest.mark.req("ENG-06")
def test_identical_old_contents_share_one_blob(state: EngineState, root: Path, cps: Checkpoints) -> None:
    task = _task(state, root, "t1")
    for name in ("a.txt", "b.txt"):
        (root / name).write_bytes(b"same")
        cps.record_write(root, task, name, b"other")
    assert state.store.row("SELECT COUNT(*) AS n FROM blobs")["n"] == 1  # type: ignore[index]


@pytest.mark.req("ENG-06")
def test_record_write_refuses_git_outside_and_oversized_content(
    state: EngineState, root: Path, cps: Checkpoints
) -> None:
    task = _task(state, root, "t1")
    (root / ".git").mkdir()
    for rel in (".git/config", "../escape.txt", "."):
        with pytest.raises(ToolError):
            cps.record_write(root, task, rel, b"x")
    cps.record_write(root, task, "limit.bin", b"x" * FILE_WRITE_MAX_BYTES)
    with pytest.raises(ToolError, match="larger than"):
        cps.record_write(root, task, "over.bin", b"x" * (FILE_WRITE_MAX_BYTES + 1))
    (root / "big.bin").write_bytes(b"x" * (FILE_WRITE_MAX_BYTES + 1))
    with pytest.raises(ToolError, match="larger than"):
        cps.record_write(root, task, "big.bin", b"small")
    assert [r["path"] for r in state.store.rows("SELECT path FROM changes")] == ["limit.bin"]


@pytest.mark.req("ENG-06", "SRV-18")
def test_rollback_restores_each_path_to_its_content_before_the_task(
    state: EngineState, root: Path, cps: Checkpoints
) -> None:
    task = _task(state, root, "t1")
    (root / "a.txt").write_bytes(b"v0")
    _write(cps, root, task, "a.txt", b"v1")
    _write(cps, root, task, "a.txt", b"v2")
    result = cps.rollback(root, task)
    assert result == RollbackResult(task, ["a.txt"], [])
    assert (root / "a.txt").read_bytes() == b"v0"


@pytest.mark.req("ENG-06")
def test_rollback_removes_a_file_the_task_created(state: EngineState, root: Path, cps: Checkpoints) -> None:
    task = _task(state, root, "t1")
    _write(cps, root, task, "made.txt", b"new")
    assert cps.rollback(root, task) == RollbackResult(task, [], ["made.txt"])
    assert not (root / "made.txt").exists()


@pytest.mark.req("ENG-06")
def test_rollback_brings_back_a_file_the_task_deleted(state: EngineState, root: Path, cps: Checkpoints) -> None:
    task = _task(state, root, "t1")
    (root / "kept.txt").write_bytes(b"keep me")
    cps.record_write(root, task, "kept.txt", None)
    (root / "kept.txt").unlink()
    assert cps.rollback(root, task).restored == ["kept.txt"]
    assert (root / "kept.txt").read_bytes() == b"keep me"


@pytest.mark.req("ENG-06", "SRV-18")
def test_rollback_refuses_after_a_later_change_and_changes_nothing(
    state: EngineState, root: Path, cps: Checkpoints
) -> None:
    task = _task(state, root, "t1")
    (root / "a.txt").write_bytes(b"a0")
    _write(cps, root, task, "a.txt", b"a1")
    _write(cps, root, task, "b.txt", b"b1")
    (root / "b.txt").write_bytes(b"edited by someone else")
    changes_before = state.store.rows("SELECT * FROM changes ORDER BY id")
    with pytest.raises(ConflictError) as caught:
        cps.rollback(root, task)
    assert caught.value.fields["paths"] == ["b.txt"]
    assert (root / "a.txt").read_bytes() == b"a1"  # the clean path was not restored either
    assert (root / "b.txt").read_bytes() == b"edited by someone else"
    assert state.store.rows("SELECT * FROM changes ORDER BY id") == changes_before


@pytest.mark.req("ENG-06")
def test_rollback_counts_a_removed_or_recreated_file_as_a_conflict(
    state: EngineState, root: Path, cps: Checkpoints
) -> None:
    task = _task(state, root, "t1")
    _write(cps, root, task, "a.txt", b"a1")
    (root / "a.txt").unlink()
    with pytest.raises(ConflictError):
        cps.rollback(root, task)
    (root / "a.txt").mkdir()
    with pytest.raises(ConflictError):
        cps.rollback(root, task)


@pytest.mark.req("SRV-08", "SRV-18")
def test_rollback_of_a_task_of_another_project_is_not_found(
    state: EngineState, root: Path, cps: Checkpoints, tmp_path: Path
) -> None:
    other = (tmp_path / "other").resolve()
    other.mkdir()
    task = _task(state, other, "elsewhere")
    _write(cps, other, task, "x.txt", b"x")
    with pytest.raises(NotFound):
        cps.rollback(root, task)
    assert (other / "x.txt").read_bytes() == b"x"


@pytest.mark.req("ENG-06", "SRV-19")
def test_rollback_is_recorded_in_the_history_and_as_an_event(state: EngineState, root: Path, cps: Checkpoints) -> None:
    task = _task(state, root, "t1")
    (root / "a.txt").write_bytes(b"v0")
    _write(cps, root, task, "a.txt", b"v1")
    cps.rollback(root, task)
    rows = state.store.rows("SELECT kind, before_sha256, after_sha256 FROM changes WHERE path = 'a.txt' ORDER BY id")
    assert rows == [
        {"kind": "write", "before_sha256": content_sha256(b"v0"), "after_sha256": content_sha256(b"v1")},
        {"kind": "rollback", "before_sha256": content_sha256(b"v1"), "after_sha256": content_sha256(b"v0")},
    ]
    assert len(state.history.why(root, "a.txt")) == 2
    event = state.store.row("SELECT data FROM events WHERE task_id = ? AND kind = 'rollback'", (task,))
    assert event is not None and json.loads(event["data"])["restored"] == ["a.txt"]
    blob = state.store.row("SELECT data FROM blobs WHERE sha256 = ?", (content_sha256(b"v1"),))
    assert blob is not None  # the content the rollback replaced is kept too


@pytest.mark.req("ENG-06")
def test_a_second_rollback_finds_nothing_left_to_restore(state: EngineState, root: Path, cps: Checkpoints) -> None:
    task = _task(state, root, "t1")
    (root / "a.txt").write_bytes(b"v0")
    _write(cps, root, task, "a.txt", b"v1")
    cps.rollback(root, task)
    assert cps.rollback(root, task) == RollbackResult(task, [], [])
    assert (root / "a.txt").read_bytes() == b"v0"


@pytest.mark.req("ENG-06")
def test_rollback_of_one_task_leaves_another_tasks_paths_alone(
    state: EngineState, root: Path, cps: Checkpoints
) -> None:
    first, second = _task(state, root, "t1"), _task(state, root, "t2")
    _write(cps, root, first, "one.txt", b"1")
    _write(cps, root, second, "two.txt", b"2")
    assert cps.rollback(root, first).removed == ["one.txt"]
    assert (root / "two.txt").read_bytes() == b"2"


@pytest.mark.req("ENG-06")
def test_forget_write_drops_a_recorded_change_whose_write_failed(
    state: EngineState, root: Path, cps: Checkpoints
) -> None:
    task = _task(state, root, "t1")
    change = cps.record_write(root, task, "a.txt", b"x")
    cps.forget_write(change)
    assert state.store.rows("SELECT id FROM changes") == []
    assert cps.rollback(root, task) == RollbackResult(task, [], [])
