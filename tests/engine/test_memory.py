"""Project and task notes (SRV-12)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shadowcode.engine import Engine
from shadowcode.engine.memory import content_hash
from shadowcode.errors import ConflictError, NotFound, ToolError
from shadowcode.limits import MEMORY_NOTE_MAX_BYTES


@pytest.fixture
def root(engine: Engine, project_dir: Path) -> Path:
    return engine.project(project_dir).path


def _task(engine: Engine, project: Path, task_id: str) -> None:
    engine.projects.ensure(project)
    now = int(time.time())
    engine.store.execute(
        "INSERT INTO tasks (id, project, mode, status, prompt, created_at, updated_at) "
        "VALUES (?, ?, 'build', 'done', 'p', ?, ?)",
        (task_id, str(project), now, now),
    )


def test_empty_note_reads_as_empty_with_the_empty_hash_srv12(engine: Engine, root: Path) -> None:
    note = engine.memory.read(root)
    assert note["content"] == "" and note["hash"] == content_hash("")


def test_append_then_read_returns_the_text_srv12(engine: Engine, root: Path) -> None:
    engine.memory.append(root, "first")
    note = engine.memory.append(root, "second")
    assert note["content"] == "first\n\nsecond"
    assert note["hash"] == content_hash("first\n\nsecond")


def test_replace_with_a_stale_hash_is_refused_and_changes_nothing_srv12(engine: Engine, root: Path) -> None:
    stale = engine.memory.append(root, "v1")["hash"]
    engine.memory.append(root, "v2")
    with pytest.raises(ConflictError, match="stale"):
        engine.memory.replace(root, "mine", str(stale))
    assert engine.memory.read(root)["content"] == "v1\n\nv2"


def test_replace_with_the_current_hash_replaces_srv12(engine: Engine, root: Path) -> None:
    current = engine.memory.append(root, "v1")["hash"]
    assert engine.memory.replace(root, "new", str(current))["content"] == "new"


def test_task_note_needs_an_existing_task_of_this_project_srv12(engine: Engine, root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    _task(engine, other.resolve(), "task_other")
    with pytest.raises(NotFound):
        engine.memory.append(root, "x", scope="task", task_id="task_other")
    with pytest.raises(NotFound):
        engine.memory.read(root, scope="task", task_id="task_missing")
    _task(engine, root, "task_mine")
    assert engine.memory.append(root, "ok", scope="task", task_id="task_mine")["content"] == "ok"
    assert engine.memory.read(root)["content"] == ""


def test_task_scope_without_task_id_is_refused_srv12(engine: Engine, root: Path) -> None:
    with pytest.raises(ToolError):
        engine.memory.read(root, scope="task")


def test_note_at_the_size_limit_is_accepted_and_one_byte_more_refused_srv12(engine: Engine, root: Path) -> None:
    h = engine.memory.read(root)["hash"]
    full = engine.memory.replace(root, "a" * MEMORY_NOTE_MAX_BYTES, str(h))
    with pytest.raises(ToolError, match="limit"):
        engine.memory.replace(root, "a" * (MEMORY_NOTE_MAX_BYTES + 1), str(full["hash"]))
    assert engine.memory.read(root)["hash"] == full["hash"]
