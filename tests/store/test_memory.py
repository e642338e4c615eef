"""The memory repository: one note per project and task, written whole (store/memory.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadowcode.store import Store
from shadowcode.store.memory import MemoryRecord

from .conftest import OTHER, PROJECT

pytestmark = pytest.mark.req("ENG-03", "SRV-12")


def test_a_note_never_written_is_none(store: Store) -> None:
    assert store.memory.get(PROJECT) is None
    assert store.memory.get(PROJECT, "task_x") is None


def test_put_then_get_round_trips_and_survives_a_reopen(store: Store, db_path: Path) -> None:
    store.memory.put(PROJECT, "", "first é", "h1")
    note = store.memory.get(PROJECT)
    assert isinstance(note, MemoryRecord)
    assert (note.project, note.task_id, note.content, note.hash) == (PROJECT, "", "first é", "h1")
    assert note.updated_at > 0
    store.close()
    reopened = Store(db_path)
    try:
        assert reopened.memory.get(PROJECT) == note
    finally:
        reopened.close()


def test_put_replaces_and_notes_are_kept_apart_by_project_and_task(store: Store) -> None:
    store.memory.put(PROJECT, "", "v1", "h1")
    store.memory.put(PROJECT, "", "v2", "h2")
    store.memory.put(PROJECT, "task_a", "task note", "h3")
    store.memory.put(OTHER, "", "theirs", "h4")
    assert store.memory.get(PROJECT).content == "v2"  # type: ignore[union-attr]
    assert store.memory.get(PROJECT, "task_a").content == "task note"  # type: ignore[union-attr]
    assert store.memory.get(OTHER).content == "theirs"  # type: ignore[union-attr]
