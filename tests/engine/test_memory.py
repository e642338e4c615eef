"""Project and task notes (SRV-12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadowcode.engine.memory import content_hash
from shadowcode.engine.state import EngineState
from shadowcode.engine.wire import to_json
from shadowcode.enums import PermissionLevel, TaskMode
from shadowcode.errors import ConflictError, NotFound, ToolError
from shadowcode.limits import MEMORY_NOTE_MAX_BYTES


@pytest.fixture
def root(state: EngineState, project_dir: Path) -> Path:
    return state.project_at(project_dir).path


def _task(state: EngineState, project: Path) -> str:
    state.projects.ensure(project)
    task = state.store.tasks.create(
        project=project,
        owner=None,
        mode=TaskMode.BUILD,
        prompt="p",
        permission_level=PermissionLevel.READ_ONLY,
        model=None,
        engine_id="eng_t",
    )
    return task.id


@pytest.mark.req("SRV-12")
def test_empty_note_reads_as_empty_with_the_empty_hash(state: EngineState, root: Path) -> None:
    note = state.memory.read(root)
    assert note.content == "" and note.hash == content_hash("")


@pytest.mark.req("SRV-12")
def test_append_then_read_returns_the_text(state: EngineState, root: Path) -> None:
    state.memory.append(root, "first")
    note = state.memory.append(root, "second")
    assert note.content == "first\n\nsecond"
    assert note.hash == content_hash("first\n\nsecond")


@pytest.mark.req("SRV-12")
def test_replace_with_a_stale_hash_is_refused_and_changes_nothing(state: EngineState, root: Path) -> None:
    stale = state.memory.append(root, "v1").hash
    state.memory.append(root, "v2")
    with pytest.raises(ConflictError, match="stale"):
        state.memory.replace(root, "mine", str(stale))
    assert state.memory.read(root).content == "v1\n\nv2"


@pytest.mark.req("SRV-12")
def test_replace_with_the_current_hash_replaces(state: EngineState, root: Path) -> None:
    current = state.memory.append(root, "v1").hash
    assert state.memory.replace(root, "new", str(current)).content == "new"


@pytest.mark.req("SRV-12")
def test_task_note_needs_an_existing_task_of_this_project(state: EngineState, root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    theirs = _task(state, other.resolve())
    with pytest.raises(NotFound):
        state.memory.append(root, "x", scope="task", task_id=theirs)
    with pytest.raises(NotFound):
        state.memory.read(root, scope="task", task_id="task_missing")
    mine = _task(state, root)
    assert state.memory.append(root, "ok", scope="task", task_id=mine).content == "ok"
    assert state.memory.read(root).content == ""


@pytest.mark.req("SRV-12")
def test_task_scope_without_task_id_is_refused(state: EngineState, root: Path) -> None:
    with pytest.raises(ToolError):
        state.memory.read(root, scope="task")


@pytest.mark.req("SRV-12")
def test_note_at_the_size_limit_is_accepted_and_one_byte_more_refused(state: EngineState, root: Path) -> None:
    h = state.memory.read(root).hash
    full = state.memory.replace(root, "a" * MEMORY_NOTE_MAX_BYTES, str(h))
    with pytest.raises(ToolError, match="limit"):
        state.memory.replace(root, "a" * (MEMORY_NOTE_MAX_BYTES + 1), str(full.hash))
    assert state.memory.read(root).hash == full.hash


@pytest.mark.req("SRV-12")
def test_a_note_as_json_keeps_its_keys_and_nulls(state: EngineState, root: Path) -> None:
    assert to_json(state.memory.read(root)) == {
        "scope": "project",
        "task_id": None,
        "content": "",
        "hash": content_hash(""),
        "updated_at": None,
    }
    mine = _task(state, root)
    note = state.memory.append(root, "ok", scope="task", task_id=mine)
    assert list(to_json(note)) == ["scope", "task_id", "content", "hash", "updated_at"]
    assert note.task_id == mine and note.updated_at is not None
