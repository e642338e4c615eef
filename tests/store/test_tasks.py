"""The tasks repository: task rows, their status moves and their event log (store/tasks.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from shadowcode.enums import PermissionLevel, TaskMode, TaskStatus
from shadowcode.errors import StoreError
from shadowcode.store import Store
from shadowcode.store.tasks import EventRecord, SessionRecord, TaskRecord

from .conftest import OTHER, PROJECT, NewTask

pytestmark = pytest.mark.req("ENG-03")


@pytest.mark.req("ENG-04", "SRV-15")
def test_a_created_task_is_queued_with_enum_fields_and_survives_a_reopen(
    store: Store, new_task: NewTask, db_path: Path
) -> None:
    task = new_task()
    assert task.id.startswith("task_") and task.project == PROJECT and task.owner == "own_a"
    assert task.status is TaskStatus.QUEUED and task.mode is TaskMode.BUILD
    assert task.permission_level is PermissionLevel.WORKSPACE
    assert (task.answer, task.error, task.finished_at) == (None, None, None)
    assert task.created_at == task.updated_at > 0
    store.close()
    reopened = Store(db_path)
    try:
        assert reopened.tasks.get(task.id) == task
    finally:
        reopened.close()


def test_a_record_is_frozen(new_task: NewTask) -> None:
    task = new_task()
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.status = TaskStatus.DONE  # type: ignore[misc]


def test_as_dict_has_the_columns_in_order_and_plain_strings(new_task: NewTask) -> None:
    doc = new_task().as_dict()
    assert list(doc) == [f.name for f in dataclasses.fields(TaskRecord)]
    assert list(doc)[:5] == ["id", "project", "owner", "mode", "status"]
    assert type(doc["status"]) is str and type(doc["mode"]) is str and type(doc["permission_level"]) is str
    assert json.loads(json.dumps(doc)) == doc


@pytest.mark.req("SRV-08")
def test_a_missing_task_or_one_of_another_project_is_none(store: Store, new_task: NewTask) -> None:
    task = new_task()
    assert store.tasks.get("task_missing") is None
    assert store.tasks.get(task.id, OTHER) is None
    assert store.tasks.get(task.id, PROJECT) == task
    assert store.tasks.exists(task.id, PROJECT) and not store.tasks.exists(task.id, OTHER)


@pytest.mark.req("SRV-16")
def test_an_unfinished_status_keeps_answer_and_finished_at_empty(store: Store, new_task: NewTask) -> None:
    task = new_task()
    store.tasks.set_status(task.id, TaskStatus.WAITING)
    waiting = store.tasks.get(task.id)
    assert waiting is not None and waiting.status is TaskStatus.WAITING and waiting.finished_at is None


@pytest.mark.req("SRV-16")
def test_a_finished_status_records_the_answer_and_when_and_keeps_an_earlier_error(
    store: Store, new_task: NewTask
) -> None:
    task = new_task()
    store.tasks.set_status(task.id, TaskStatus.FAILED, error="boom")
    store.tasks.set_status(task.id, TaskStatus.INTERRUPTED)
    done = store.tasks.get(task.id)
    assert done is not None and done.status is TaskStatus.INTERRUPTED
    assert done.error == "boom" and done.answer is None and done.finished_at is not None


def test_status_given_as_its_string_is_stored_as_the_enum(store: Store, new_task: NewTask) -> None:
    task = new_task()
    store.tasks.set_status(task.id, "done", answer="42")  # type: ignore[arg-type]
    done = store.tasks.get(task.id)
    assert done is not None and done.status is TaskStatus.DONE and done.answer == "42"


def test_an_unknown_stored_status_is_a_store_error(store: Store, new_task: NewTask) -> None:
    task = new_task()
    store.execute("UPDATE tasks SET status = 'lost' WHERE id = ?", (task.id,))
    with pytest.raises(StoreError, match="task status 'lost'"):
        store.tasks.get(task.id)


@pytest.mark.req("SRV-16")
def test_events_round_trip_their_json_data_in_id_order_and_page_by_cursor(store: Store, new_task: NewTask) -> None:
    task = new_task()
    first = store.tasks.add_event(task.id, "tool.call", {"name": "read_file", "arguments": {"path": "é.txt"}})
    second = store.tasks.add_event(task.id, "task.note", {"note": None, "n": [1, 2]}, at=7)
    events = store.tasks.events(task.id)
    assert [e.id for e in events] == [first, second]
    assert events[0].data == {"name": "read_file", "arguments": {"path": "é.txt"}}
    assert events[1] == EventRecord(id=second, kind="task.note", data={"note": None, "n": [1, 2]}, at=7)
    assert events[1].as_dict() == {"id": second, "kind": "task.note", "data": {"note": None, "n": [1, 2]}, "at": 7}
    assert store.tasks.events(task.id, after=first) == [events[1]]
    assert store.tasks.events(task.id, limit=1) == [events[0]]
    assert store.tasks.events("task_missing") == []


def test_an_event_whose_stored_data_is_not_json_is_a_store_error(store: Store, new_task: NewTask) -> None:
    task = new_task()
    store.execute("INSERT INTO events (task_id, kind, data, at) VALUES (?, 'x', '{broken', 0)", (task.id,))
    with pytest.raises(StoreError, match="event data"):
        store.tasks.events(task.id)


@pytest.mark.req("SRV-05")
def test_the_latest_event_of_a_kind_is_found_by_project(store: Store, new_task: NewTask) -> None:
    mine, theirs = new_task(), new_task(OTHER)
    assert store.tasks.latest_event(PROJECT, "plan") is None
    store.tasks.add_event(mine.id, "plan", {"plan": "old"})
    store.tasks.add_event(mine.id, "plan", {"plan": "new"})
    store.tasks.add_event(theirs.id, "plan", {"plan": "theirs"})
    latest = store.tasks.latest_event(PROJECT, "plan")
    assert latest is not None and latest.data == {"plan": "new"}


@pytest.mark.req("SRV-08", "SRV-16")
def test_listings_are_newest_first_by_owner_project_and_limit(store: Store, new_task: NewTask) -> None:
    a1 = new_task(owner="own_a")
    b1 = new_task(owner="own_b")
    a2 = new_task(owner="own_a")
    c1 = new_task(OTHER, owner=None)
    assert [t.id for t in store.tasks.for_owner("own_a")] == [a2.id, a1.id]
    assert [t.id for t in store.tasks.recent(limit=10)] == [c1.id, a2.id, b1.id, a1.id]
    assert [t.id for t in store.tasks.recent(limit=2, project=PROJECT)] == [a2.id, b1.id]
    sessions = store.tasks.sessions(PROJECT, 10)
    assert [s.id for s in sessions] == [a2.id, b1.id, a1.id]
    assert sessions[0] == SessionRecord(
        id=a2.id,
        mode=TaskMode.BUILD,
        status=TaskStatus.QUEUED,
        prompt="do it",
        owner="own_a",
        created_at=a2.created_at,
        updated_at=a2.updated_at,
    )
    assert list(sessions[0].as_dict()) == ["id", "mode", "status", "prompt", "owner", "created_at", "updated_at"]


def test_unfinished_lists_only_the_active_tasks_of_one_engine(store: Store, new_task: NewTask) -> None:
    running, done, elsewhere = new_task(), new_task(), new_task(engine_id="eng_b")
    store.tasks.set_status(running.id, TaskStatus.RUNNING)
    store.tasks.set_status(done.id, TaskStatus.DONE)
    assert store.tasks.unfinished("eng_a") == [running.id]
    assert store.tasks.unfinished("eng_b") == [elsewhere.id]
