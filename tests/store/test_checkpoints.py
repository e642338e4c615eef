"""The checkpoints repository: checkpoints, the change history and content blobs (store/checkpoints.py)."""

from __future__ import annotations

import hashlib

import pytest

from shadowcode.store import Store
from shadowcode.store.checkpoints import ChangeRecord, CheckpointSummary, TaskChange, WhyEntry

from .conftest import OTHER, PROJECT, NewTask

pytestmark = pytest.mark.req("ENG-03", "ENG-06")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_task_has_one_checkpoint_created_on_first_use(store: Store, new_task: NewTask) -> None:
    task = new_task()
    first = store.checkpoints.ensure_for_task(PROJECT, task.id)
    assert first.startswith("cp_")
    assert store.checkpoints.ensure_for_task(PROJECT, task.id) == first


def test_blobs_are_stored_once_by_hash_and_a_missing_one_is_none(store: Store) -> None:
    data = b"\x00old content\xff"
    store.checkpoints.put_blob(_sha(data), data)
    store.checkpoints.put_blob(_sha(data), data)
    assert store.checkpoints.blob(_sha(data)) == data
    assert store.checkpoints.blob(_sha(b"never")) is None
    assert store.row("SELECT COUNT(*) AS n FROM blobs")["n"] == 1  # type: ignore[index]


@pytest.mark.req("SRV-18", "SRV-19")
def test_changes_round_trip_in_every_view(store: Store, new_task: NewTask) -> None:
    task = new_task(prompt="edit a")
    cp = store.checkpoints.ensure_for_task(PROJECT, task.id)
    write = store.checkpoints.add_change(
        cp, project=PROJECT, task_id=task.id, path="a.txt", before_sha256=None, after_sha256="h1", kind="write", at=5
    )
    store.checkpoints.add_change(
        cp, project=PROJECT, task_id=task.id, path="a.txt", before_sha256="h1", after_sha256=None, kind="rollback", at=6
    )
    assert write > 0
    assert store.checkpoints.task_changes(PROJECT, task.id) == [
        TaskChange(checkpoint_id=cp, path="a.txt", before_sha256=None, after_sha256="h1"),
        TaskChange(checkpoint_id=cp, path="a.txt", before_sha256="h1", after_sha256=None),
    ]
    detail = store.checkpoints.get(PROJECT, cp)
    assert detail is not None and detail.task_id == task.id
    assert detail.changes == (
        ChangeRecord(path="a.txt", kind="write", before_sha256=None, after_sha256="h1", at=5),
        ChangeRecord(path="a.txt", kind="rollback", before_sha256="h1", after_sha256=None, at=6),
    )
    assert detail.as_dict() == {
        "id": cp,
        "task_id": task.id,
        "created_at": detail.created_at,
        "changes": [
            {"path": "a.txt", "kind": "write", "before_sha256": None, "after_sha256": "h1", "at": 5},
            {"path": "a.txt", "kind": "rollback", "before_sha256": "h1", "after_sha256": None, "at": 6},
        ],
    }
    assert store.checkpoints.list(PROJECT) == [
        CheckpointSummary(id=cp, task_id=task.id, created_at=detail.created_at, paths=("a.txt",))
    ]
    assert store.checkpoints.list(PROJECT)[0].as_dict()["paths"] == ["a.txt"]
    why = store.checkpoints.why(PROJECT, path="a.txt", limit=10)
    assert why[0] == WhyEntry(
        path="a.txt",
        kind="rollback",
        task_id=task.id,
        checkpoint_id=cp,
        before_sha256="h1",
        after_sha256=None,
        at=6,
        prompt="edit a",
    )
    assert [w.kind for w in why] == ["rollback", "write"]
    assert store.checkpoints.why(PROJECT, path="a.txt", limit=1) == why[:1]
    assert store.checkpoints.why(PROJECT, task_id="task_other", limit=10) == []


@pytest.mark.req("SRV-08", "SRV-18")
def test_another_projects_checkpoint_is_not_found_or_listed(store: Store, new_task: NewTask) -> None:
    theirs = new_task(OTHER)
    cp = store.checkpoints.ensure_for_task(OTHER, theirs.id)
    store.checkpoints.add_change(
        cp, project=OTHER, task_id=theirs.id, path="b.txt", before_sha256=None, after_sha256="h", kind="write"
    )
    assert store.checkpoints.get(PROJECT, cp) is None
    assert store.checkpoints.get(PROJECT, "cp_missing") is None
    assert store.checkpoints.list(PROJECT) == []
    assert store.checkpoints.why(PROJECT, limit=10) == []
    assert store.checkpoints.task_changes(PROJECT, theirs.id) == []


def test_list_filters_by_task_and_sorts_distinct_paths(store: Store, new_task: NewTask) -> None:
    one, two = new_task(), new_task()
    cp1 = store.checkpoints.ensure_for_task(PROJECT, one.id)
    cp2 = store.checkpoints.ensure_for_task(PROJECT, two.id)
    for path in ("z.txt", "a.txt", "z.txt"):
        store.checkpoints.add_change(
            cp1, project=PROJECT, task_id=one.id, path=path, before_sha256=None, after_sha256="h", kind="write"
        )
    assert [c.id for c in store.checkpoints.list(PROJECT)] == [cp2, cp1]
    (only,) = store.checkpoints.list(PROJECT, one.id)
    assert only.id == cp1 and only.paths == ("a.txt", "z.txt")


def test_deleting_a_failed_write_never_removes_a_rollback_row(store: Store, new_task: NewTask) -> None:
    task = new_task()
    cp = store.checkpoints.ensure_for_task(PROJECT, task.id)
    write = store.checkpoints.add_change(
        cp, project=PROJECT, task_id=task.id, path="a", before_sha256=None, after_sha256="h", kind="write"
    )
    rollback = store.checkpoints.add_change(
        cp, project=PROJECT, task_id=task.id, path="a", before_sha256="h", after_sha256=None, kind="rollback"
    )
    store.checkpoints.delete_write(write)
    store.checkpoints.delete_write(rollback)
    assert [c.after_sha256 for c in store.checkpoints.task_changes(PROJECT, task.id)] == [None]
